//! The check-only validation (`sim::validate`, which checks every kernel operation's rules and
//! access extents without computing it) against the full simulation it stands for: on every
//! corpus model it proves the compiled stream valid without falling back, and on streams with
//! one register changed it accepts exactly what the full simulation accepts (and whatever it
//! refuses, `validate` then names with the full simulation's own error).

mod compile_common;

use compile_common::*;
use npuc::compile::{compile, region_sizes};
use npuc_backend::arch::Accelerator;
use npuc_backend::isa::{decode_stream, encode_stream, Command};
use npuc_backend::sim::validate::{validate, validate_check_only, validate_full};
use std::path::PathBuf;

fn corpus_graphs() -> Vec<(String, npuc_ir::Graph)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/tflite");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("models/tflite")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tflite"))
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in &paths {
        let bytes = std::fs::read(path).unwrap();
        let Ok(model) = npuc_frontend_tflite::TfliteModel::parse(&bytes) else {
            continue;
        };
        let Ok(lowered) = npuc_frontend_tflite::lower::lower(&model) else {
            continue;
        };
        if lowered.graph.num_ops() > 0 {
            let name = path.file_stem().unwrap().to_string_lossy().to_string();
            out.push((name, lowered.graph));
        }
    }
    out
}

#[test]
fn corpus_streams_are_proved_valid_without_the_full_simulation() {
    let mut checked = 0;
    for (name, g) in corpus_graphs() {
        for accel in [Accelerator::U85_128, Accelerator::U85_2048] {
            let Ok(m) = compile(&g, &options(accel)) else {
                continue;
            };
            let regions = region_sizes(&m);
            let fast = validate_check_only(
                accel,
                &m.payload.command_words().unwrap(),
                &regions,
                Some(&m.read_only),
            );
            let full = validate_full(
                accel,
                &m.payload.command_words().unwrap(),
                &regions,
                Some(&m.read_only),
            );
            assert!(full.is_ok(), "{name} on {accel}: {full:?}");
            let fast = fast.unwrap_or_else(|e| panic!("{name} on {accel}: {e}"));
            assert_eq!(fast.macs, full.unwrap().macs, "{name} on {accel}");
            checked += 1;
        }
    }
    assert!(checked > 200, "{checked} streams");
}

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// One register command's payload changed: a small or a large step of one of its words.
fn mutate(words: &[u32], rng: &mut Rng) -> Option<Vec<u32>> {
    let cmds: Vec<Command> = decode_stream(words)
        .ok()?
        .iter()
        .map(|d| d.command)
        .collect();
    let at = (rng.next() % cmds.len() as u64) as usize;
    mutate_at(&cmds, at, rng)
}

/// Command `at` of `cmds` changed as [`mutate`] changes one.
fn mutate_at(cmds: &[Command], at: usize, rng: &mut Rng) -> Option<Vec<u32>> {
    let mut encoded = encode_stream(&cmds[at..=at]).ok()?;
    let word = (rng.next() % encoded.len() as u64) as usize;
    let delta = match rng.next() % 4 {
        0 => 1u32 << 16,
        1 => 16u32 << 16,
        2 => (rng.next() as u32) & 0xffff_0000,
        _ => 1 + (rng.next() as u32 % 64),
    };
    if word == 0 {
        encoded[0] = encoded[0].wrapping_add(delta & 0xffff_0000);
    } else {
        encoded[word] = encoded[word].wrapping_add(delta.rotate_left(16));
    }
    let mut out = encode_stream(&cmds[..at]).ok()?;
    out.extend_from_slice(&encoded);
    out.extend_from_slice(&encode_stream(&cmds[at + 1..]).ok()?);
    Some(out)
}

#[test]
fn mutated_streams_get_the_verdict_and_error_of_the_full_simulation() {
    let mut rng = Rng(0x7a11_da7e);
    let mut compared = 0;
    let mut refused = 0;
    for (name, g) in corpus_graphs().into_iter().step_by(3) {
        let accel = Accelerator::U85_256;
        let Ok(m) = compile(&g, &options(accel)) else {
            continue;
        };
        let regions = region_sizes(&m);
        for _ in 0..12 {
            let Some(words) = mutate(&m.payload.command_words().unwrap(), &mut rng) else {
                continue;
            };
            let constants = Some(m.read_only.as_slice());
            let fast = validate_check_only(accel, &words, &regions, constants);
            let full = validate_full(accel, &words, &regions, constants);
            if fast.is_ok() {
                assert!(
                    full.is_ok(),
                    "{name}: check-only accepts, full refuses: {full:?}"
                );
            }
            let got = validate(accel, &words, &regions, constants)
                .map(|_| ())
                .map_err(|e| e.to_string());
            assert_eq!(got, full.map(|_| ()).map_err(|e| e.to_string()), "{name}");
            compared += 1;
            refused += usize::from(got.is_err());
        }
    }
    assert!(
        compared > 500 && refused > 50,
        "{compared} compared, {refused} refused"
    );
}

