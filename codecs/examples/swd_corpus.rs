//! npuc's SWD encoder against every SWD weight stream of the Vela-compiled
//! models in `models/vela/{u85_256,u85_2048}` and `models/large/vela/u85_256`.
//!
//! `cargo run --release -p npuc-codecs --example swd_corpus [name filter]`
//! (`VERBOSE=1`: one line per stream).
//!
//! The command stream listing (`<model>.cmd.txt`) gives each kernel's
//! weight format and its `NPU_SET_WEIGHT{,1,2,3}_BASE` / `_LENGTH`; weights
//! that Vela stages into SRAM by DMA are traced back to their source
//! address. The weight buffer's offset inside `<model>_vela.tflite` is the
//! first offset at which a stream decodes to exactly its length; streams
//! that do not decode there are reported and skipped. Every stream is
//! decoded to its weights, re-encoded by npuc and checked to round-trip.

use npuc_codecs::swd::decode::{decode, decode_traced};
use npuc_codecs::swd::encode::encode;

/// The value after `key` in a listing line (`addr = 0x..`, `length = ..`,
/// `region = ..`).
fn field(line: &str, key: &str) -> Option<usize> {
    let rest = line.split(key).nth(1)?.trim();
    let token = rest.split(|c: char| c == ',' || c.is_whitespace()).next()?;
    match token.strip_prefix("0x") {
        Some(hex) => usize::from_str_radix(hex, 16).ok(),
        None => token.parse().ok(),
    }
}

/// (flash address, length) of every distinct SWD weight stream.
fn swd_streams(listing: &str) -> Vec<(usize, usize)> {
    const BASE: [&str; 4] = [
        "NPU_SET_WEIGHT_BASE ",
        "NPU_SET_WEIGHT1_BASE ",
        "NPU_SET_WEIGHT2_BASE ",
        "NPU_SET_WEIGHT3_BASE ",
    ];
    const LENGTH: [&str; 4] = [
        "NPU_SET_WEIGHT_LENGTH ",
        "NPU_SET_WEIGHT1_LENGTH ",
        "NPU_SET_WEIGHT2_LENGTH ",
        "NPU_SET_WEIGHT3_LENGTH ",
    ];
    let mut streams = Vec::new();
    let (mut swd, mut weight_region) = (true, None);
    let mut base = [None; 4];
    // DMA state and the copies made so far: (source, destination, length, region).
    let (mut src, mut dst, mut len, mut dst_region) = (0, 0, 0, None);
    let mut dmas: Vec<(usize, usize, usize, Option<usize>)> = Vec::new();
    for line in listing.lines() {
        if line.contains("NPU_SET_WEIGHT_FORMAT") {
            swd = line.contains("WEIGHT_FORMAT_SWD");
        } else if line.contains("NPU_SET_WEIGHT_REGION") {
            weight_region = field(line, "region = ");
        } else if line.contains("NPU_SET_DMA0_SRC ") {
            src = field(line, "addr = ").unwrap_or(0);
        } else if line.contains("NPU_SET_DMA0_DST ") {
            dst = field(line, "addr = ").unwrap_or(0);
        } else if line.contains("NPU_SET_DMA0_LEN ") {
            len = field(line, "addr = ").unwrap_or(0);
        } else if line.contains("NPU_SET_DMA0_DST_REGION") {
            dst_region = field(line, "region = ");
        } else if line.contains("NPU_OP_DMA_START") {
            dmas.push((src, dst, len, dst_region));
        }
        for k in 0..4 {
            if line.contains(BASE[k]) {
                base[k] = field(line, "addr = ");
            }
            if line.contains(LENGTH[k]) {
                let length = field(line, "length = ").unwrap_or(0);
                if let (true, true, Some(mut b)) = (swd, length > 0, base[k]) {
                    let staged = dmas
                        .iter()
                        .rev()
                        .find(|&&(_, d, l, r)| r == weight_region && d <= b && b < d + l);
                    if let Some(&(s, d, _, _)) = staged {
                        b = s + b - d;
                    }
                    if !streams.contains(&(b, length)) {
                        streams.push((b, length));
                    }
                }
            }
        }
    }
    streams
}

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let filter = std::env::args().nth(1);
    let verbose = std::env::var("VERBOSE").is_ok();
    let (mut total_npuc, mut total_vela, mut count) = (0usize, 0usize, 0usize);
    for dir in [
        "models/vela/u85_256",
        "models/vela/u85_2048",
        "models/large/vela/u85_256",
    ] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut models: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".cmd.txt").map(str::to_string)
            })
            .filter(|m| filter.as_ref().is_none_or(|f| m.contains(f.as_str())))
            .collect();
        models.sort();
        for model in models {
            let listing = std::fs::read_to_string(root.join(dir).join(format!("{model}.cmd.txt")))
                .expect("listing");
            let Ok(tflite) = std::fs::read(root.join(dir).join(format!("{model}_vela.tflite")))
            else {
                continue;
            };
            let mut streams = swd_streams(&listing);
            if streams.is_empty() {
                continue;
            }
            let decodes_at = |offset: usize, (base, len): (usize, usize)| {
                let Some(bytes) = tflite.get(offset + base..offset + base + len) else {
                    return false;
                };
                decode_traced(bytes, 1 << 24).is_ok_and(|t| t.end_bit == 8 * len as u64)
            };
            let offset = streams.iter().find_map(|&(base, len)| {
                (0..tflite.len().saturating_sub(base + len))
                    .step_by(4)
                    .find(|&o| decodes_at(o, (base, len)))
            });
            let Some(offset) = offset else {
                println!("{dir}/{model}: weight buffer not found");
                continue;
            };
            let before = streams.len();
            streams.retain(|&s| decodes_at(offset, s));
            if streams.len() < before {
                println!(
                    "{dir}/{model}: {} streams not found",
                    before - streams.len()
                );
            }
            let (mut npuc, mut vela) = (0, 0);
            for &(base, len) in &streams {
                let bytes = &tflite[offset + base..offset + base + len];
                let w = decode(bytes, 1 << 24).expect("checked above");
                let ours = encode(&w).expect("weights in range");
                assert_eq!(decode(&ours, w.len()).as_ref(), Ok(&w), "{model}");
                if verbose {
                    println!(
                        "    {:8} weights  npuc {:7}  Vela {:7}  {:.3}",
                        w.len(),
                        ours.len(),
                        len,
                        ours.len() as f64 / len as f64
                    );
                }
                npuc += ours.len();
                vela += len;
            }
            println!(
                "{:60} {:4} streams  npuc {:8}  Vela {:8}  ratio {:.4}",
                format!("{dir}/{model}"),
                streams.len(),
                npuc,
                vela,
                npuc as f64 / vela as f64
            );
            count += streams.len();
            total_npuc += npuc;
            total_vela += vela;
        }
    }
    println!(
        "total: {count} streams  npuc {total_npuc}  Vela {total_vela}  ratio {:.4}",
        total_npuc as f64 / total_vela.max(1) as f64
    );
}
