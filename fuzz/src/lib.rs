//! The bodies of the fuzz targets, one function per target. `fuzz_targets/<name>.rs` calls
//! `<name>(data)`; the main workspace's `tests/tests/fuzz_seeds.rs` includes this file and feeds
//! every committed seed (`fuzz/seeds/<name>/*`) to the same function, so the seeds run in
//! the normal test suite. Each function must return normally for any input: a panic is a bug.

use npuc_backend::arch::Accelerator;
use npuc_backend::isa::{decode_stream, encode_stream, words_from_bytes};
use npuc_backend::sim::Simulator;
use npuc_codecs::fwd::{decode_fwd, decode_fwd_stream, encode_fwd, FwdHeader};
use npuc_codecs::scale::{decode_scale_stream, encode_scale_stream, AccFormat, ScaleStreamParams};
use npuc_codecs::swd::decode::{decode, decode_traced, decoded_len};
use npuc_codecs::swd::encode::encode;
use npuc_frontend_tflite::TfliteModel;
use npuc_frontend_tosa::{lower, TosaModel};

/// The body of a fuzz target.
pub type Target = fn(&[u8]);

/// Every target: its name and its function.
pub const TARGETS: &[(&str, Target)] = &[
    ("tflite_parse", tflite_parse),
    ("tosa_parse", tosa_parse),
    ("swd_decode", swd_decode),
    ("fwd_decode", fwd_decode),
    ("scale_decode", scale_decode),
    ("swd_encode", swd_encode),
    ("isa_decode", isa_decode),
    ("cop_parse", cop_parse),
    ("sim_run", sim_run),
];

/// Arbitrary bytes through the TFLite reader: parsing and the Vela views must return `Ok` or
/// `Err`, never panic, overflow or hang.
pub fn tflite_parse(data: &[u8]) {
    let Ok(model) = TfliteModel::parse(data) else {
        return;
    };
    let _ = model.ethos_u_ops();
    let _ = model.vela();
    for sg in model.subgraphs() {
        for t in &sg.tensors {
            let _ = t.static_shape();
            let _ = t.byte_size();
            let _ = model.tensor_data(t);
        }
        for op in &sg.operators {
            let _ = op.opcode.name();
            let _ = op.builtin_options_type();
        }
    }
}

/// Arbitrary bytes through the TOSA reader and lowering: both must return `Ok` or `Err`,
/// never panic, overflow or hang. Bytes 4..8 are forced to `TOSA` half of the time so the
/// fuzzer spends its effort past the identifier check.
pub fn tosa_parse(data: &[u8]) {
    let mut bytes = data.to_vec();
    if bytes.len() >= 9 && bytes[0] & 1 == 1 {
        bytes[4..8].copy_from_slice(b"TOSA");
    }
    let Ok(model) = TosaModel::parse(&bytes) else {
        return;
    };
    for block in model.blocks() {
        for t in &block.tensors {
            let _ = t.num_elements();
            let _ = block.shape_value(&t.name);
        }
        for op in &block.operators {
            let _ = op.name();
        }
    }
    if let Ok(graph) = lower(&model) {
        let _ = npuc_ir::dump(&graph);
    }
}

/// Arbitrary bytes as an SWD weight stream (TRM §3.9.4-3.9.10): decoding never panics, never
/// yields more weights than allowed, and every value is in -255..=255. The first two bytes
/// set the weight cap; the rest is the stream.
pub fn swd_decode(data: &[u8]) {
    let (max_weights, stream) = match data {
        [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), rest),
        _ => (0, data),
    };
    let traced = decode_traced(stream, max_weights);
    // Validation's walk gives the decoder's verdict: its count, or its error.
    assert_eq!(
        decoded_len(stream, max_weights),
        traced
            .as_ref()
            .map(|d| d.weights.len())
            .map_err(Clone::clone)
    );
    if let Ok(d) = traced {
        assert!(d.weights.len() <= max_weights);
        assert!(d.weights.iter().all(|v| (-255..=255).contains(v)));
        assert_eq!(d.end_bit % 128, 0);
        assert!(d.end_bit <= stream.len() as u64 * 8);
        assert_eq!(
            d.slices.iter().map(|s| s.weight_count).sum::<usize>(),
            d.weights.len()
        );
    }
}

/// Arbitrary bytes as a FWD weight stream (TRM §3.9.11): decoding never panics, values are in
/// -255..=255, and whatever decodes re-encodes (in the same mode or a narrower one) to a
/// stream that decodes to the same weights. The first two bytes set the weight count.
pub fn fwd_decode(data: &[u8]) {
    let (count, stream) = match data {
        [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])), rest),
        _ => (0, data),
    };
    let _ = decode_fwd_stream(stream);
    if let Ok(w) = decode_fwd(stream, count) {
        assert_eq!(w.len(), count);
        assert!(w.iter().all(|v| (-255..=255).contains(v)));
        let mode = FwdHeader::parse(stream).unwrap().mode();
        let again = encode_fwd(&w).unwrap();
        assert!(again.len() <= stream.len());
        assert_eq!(decode_fwd(&again, count).unwrap(), w);
        let chosen = FwdHeader::parse(&again).unwrap().mode();
        assert!(chosen.bits_per_weight() <= mode.bits_per_weight());
    }
}

