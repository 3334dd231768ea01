//! Helpers shared by the end-to-end tests.

#![allow(dead_code)]

pub mod conformance;
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

/// The number of `ethos-u` operators `models/corpus.json` records for a Vela compilation
/// (`config` is the directory under models/vela, e.g. `u85_256`).
pub fn expected_ethos_u_ops(config: &str, name: &str) -> usize {
    let corpus: serde_json::Value = serde_json::from_slice(
        &std::fs::read(models_dir().join("corpus.json")).expect("models/corpus.json"),
    )
    .expect("corpus.json is JSON");
    let model = corpus["models"]
        .as_array()
        .and_then(|a| a.iter().find(|m| m["name"] == name))
        .unwrap_or_else(|| panic!("{name} is not in models/corpus.json"));
    model["vela"][config]["ethos_u_ops"]
        .as_u64()
        .unwrap_or_else(|| panic!("corpus.json has no {config} entry for {name}")) as usize
}

/// Reads a Vela artifact, or `None` when corpus.json says Vela placed nothing on the NPU
/// (and the reader agrees).
pub fn read_vela_artifact(
    config: &str,
    name: &str,
    path: &Path,
) -> Option<npuc::artifact::Artifact> {
    let expected = expected_ethos_u_ops(config, name);
    match npuc::artifact::Artifact::read(path) {
        Ok(a) => {
            assert_eq!(
                a.streams.len(),
                expected,
                "{config}/{name}: ethos-u operators"
            );
            Some(a)
        }
        Err(npuc::artifact::ArtifactError::NoNpuOperators) if expected == 0 => None,
        Err(e) => panic!("{config}/{name}: {e}"),
    }
}

/// The system configuration and memory mode each models/vela directory was compiled with
/// (models/scripts/compile_vela.py).
pub fn memory_map(config: &str) -> npuc_backend::system::MemoryMap {
    let (sys, mode) = if config == "u85_256_sram_only" {
        ("Ethos_U85_SYS_Flash_High", "Sram_Only")
    } else {
        (
            npuc_backend::system::presets::DEFAULT_SYSTEM_CONFIG,
            npuc_backend::system::presets::DEFAULT_MEMORY_MODE,
        )
    };
    npuc_backend::system::MemoryMap::new(
        &npuc_backend::system::presets::system_config(sys).expect("preset"),
        &npuc_backend::system::presets::memory_mode(mode).expect("preset"),
    )
    .expect("consistent")
}
