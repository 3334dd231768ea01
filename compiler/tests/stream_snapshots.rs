//! File-driven snapshots of compiled streams.
//!
//! Each `streams/NAME.case` names a model (path relative to the repository root) and the
//! options to compile it with, one `key = value` per line: `model`, `accel`, `system-config`,
//! `memory-mode`, then optionally `arena-cache-size` (bytes of the memory mode's fast memory);
//! `#` starts a comment. The model is compiled whole onto the NPU, as `npuc compile -o OUT.bin`
//! does, and two reviewed snapshots are compared: its schedule (`NAME.schedule.snap`, the text
//! `npuc explain` prints) and the disassembly of its command stream (`NAME.disasm.snap`). A new
//! case: add the `.case` file, run the test, review the two new snapshots with
//! `cargo insta review` (never accept them unread).

use npuc::compile::Options;
use npuc_backend::system::presets;
use std::path::Path;

/// The options of a case file.
fn read_case(path: &Path) -> (String, Options) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut model = None;
    let mut options = Options::default();
    for line in text.lines() {
        let line = line.split('#').next().unwrap().trim();
        if line.is_empty() {
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("{}: not key = value: {line}", path.display()));
        let value = value.trim();
        match key.trim() {
            "model" => model = Some(value.to_string()),
            "accel" => options.accelerator = value.parse().unwrap(),
            "system-config" => options.system_config = presets::system_config(value).unwrap(),
            "memory-mode" => options.memory_mode = presets::memory_mode(value).unwrap(),
            // After memory-mode: the capacity of its fast memory in bytes.
            "arena-cache-size" => {
                options.memory_mode.arena_cache_size = Some(value.parse().unwrap())
            }
            k => panic!("{}: unknown key {k}", path.display()),
        }
    }
    let model = model.unwrap_or_else(|| panic!("{}: no model", path.display()));
    (model, options)
}

#[test]
fn streams() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    insta::glob!("streams/*.case", |path| {
        let (model, options) = read_case(path);
        let bytes = std::fs::read(root.join(&model)).unwrap();
        let m = npuc::compile_file(&bytes, &options).unwrap();
        let schedule = m.schedule.text();
        assert!(
            m.schedule.compute_bound <= m.schedule.total_cycles,
            "{}: compute bound {} above {} cycles",
            path.display(),
            m.schedule.compute_bound,
            m.schedule.total_cycles
        );
        let disasm = npuc::stream_text(&m).unwrap();
        let name = path.file_stem().unwrap().to_str().unwrap();
        insta::with_settings!({
            snapshot_path => "streams",
            prepend_module_to_snapshot => false,
            snapshot_suffix => "",
            omit_expression => true,
            description => model.clone(),
        }, {
            insta::assert_snapshot!(format!("{name}.schedule"), schedule);
            insta::assert_snapshot!(format!("{name}.disasm"), disasm);
        });
    });
}