/// Arbitrary bytes as a scale and bias stream (TRM §3.7): decoding never panics, and whatever
/// decodes re-encodes to the same bytes. Byte 0 selects the accumulator format, microblock
/// depth and channel reverse, byte 1 the OFM depth; the rest is the stream.
pub fn scale_decode(data: &[u8]) {
    let (sel, depth, stream) = match data {
        [a, b, rest @ ..] => (*a, usize::from(*b), rest),
        _ => return,
    };
    let params = ScaleStreamParams {
        acc: if sel & 1 == 0 {
            AccFormat::I32
        } else {
            AccFormat::I48
        },
        microblock_depth: [8, 16, 32, 64, 128, 24, 0, 256][usize::from((sel >> 1) & 7)],
        reverse_c: sel & 16 != 0,
    };
    if let Ok(records) = decode_scale_stream(stream, depth, &params) {
        assert_eq!(records.len(), depth);
        assert_eq!(encode_scale_stream(&records, &params).unwrap(), stream);
    }
}

/// Arbitrary weights through the SWD encoder (TRM §3.9.3-3.9.10): every sequence of values
/// in -255..=255 encodes, and the decoder gives it back exactly. Two bytes per weight.
pub fn swd_encode(data: &[u8]) {
    let w: Vec<i16> = data
        .chunks_exact(2)
        .map(|c| {
            let v = i16::from_le_bytes([c[0], c[1]]);
            // Fold to -255..=255, biased towards small values and zeros.
            (v % 512).clamp(-255, 255) >> (c[1] >> 6)
        })
        .collect();
    let s = encode(&w).unwrap();
    assert_eq!(s.len() % 16, 0);
    assert_eq!(decode(&s, w.len()).unwrap(), w);
}

/// Arbitrary bytes as a command stream: decoding and disassembly never panic, and whatever
/// decodes re-encodes to the same words.
pub fn isa_decode(data: &[u8]) {
    let usable = &data[..data.len() / 4 * 4];
    let Ok(words) = words_from_bytes(usable) else {
        return;
    };
    let mut end = 0;
    for d in npuc_backend::isa::stream::StreamDecoder::new(&words) {
        let Ok(d) = d else { break };
        let _ = npuc_backend::isa::disasm::line(&d);
        end = d.offset / 4 + d.opcode().spec().kind.words();
    }
    if let Ok(cmds) = decode_stream(&words[..end]) {
        let typed: Vec<_> = cmds.iter().map(|d| d.command).collect();
        assert_eq!(encode_stream(&typed).unwrap(), words[..end]);
    }
}

/// Arbitrary bytes as an `ethos-u` payload (COP1/COP2): parsing never panics. Half of the
/// inputs are steered past the magic check.
pub fn cop_parse(data: &[u8]) {
    let mut bytes = data.to_vec();
    if let Some(first) = data.first() {
        let magic: &[u8] = if first & 1 == 0 { b"COP1" } else { b"COP2" };
        if first & 2 == 0 && bytes.len() >= 4 {
            bytes[..4].copy_from_slice(magic);
        }
    }
    let _ = npuc_backend::cop::parse_payload(&bytes);
}

/// Work budget of one `sim_run` input: small, so that the fuzzer runs many streams per second;
/// the point is that the budget, not the stream, decides how long a run takes.
pub const SIM_RUN_WORK_BUDGET: u64 = 1 << 20;

/// Arbitrary bytes as a command stream on the simulator (the first byte selects the
/// configuration, the rest are the words), with regions 0..2 of 4 KiB each, region 0 holding
/// the stream's own bytes: every run ends in `Ok` or a diagnostic, never a panic, a hang or an
/// allocation beyond the operation limits (issue 16 C1/C2).
pub fn sim_run(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let usable = &rest[..rest.len() / 4 * 4];
    let Ok(words) = words_from_bytes(usable) else {
        return;
    };
    let accelerator = [
        Accelerator::U85_128,
        Accelerator::U85_256,
        Accelerator::U85_512,
        Accelerator::U85_1024,
        Accelerator::U85_2048,
    ][usize::from(sel) % 5];
    let mut sim = Simulator::new(accelerator);
    sim.set_work_budget(SIM_RUN_WORK_BUDGET);
    sim.set_step_budget(1 << 16);
    let mut ro = usable.to_vec();
    ro.resize(4096, 0);
    let mem = sim.memory_mut();
    mem.add_region(0, ro);
    mem.add_region(1, vec![0; 4096]);
    mem.add_region(2, vec![0; 4096]);
    let _ = sim.run(&words);
}
