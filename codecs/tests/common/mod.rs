//! Shared helpers for the codecs integration tests: fixture loading and the
//! golden cases of `models/fixtures/weights-u85-256`.
#![allow(dead_code)]

pub mod bits;
pub mod npy;
pub mod swd_ref;

use std::path::{Path, PathBuf};

use npuc_codecs::ordering::{
    IfmPrecision, KernelDecomposition, KernelDilation, MacsPerCc, Microblock, OhwiWeights,
    Operation, OrderingParams, WeightOrder, WeightShape, WeightSparsity,
};
use serde_json::Value;

/// Directory of the Vela golden weight streams for Ethos-U85-256.
pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/fixtures/weights-u85-256")
}

/// One golden case: a single-operator model compiled by Vela.
pub struct GoldenCase {
    /// Folder name.
    pub name: String,
    /// `SWD` or `FWD`.
    pub format: String,
    /// The ordering parameters (from params.json and cmd.txt facts).
    pub params: OrderingParams,
    /// The weights (zero point 0), depthwise as `[C][KH][KW][1]`.
    pub weights: OhwiWeights,
    /// `vela_stream{k}.bin`, k = 0..num_wd (FWD: one stream).
    pub streams: Vec<Vec<u8>>,
}

fn get<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.get(key)
        .unwrap_or_else(|| panic!("params.json: no {key}"))
}

fn as_u32(v: &Value) -> u32 {
    v.as_u64().expect("integer") as u32
}

/// Loads every case folder, sorted by name.
pub fn golden_cases() -> Vec<GoldenCase> {
    let mut names: Vec<String> = std::fs::read_dir(golden_dir())
        .expect("golden dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("params.json").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.iter().map(|n| load_case(n)).collect()
}

/// Loads one case folder.
pub fn load_case(name: &str) -> GoldenCase {
    let dir = golden_dir().join(name);
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("params.json")).unwrap()).unwrap();
    let kind = get(&json, "kind").as_str().unwrap().to_string();
    let op = &get(&json, "ops")[0];
    let op_params = get(op, "ordering_params");
    let format = get(op, "format").as_str().unwrap().to_string();
    let traversal = get(op_params, "traversal").as_str().unwrap();
    let ublock: Vec<u32> = get(op, "ofm_ublock")
        .as_array()
        .unwrap()
        .iter()
        .map(as_u32)
        .collect();
    let microblock = match (ublock[0], ublock[1]) {
        (1, 1) => Microblock::U1x1,
        (1, 2) => Microblock::U1x2,
        (1, 4) => Microblock::U1x4,
        (2, 2) => Microblock::U2x2,
        (2, 4) => Microblock::U2x4,
        (4, 4) => Microblock::U4x4,
        other => panic!("{name}: unknown microblock {other:?}"),
    };
    let pair = |key: &str| -> (u32, u32) {
        let a = get(op_params, key).as_array().unwrap();
        (as_u32(&a[0]), as_u32(&a[1]))
    };
    // params.json lists [y, x]; every golden case is symmetric.
    let (stride_y, stride_x) = pair("stride");
    let (dil_y, dil_x) = pair("dilation");
    let dilation = |d: u32| match d {
        1 => KernelDilation::None,
        2 => KernelDilation::X2,
        other => panic!("{name}: dilation {other}"),
    };
    let params = OrderingParams {
        operation: if kind == "depthwise" {
            Operation::Depthwise
        } else {
            Operation::Conv
        },
        weight_order: match traversal {
            "DepthFirst" => WeightOrder::DepthFirst,
            "PartKernel" | "Depthwise" => WeightOrder::PartKernelFirst,
            other => panic!("{name}: traversal {other}"),
        },
        ifm_precision: match as_u32(get(op_params, "ifm_bits")) {
            8 => IfmPrecision::B8,
            16 => IfmPrecision::B16,
            other => panic!("{name}: ifm_bits {other}"),
        },
        weight_sparsity: if get(op_params, "sparse").as_bool().unwrap() {
            WeightSparsity::Sparse24
        } else {
            WeightSparsity::None
        },
        stride_x,
        stride_y,
        dilation_x: dilation(dil_x),
        dilation_y: dilation(dil_y),
        // cmd.txt: every golden case uses KERNEL_DECOMPOSITION_D8X8.
        decomposition: KernelDecomposition::D8x8,
        ofm_block_depth: as_u32(get(op_params, "ofm_block_depth")),
        microblock,
        macs_per_cc: MacsPerCc::from_macs(as_u32(get(op_params, "macs"))).unwrap(),
    };
    assert_eq!(
        params.macs_per_cc.microblock_depth(microblock),
        Some(as_u32(get(op_params, "ofm_ublock_depth"))),
        "{name}: microblock depth"
    );

    let npy = npy::read_npy(&dir.join("weights.npy"));
    let values = npy.to_i16();
    let weights = if kind == "depthwise" {
        assert_eq!(npy.shape.len(), 4);
        assert_eq!(npy.shape[0], 1);
        OhwiWeights::from_depthwise_hwc(npy.shape[1], npy.shape[2], npy.shape[3], &values).unwrap()
    } else {
        let s = &npy.shape;
        let shape = match s.len() {
            2 => WeightShape {
                ofm_depth: s[0],
                kernel_height: 1,
                kernel_width: 1,
                ifm_depth: s[1],
            },
            4 => WeightShape {
                ofm_depth: s[0],
                kernel_height: s[1],
                kernel_width: s[2],
                ifm_depth: s[3],
            },
            _ => panic!("{name}: weights shape {s:?}"),
        };
        OhwiWeights::new(shape, values).unwrap()
    };
    let mut streams = Vec::new();
    for k in 0.. {
        match std::fs::read(dir.join(format!("vela_stream{k}.bin"))) {
            Ok(b) => streams.push(b),
            Err(_) => break,
        }
    }
    assert!(!streams.is_empty(), "{name}: no streams");
    GoldenCase {
        name: name.to_string(),
        format,
        params,
        weights,
        streams,
    }
}
