//! The layer map (`npuc::layers::attribute`, decision P22) against what the compiler itself
//! knows: the `Schedule` adds up the cost model's per-command estimates by the operation each
//! command was written for. Rebuilt from the stream and the schedule alone, the attribution
//! must give every operation the same kernel cycles and the same DMA cycles (the copy of the
//! constants at the start aside, which the schedule gives to no operation).

use npuc::compile::Options;
use npuc_backend::system::MemoryMap;
use std::collections::BTreeMap;
use std::path::Path;

fn check(model: &Path, options: &Options) -> Result<(), String> {
    let bytes = std::fs::read(model).unwrap();
    let Ok(m) = npuc::compile_file(&bytes, options) else {
        return Ok(()); // refused: nothing to attribute
    };
    let target = npuc::targets::reader(Some(m.accelerator));
    let owned = npuc::layers::attribute(target.as_ref(), &m.payload, &m.schedule)
        .ok_or("the stream does not match the schedule")?;
    let map = MemoryMap::new(&options.system_config, &options.memory_mode).unwrap();
    let report = npuc::vela_output::report(&[&m], &map).map_err(|e| e.to_string())?;
    let by_offset: BTreeMap<usize, &npuc::arch_interface::OpEstimate> = report
        .ops
        .iter()
        .map(|o| (o.estimate.offset, &o.estimate))
        .collect();
    let mut seen = 0;
    for (k, (op, commands)) in m.schedule.ops.iter().zip(&owned).enumerate() {
        let (mut kernel, mut dma) = (0u64, 0u64);
        for &c in commands {
            let p = by_offset[&(c as usize)];
            seen += 1;
            if p.dma {
                // The copy of the constants is the DMA of its bytes from its source range to
                // its destination range (a staging DMA may move as many bytes, from region 0
                // into the same region: efficientnet_se's 6,400 B on u85_2048).
                let constants = m.schedule.const_copy.as_ref().is_some_and(|t| {
                    let (from, to) = (usize::from(t.from.0), usize::from(t.to.0));
                    let (to, from) = (&p.regions[to], &p.regions[from]);
                    to.written == t.bytes
                        && from.read == t.bytes
                        && to.extent == t.to.1 + t.bytes
                        && from.extent == t.from.1 + t.bytes
                });
                if !constants {
                    dma += p.cycles;
                }
            } else {
                kernel += p.cycles;
            }
        }
        if op.kernel == "DMA" {
            continue;
        }
        let want_dma = op.dma.as_ref().map_or(0, |d| d.cycles);
        if kernel != op.cycles || dma != want_dma {
            return Err(format!(
                "op {k} ({}): kernel cycles {kernel} vs schedule {}, DMA cycles {dma} vs {want_dma}",
                op.name, op.cycles
            ));
        }
    }
    if seen != report.ops.len() {
        return Err(format!(
            "{seen} of {} commands attributed",
            report.ops.len()
        ));
    }
    Ok(())
}

fn sweep(models: &[&str], variants: &[(&str, &str, &str)]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
    let mut failures = Vec::new();
    for name in models {
        for &(acc, sys, mode) in variants {
            let options = Options::from_names(
                acc.parse().unwrap(),
                sys,
                mode,
                None,
                npuc::Optimise::Performance,
            )
            .unwrap();
            let path = root.join(name);
            if let Err(e) = check(&path, &options) {
                failures.push(format!("{name} {acc} {sys} {mode}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

const VARIANTS: [(&str, &str, &str); 3] = [
    (
        "ethos-u85-256",
        "Ethos_U85_SYS_DRAM_Mid",
        "Dedicated_Sram_384KB",
    ),
    (
        "ethos-u85-2048",
        "Ethos_U85_SYS_DRAM_Mid",
        "Dedicated_Sram_384KB",
    ),
    ("ethos-u85-256", "Ethos_U85_SYS_Flash_High", "Sram_Only"),
];

/// Networks with staging, slices, chaining, cascades, lookup tables and DMA operations.
#[test]
fn attribution_matches_the_schedule() {
    sweep(
        &[
            "tflite/ds_cnn.tflite",
            "tflite/resnet8.tflite",
            "tflite/mobilenet_tiny.tflite",
            "tflite/dense_autoencoder.tflite",
            "tflite/softmax.tflite",
            "tflite/gather_axis0.tflite",
            "tflite/unet_small.tflite",
            "tflite/mobilenet_v2_035_96.tflite",
            "tosa/mobilenet_tiny.tosa",
        ],
        &VARIANTS,
    );
}

/// Every corpus model (slow): `cargo test -p npuc --test layers_attribution -- --ignored`.
#[test]
#[ignore]
fn attribution_matches_the_schedule_on_the_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
    let mut names = Vec::new();
    for dir in ["tflite", "tosa", "large/tflite"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("tflite" | "tosa")
            ) {
                names.push(format!(
                    "{dir}/{}",
                    p.file_name().unwrap().to_str().unwrap()
                ));
            }
        }
    }
    names.sort();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    sweep(&refs, &VARIANTS);
}

/// A network whose lookup-table operations are chained into their multiplications.
#[test]
fn attribution_matches_the_schedule_with_chained_lookup_tables() {
    sweep(&["tflite/efficientnet_se.tflite"], &VARIANTS);
}
