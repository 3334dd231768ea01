//! Golden test for the scale and bias stream (TRM §3.7): for every case of
//! `models/fixtures/weights-u85-256`, encoding `bias.npy` and the real scales
//! `ifm_scale * w_scale / ofm_scale` (w_scale from `scale_f.npy`, computed in
//! double precision from float32 parameters) with the quantized multiplier rule
//! reproduces Vela's `vela_scales.bin` byte for byte, and decoding
//! `vela_scales.bin` gives the same records.

mod common;

use npuc_codecs::scale::{
    decode_scale_stream, encode_scale_stream, AccFormat, ChannelScale, QuantizedScale,
    ScaleStreamParams,
};
use serde_json::Value;

struct ScaleCase {
    name: String,
    params: ScaleStreamParams,
    biases: Vec<i64>,
    scales: Vec<f64>,
    vela: Vec<u8>,
}

fn load(name: &str) -> ScaleCase {
    let dir = common::golden_dir().join(name);
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("params.json")).unwrap()).unwrap();
    let op = &json["ops"][0];
    let acc = match op["acc"].as_str().unwrap() {
        "Acc32" => AccFormat::I32,
        "Acc48" => AccFormat::I48,
        other => panic!("{name}: acc {other}"),
    };
    let microblock_depth = op["ofm_ublock"][2].as_u64().unwrap() as u32;
    let biases = read_int_npy(&dir.join("bias.npy"));
    // scale_f.npy holds the per-channel *weight* scales (float32); the real
    // scale is double(ifm_scale) * double(w_scale) / double(ofm_scale), the
    // quantization parameters being float32 as stored in the TFLite model.
    let quant = |key: &str| f64::from(json[key][0].as_f64().unwrap() as f32);
    let (ifm_scale, ofm_scale) = (quant("ifm_quant"), quant("ofm_quant"));
    let scales = common::npy::read_npy(&dir.join("scale_f.npy"))
        .data
        .iter()
        .map(|&w| ifm_scale * w / ofm_scale)
        .collect();
    ScaleCase {
        name: name.to_string(),
        params: ScaleStreamParams {
            acc,
            microblock_depth,
            reverse_c: false,
        },
        biases,
        scales,
        vela: std::fs::read(dir.join("vela_scales.bin")).unwrap(),
    }
}

/// Reads an integer `.npy` vector exactly.
fn read_int_npy(path: &std::path::Path) -> Vec<i64> {
    common::npy::read_npy(path).to_i64()
}

fn cases() -> Vec<ScaleCase> {
    let mut names: Vec<String> = std::fs::read_dir(common::golden_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("vela_scales.bin").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.iter().map(|n| load(n)).collect()
}

fn records(case: &ScaleCase) -> Vec<ChannelScale> {
    case.biases
        .iter()
        .zip(&case.scales)
        .map(|(&b, &s)| {
            ChannelScale::new(b, QuantizedScale::from_real(s, case.params.acc).unwrap())
        })
        .collect()
}

#[test]
fn encoding_bias_and_real_scales_reproduces_every_vela_scale_stream() {
    let cases = cases();
    assert_eq!(cases.len(), 16);
    for case in &cases {
        let ours = encode_scale_stream(&records(case), &case.params).unwrap();
        assert_eq!(ours.len(), case.vela.len(), "{}: length", case.name);
        if let Some(i) = ours.iter().zip(&case.vela).position(|(a, b)| a != b) {
            panic!(
                "{}: first byte difference at offset {i} (channel {}): ours {:#04x}, Vela {:#04x}",
                case.name,
                i / 10,
                ours[i],
                case.vela[i]
            );
        }
    }
}

#[test]
fn decoding_every_vela_scale_stream_gives_the_bias_and_quantized_scales() {
    for case in &cases() {
        let decoded = decode_scale_stream(&case.vela, case.biases.len(), &case.params).unwrap();
        assert_eq!(decoded, records(case), "{}", case.name);
        // Every decoded record describes (within its precision) the real scale.
        for (r, &s) in decoded.iter().zip(&case.scales) {
            let q = QuantizedScale {
                scale: r.scale,
                shift: r.shift,
            };
            let rel = (q.to_real() - s).abs() / s;
            let bound = match case.params.acc {
                AccFormat::I32 => 1e-9,
                AccFormat::I48 => 1e-4,
            };
            assert!(rel < bound, "{}: {} vs {s}", case.name, q.to_real());
        }
    }
}

#[test]
fn set_size_padding_matches_vela() {
    // conv3x3_c48_o40: 40 channels, microblock depth 8 -> sets of 16 ->
    // 48 records, the last 8 zero.
    let case = load("conv3x3_c48_o40");
    assert_eq!(case.params.channels_in_set().unwrap(), 16);
    assert_eq!(case.vela.len(), 48 * 10);
    assert!(case.vela[400..].iter().all(|&b| b == 0));
}
