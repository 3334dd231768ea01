//! Whole corpus networks — convolutions, residual ADDs, MEAN / large AVG_POOL heads, RESIZE,
//! CONCAT, LUT activations, fully connected layers, SQUARED_DIFFERENCE and the int8 SOFTMAX
//! head (i32 elementwise chains, the exp table as an s8_s32 LUT) — must compile and run
//! bit-exactly like the reference interpreter.
//!
//! CI runs every network on one configuration (ethos-u85-256, alternating Dedicated_Sram_384KB and
//! Sram_Only); the sweep over all five (each in its memory mode, `compile_common::options`) is
//! ignored for time: `cargo test -p npuc --test compile_networks -- --ignored`.

mod compile_common;

use compile_common::*;
use npuc::compile::{compile, Options};
use npuc_backend::arch::Accelerator;
use npuc_ir::Graph;
use std::path::PathBuf;

const NETWORKS: &[&str] = &[
    "mobilenet_tiny",
    "mobilenet_v1_025_96",
    "mobilenet_v1_050_128_clustered",
    "mobilenet_v2_035_96",
    "mobilenet_v2_050_128_pruned",
    "resnet8",
    "ds_cnn",
    "unet_small",
    "efficientnet_se",
    "transformer_encoder",
];

fn load(name: &str) -> Graph {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../models/tflite")
        .join(format!("{name}.tflite"));
    let bytes = std::fs::read(&path).unwrap();
    let model = npuc_frontend_tflite::TfliteModel::parse(&bytes).unwrap();
    npuc_frontend_tflite::lower::lower(&model).unwrap().graph
}

fn check_network(name: &str, configs: &[Options]) {
    let g = load(name);
    for options in configs {
        let accel = options.accelerator;
        let m = compile(&g, options).unwrap_or_else(|e| panic!("{name} on {accel}: {e}"));
        eprintln!(
            "{name} on {accel}: {} IR operators, {} NPU operations",
            g.num_ops(),
            m.operators.len()
        );
        let mut rng = Rng(0x0e7 ^ u64::from(accel.macs_per_cc()));
        for sample in 0..2 {
            let inputs = random_inputs(&g, &mut rng);
            let expected = npuc_ir::run_outputs(&g, inputs.clone()).unwrap();
            let bytes: Vec<Vec<u8>> = inputs.iter().map(|v| v.to_le_bytes()).collect();
            let got = simulate(&m, &bytes);
            let e = expected[0].to_le_bytes();
            if let Some(pos) = e.iter().zip(&got[0]).position(|(a, b)| a != b) {
                panic!(
                    "{name} on {accel}, sample {sample}: first mismatch at byte {pos}: expected {} got {}",
                    e[pos] as i8, got[0][pos] as i8
                );
            }
        }
    }
}

/// In CI every other network runs in Sram_Only (Flash_High) instead of the default
/// Dedicated_Sram_384KB (feature maps in region 2), so both kinds of memory mode are covered.
#[test]
fn whole_networks_on_u85_256() {
    for (i, name) in NETWORKS.iter().enumerate() {
        let options = if i % 2 == 0 {
            options(Accelerator::U85_256)
        } else {
            options_in(
                Accelerator::U85_256,
                "Ethos_U85_SYS_Flash_High",
                "Sram_Only",
            )
        };
        check_network(name, &[options]);
    }
}

#[test]
#[ignore = "all five configurations: cargo test -p npuc --test compile_networks -- --ignored"]
fn whole_networks_on_all_configurations() {
    for name in NETWORKS {
        let all: Vec<Options> = Accelerator::ALL.into_iter().map(options).collect();
        check_network(name, &all);
    }
}
