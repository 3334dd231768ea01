//! Helpers shared by the test code of the npuc crates (a dev-dependency only; nothing in a
//! library or binary depends on it).
//!
//! * [`npy`]: the one `.npy` reader used for the fixtures and goldens under `models/`.

pub mod npy;

use std::path::PathBuf;

/// The repository's `models/` directory.
pub fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models")
}
