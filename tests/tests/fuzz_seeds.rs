//! Every committed fuzz seed (`fuzz/seeds/<target>/*`), and every crash the campaigns found
//! and fixed, through the same function as its fuzz target (`fuzz/src/lib.rs`): the fuzz
//! corpus is part of the normal test suite. See fuzz/README.md.

#[allow(dead_code)]
#[path = "../../fuzz/src/lib.rs"]
mod entries;

use std::path::PathBuf;

#[test]
fn every_seed_runs_through_its_target() {
    let seeds = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds");
    let mut total = 0;
    for (name, target) in entries::TARGETS {
        let dir = seeds.join(name);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no seeds for {name}");
        for f in files {
            let data = std::fs::read(&f).unwrap();
            let run = std::panic::catch_unwind(|| target(&data));
            assert!(run.is_ok(), "{name}: {} panics", f.display());
            total += 1;
        }
    }
    assert!(total >= entries::TARGETS.len());
}
