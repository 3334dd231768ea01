//! Helpers shared by the end-to-end tests.

#![allow(dead_code)]

pub mod vela_listing;

use std::path::{Path, PathBuf};

/// The repository's `models/` directory.
pub fn models_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models")
}

/// Every `models/vela/<config>/<name>_vela.tflite`, sorted, as (config dir, name, path).
pub fn vela_artifacts() -> Vec<(String, String, PathBuf)> {
    let mut out = Vec::new();
    let root = models_dir().join("vela");
    let Ok(configs) = std::fs::read_dir(&root) else {
        return out;
    };
    for config in configs.flatten() {
        let Ok(files) = std::fs::read_dir(config.path()) else {
            continue;
        };
        for f in files.flatten() {
            let file_name = f.file_name().to_string_lossy().to_string();
            if let Some(name) = file_name.strip_suffix("_vela.tflite") {
                out.push((
                    config.file_name().to_string_lossy().to_string(),
                    name.to_string(),
                    f.path(),
                ));
            }
        }
    }
    out.sort();
    out
}
