//! `npuc verify`: simulator against the reference interpreter on seeded random inputs, and the
//! localisation of the first diverging NPU operation when they disagree.

use npuc::compile::{compile, Options};
use npuc::verify::{verify_file, verify_graph, VerifyOptions};
use npuc_backend::isa::{decode_stream, encode_stream, Command, PoolingMode};

mod compile_common;

use compile_common::conv_then_pool;
use std::path::PathBuf;
use std::process::Command as Process;

fn models() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models")
}

#[test]
fn a_correct_compilation_is_bit_exact_on_every_sample() {
    let g = conv_then_pool();
    let m = compile(&g, &Options::default()).unwrap();
    let r = verify_graph(&g, &m, &VerifyOptions::default()).unwrap();
    assert!(r.is_bit_exact(), "{}", r.describe());
    assert_eq!(r.samples, 3);
    assert_eq!(r.bytes_compared, 3 * 4 * 4 * 8);
}

#[test]
fn a_corrupted_stream_is_caught_and_the_corrupted_operation_localised() {
    let g = conv_then_pool();
    let mut m = compile(&g, &Options::default()).unwrap();
    // Turn the max pool into a min pool: the convolution stays right, the pool goes wrong.
    let decoded = decode_stream(&m.payload.command_words().unwrap()).unwrap();
    let pool = decoded
        .iter()
        .find(|d| matches!(d.command, Command::OpPool(_)))
        .expect("an NPU_OP_POOL");
    let Command::OpPool(mut p) = pool.command else {
        unreachable!()
    };
    assert_eq!(p.pooling_mode, PoolingMode::Max);
    p.pooling_mode = PoolingMode::Min;
    let word = encode_stream(&[Command::OpPool(p)]).unwrap();
    let mut words = m.payload.command_words().unwrap();
    words[pool.offset / 4] = word[0];
    m.payload = npuc::payload::TargetPayload::u85_command_stream(&words);

    let r = verify_graph(&g, &m, &VerifyOptions::default()).unwrap();
    assert!(!r.is_bit_exact());
    assert_eq!(r.mismatches.len(), 3, "every sample differs");
    let d = r.divergence.as_ref().expect("localised");
    assert_eq!((d.index, d.name.as_str()), (1, "pool"));
    assert!(d.params.starts_with("Pool(Max)"), "{}", d.params);
    let text = r.describe();
    assert!(
        text.contains("first diverging NPU operation: #1 pool"),
        "{text}"
    );
}

#[test]
fn a_corpus_model_verifies_through_the_file_api() {
    let bytes = std::fs::read(models().join("tflite/conv2d_3x3_relu.tflite")).unwrap();
    let parts = verify_file(&bytes, &Options::default(), &VerifyOptions::default()).unwrap();
    assert_eq!(parts.len(), 1);
    assert!(
        parts[0].report.is_bit_exact(),
        "{}",
        parts[0].report.describe()
    );
}

#[test]
fn the_cli_exits_zero_only_when_bit_exact() {
    let model = models().join("tflite/conv2d_3x3_relu.tflite");
    let out = Process::new(env!("CARGO_BIN_EXE_npuc"))
        .args([
            "verify".as_ref(),
            model.as_os_str(),
            "--samples".as_ref(),
            "2".as_ref(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("bit-exact: 2 samples"), "{stdout}");
}

#[test]
fn a_divergence_in_a_sliced_operation_is_localised() {
    // mobilenet_v1_050_128_clustered on ethos-u85-256 runs some convolutions as OFM-depth
    // slices, each slice's streams copied by a DMA issued after KERNEL_WAIT 1. Corrupting the
    // scale stream one such DMA copies makes that operation (and everything after it) wrong:
    // the divergence is localised at the operation, compared after its last slice.
    let bytes =
        std::fs::read(models().join("tflite/mobilenet_v1_050_128_clustered.tflite")).unwrap();
    let options = Options::default();
    let g = npuc::reference::lower_file(&bytes).unwrap();
    let mut m = compile(&g, &options).unwrap();
    let decoded = decode_stream(&m.payload.command_words().unwrap()).unwrap();
    let k = decoded
        .windows(2)
        .position(|w| matches!(w[0].command, Command::OpKernelWait(k) if k.n == 1))
        .expect("a sliced operation");
    let (src, word) = decoded[k..]
        .iter()
        .find_map(|d| match d.command {
            Command::SetDma0Src(a) => Some((a.addr_lo as usize, d.offset / 4)),
            _ => None,
        })
        .unwrap();
    m.read_only[src] ^= 0x55;
    let sliced = m
        .operators
        .iter()
        .position(|o| o.done_at.is_some_and(|at| at > word))
        .unwrap();
    let r = verify_graph(
        &g,
        &m,
        &VerifyOptions {
            samples: 1,
            seed: 1,
        },
    )
    .unwrap();
    assert!(!r.is_bit_exact());
    let d = r.divergence.as_ref().expect("localised");
    assert_eq!(d.index, sliced, "{}", r.describe());
}
