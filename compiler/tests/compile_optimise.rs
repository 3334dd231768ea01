//! The global choice of every operation's streams and staging (decision S13): on the fully
//! connected autoencoder, where the per-operation greedy contradicted itself (optimising for
//! performance gave a worse objective than optimising for size), the optimised schedule is
//! no worse than either goal, and bit-exact.

mod compile_common;

use compile_common::*;
use npuc::compile::{compile, Optimise, Options};
use npuc::CompiledModel;
use npuc_backend::arch::Accelerator;
use std::path::PathBuf;

/// (cycles, off-chip bytes) of a compiled model: the stream estimate's total and the bytes
/// its kernels and DMAs move to and from memories other than the SRAM.
fn figures(m: &CompiledModel) -> (u64, u64) {
    let offchip = m
        .schedule
        .ops
        .iter()
        .flat_map(|o| o.memory.iter().chain(o.dma.iter().flat_map(|d| &d.memory)))
        .filter(|b| b.memory != "Sram")
        .map(|b| b.read + b.written)
        .sum();
    (m.schedule.total_cycles, offchip)
}

#[test]
fn the_fc_autoencoder_schedule_is_no_worse_than_optimising_for_size() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/tflite/dense_autoencoder.tflite");
    let bytes = std::fs::read(&path).unwrap();
    let model = npuc_frontend_tflite::TfliteModel::parse(&bytes).unwrap();
    let g = npuc_frontend_tflite::lower::lower(&model).unwrap().graph;
    for accel in [
        Accelerator::U85_128,
        Accelerator::U85_256,
        Accelerator::U85_512,
        Accelerator::U85_1024,
        Accelerator::U85_2048,
    ] {
        let fast = Options {
            accelerator: accel,
            ..Options::default()
        };
        let small = Options {
            optimise: Optimise::Size,
            ..fast.clone()
        };
        let m = compile(&g, &fast).unwrap();
        let s = compile(&g, &small).unwrap();
        let (mc, mb) = figures(&m);
        let (sc, sb) = figures(&s);
        // The objective (S11: a cycle per off-chip byte) is no worse than size's, and on
        // U85-2048 (where the greedy staged an FWD stream that cost more DRAM bytes than it
        // saved cycles: 44,471 cycles + 249,792 B against size's 44,552 + 248,704) neither
        // figure is.
        assert!(mc + mb <= sc + sb, "{accel}: {mc} + {mb} > {sc} + {sb}");
        if accel == Accelerator::U85_2048 {
            assert!(
                mc <= sc && mb <= sb,
                "{accel}: ({mc}, {mb}) against ({sc}, {sb})"
            );
        }
        let mut rng = Rng(0x5e13 ^ u64::from(accel.macs_per_cc()));
        let inputs = random_inputs(&g, &mut rng);
        let want = npuc_ir::run_outputs(&g, inputs.clone()).unwrap();
        let input_bytes: Vec<Vec<u8>> = inputs.iter().map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            simulate(&m, &input_bytes)[0],
            want[0].to_le_bytes(),
            "{accel}"
        );
        assert_eq!(
            simulate(&s, &input_bytes)[0],
            want[0].to_le_bytes(),
            "{accel}"
        );
    }
}

#[test]
fn explain_shows_each_choice_and_the_next_best() {
    // Every operation with streams in a Dedicated_Sram mode weighs its options; the choice's
    // objective is never above the next best's when nothing forced it (the memory is ample).
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/tflite/dense_autoencoder.tflite");
    let bytes = std::fs::read(&path).unwrap();
    let options = Options {
        accelerator: Accelerator::U85_2048,
        ..Options::default()
    };
    let m = npuc::compile_file(&bytes, &options).unwrap();
    let text = m.schedule.text();
    assert_eq!(
        text.matches("  choice   ").count(),
        m.schedule.ops.len(),
        "{text}"
    );
    assert!(text.contains("; next "));
}
