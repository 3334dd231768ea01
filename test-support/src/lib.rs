//! Helpers shared by the test code of the npuc crates (a dev-dependency only; nothing in a
//! library or binary depends on it).
//!
//! * [`npy`]: the one `.npy` reader used for the fixtures and goldens under `models/`.
//! * [`Scratch`]: a test's scratch directory, removed when the test ends.

pub mod npy;

use std::path::{Path, PathBuf};

/// The repository's `models/` directory.
pub fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models")
}

/// A fresh, empty directory `npuc-NAME-PID-N` in the system's temporary directory for one
/// test (`N` counts the process's scratch directories, so that tests running at once never
/// share one), removed with everything in it when dropped (at the end of the test, passed or
/// failed).
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    /// Makes the directory (emptied if a crashed run left it behind).
    ///
    /// # Panics
    /// If it cannot be made.
    pub fn new(name: &str) -> Scratch {
        static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("npuc-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("making {}: {e}", d.display()));
        Scratch(d)
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