/// The commands whose next kernel operation is an ELEMENTWISE, POOL or RESIZE (which a
/// check-only run checks without computing since issue 14): its registers, and the operation
/// itself.
fn before_elementwise_pool_or_resize(cmds: &[Command]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut pending = Vec::new();
    for (i, c) in cmds.iter().enumerate() {
        pending.push(i);
        match c {
            Command::OpElementwise(_) | Command::OpPool(_) | Command::OpResize(_) => {
                out.append(&mut pending)
            }
            Command::OpConv(_) | Command::OpDepthwise(_) | Command::OpDmaStart(_) => {
                pending.clear()
            }
            _ => {}
        }
    }
    out
}

#[test]
fn streams_mutated_before_elementwise_pool_or_resize_get_the_full_simulations_verdict() {
    let mut rng = Rng(0xe1e_3e17);
    let (mut compared, mut refused, mut accepted) = (0, 0, 0);
    for (name, g) in corpus_graphs() {
        let accel = Accelerator::U85_256;
        let Ok(m) = compile(&g, &options(accel)) else {
            continue;
        };
        let words = m.payload.command_words().unwrap();
        let cmds: Vec<Command> = decode_stream(&words)
            .unwrap()
            .iter()
            .map(|d| d.command)
            .collect();
        let targets = before_elementwise_pool_or_resize(&cmds);
        if targets.is_empty() {
            continue;
        }
        let regions = region_sizes(&m);
        let constants = Some(m.read_only.as_slice());
        for _ in 0..16 {
            let at = targets[(rng.next() % targets.len() as u64) as usize];
            let Some(words) = mutate_at(&cmds, at, &mut rng) else {
                continue;
            };
            let fast = validate_check_only(accel, &words, &regions, constants);
            let full = validate_full(accel, &words, &regions, constants);
            if let Ok(fast) = &fast {
                let full = full.as_ref().unwrap_or_else(|e| {
                    panic!("{name}: command {at}: check-only accepts, full refuses: {e}")
                });
                assert_eq!(fast.macs, full.macs, "{name}: command {at}");
            }
            let got = validate(accel, &words, &regions, constants)
                .map(|_| ())
                .map_err(|e| e.to_string());
            assert_eq!(got, full.map(|_| ()).map_err(|e| e.to_string()), "{name}");
            compared += 1;
            refused += usize::from(got.is_err());
            accepted += usize::from(fast.is_ok());
        }
    }
    assert!(
        compared > 300 && refused > 50 && accepted > 50,
        "{compared} compared, {refused} refused, {accepted} accepted check-only"
    );
}

/// Weight and scale streams with bytes overwritten: a check-only run (which walks dense SWD
/// weight streams without making their values) accepts only what the full simulation
/// accepts, and `validate` then names the full simulation's error; some are refused.
#[test]
fn corrupted_streams_get_the_verdict_and_error_of_the_full_simulation() {
    let mut rng = Rng(0x5eed_f00d);
    let (mut compared, mut refused) = (0, 0);
    for (name, g) in corpus_graphs().into_iter().step_by(4) {
        let accel = Accelerator::U85_256;
        let Ok(m) = compile(&g, &options(accel)) else {
            continue;
        };
        if m.read_only.len() < 64 {
            continue;
        }
        let words = m.payload.command_words().unwrap();
        let regions = region_sizes(&m);
        for _ in 0..4 {
            let mut read_only = m.read_only.clone();
            let at = (rng.next() % (read_only.len() as u64 - 16)) as usize;
            read_only[at..at + 16].fill(0xff);
            let constants = Some(read_only.as_slice());
            let fast = validate_check_only(accel, &words, &regions, constants);
            let full = validate_full(accel, &words, &regions, constants);
            if let Ok(fast) = &fast {
                let full = full
                    .as_ref()
                    .unwrap_or_else(|e| panic!("{name}: check-only accepts, full refuses: {e}"));
                assert_eq!(fast.macs, full.macs, "{name}");
            }
            refused += usize::from(fast.is_err());
            let got = validate(accel, &words, &regions, constants)
                .map(|_| ())
                .map_err(|e| e.to_string());
            assert_eq!(got, full.map(|_| ()).map_err(|e| e.to_string()), "{name}");
            compared += 1;
        }
    }
    assert!(compared > 40, "{compared} streams compared");
    assert!(refused > 0, "no corrupted stream refused");
}
