//! Randomized sweep of the convolution family through the TFLite frontend and the compiler:
//! CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV, MAX_POOL_2D, AVERAGE_POOL_2D
//! and BATCH_MATMUL over int8 / 16x8, per-tensor / per-channel weights, every fused
//! activation, SAME / VALID, strides, dilations, kernels beyond the hardware's, batches and
//! broadcast batches, and pairs of window operators in a row (`sweep_common::conv`). Every
//! model is compiled for all five configurations in three memory modes (`Dedicated_Sram_384KB`,
//! `Sram_Only`, `Shared_Sram`) and must reproduce the
//! reference interpreter bit for bit; a model Vela 5.2 accepts must compile.
//!
//! The default run checks a few fixed seeds per family (seconds). The larger sweep:
//!
//!     cargo test --release -p npuc --test sweep_conv -- --ignored
//!
//! (`SWEEP_SEED=N` starts it elsewhere, `SWEEP_N=N` sets the models per family,
//! `SWEEP_FAMILY=conv` restricts it to families whose name contains the text,
//! `SWEEP_SIZE=small` keeps the shapes small, `SWEEP_VERBOSE=1` prints every model.)

mod sweep_common;

use sweep_common::conv::{model, Family, Size, FAMILIES};
use sweep_common::{all_targets, assert_clean, run_sweep, Rng, Tally};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn family_models(
    f: Family,
    seed: u64,
    n: usize,
    size: Size,
) -> impl Iterator<Item = sweep_common::Model> {
    let mut rng = Rng(seed ^ 0x9e37_79b9_7f4a_7c15);
    (0..n).map(move |_| model(f, &mut rng, size))
}

fn small(f: Family) {
    let name = format!("{f:?}");
    let tally = run_sweep(
        &name,
        family_models(f, 1 + f as u64, 10, Size::Small),
        &all_targets(),
    );
    assert_clean(&name, &tally);
}

#[test]
fn conv2d_small() {
    small(Family::Conv);
}

#[test]
fn depthwise_small() {
    small(Family::Depthwise);
}

#[test]
fn fully_connected_small() {
    small(Family::FullyConnected);
}

#[test]
fn transpose_conv_small() {
    small(Family::TransposeConv);
}

#[test]
fn max_pool_small() {
    small(Family::MaxPool);
}

#[test]
fn avg_pool_small() {
    small(Family::AvgPool);
}

#[test]
fn batch_matmul_small() {
    small(Family::BatchMatMul);
}

#[test]
fn pairs_small() {
    small(Family::Pair);
}

#[test]
#[ignore = "slow: the large randomized sweep (run with --release -- --ignored)"]
fn sweep_large() {
    let seed = env_u64("SWEEP_SEED", 1000);
    let n = env_u64("SWEEP_N", 40) as usize;
    let filter = std::env::var("SWEEP_FAMILY")
        .unwrap_or_default()
        .to_lowercase();
    let targets = all_targets();
    let mut tally = Tally::default();
    for f in FAMILIES {
        if !format!("{f:?}").to_lowercase().contains(&filter) {
            continue;
        }
        let size = if std::env::var("SWEEP_SIZE").is_ok_and(|s| s == "small") {
            Size::Small
        } else {
            Size::Large
        };
        tally.merge(run_sweep(
            &format!("{f:?}"),
            family_models(f, seed + f as u64, n, size),
            &targets,
        ));
    }
    assert_clean("sweep", &tally);
}
