//! Helpers for the simulator tests: typed command streams and small tensors.
#![allow(dead_code)]

use npuc_backend::arch::Accelerator;
use npuc_backend::isa::*;
use npuc_backend::sim::{BufferId, RunReport, SimError, Simulator};

/// Encodes commands, appending NPU_OP_STOP.
pub fn stream(cmds: &[Command]) -> Vec<u32> {
    let mut c = cmds.to_vec();
    c.push(Command::OpStop(OpStop { mask: 0xffff }));
    encode_stream(&c).unwrap()
}

/// A 40-bit address command payload.
pub fn a(lo: u32) -> (u8, u32) {
    (0, lo)
}

/// A simulator with region 1 = `bytes` (returned id) and region 0 = 256 zero bytes.
pub fn sim_with(bytes: Vec<u8>) -> (Simulator, BufferId) {
    let mut s = Simulator::new(Accelerator::U85_256);
    let id = s.memory_mut().add_region(1, bytes);
    s.memory_mut().add_region(0, vec![0; 256]);
    (s, id)
}

/// Runs and returns the report or error.
pub fn run(s: &mut Simulator, cmds: &[Command]) -> Result<RunReport, SimError> {
    s.run(&stream(cmds))
}

/// Commands describing an NHWC int8 tensor in region 1 for IFM, IFM2 or OFM.
pub fn fm_cmds(
    which: &str,
    base: u32,
    h: u16,
    w: u16,
    c: u16,
    signed: bool,
    prec: ActivationPrecision,
) -> Vec<Command> {
    let es = match prec {
        ActivationPrecision::B8 => 1,
        ActivationPrecision::B16 => 2,
        ActivationPrecision::B32 => 4,
        ActivationPrecision::B64 => 8,
    };
    let t = if signed {
        ActivationType::Signed
    } else {
        ActivationType::Unsigned
    };
    let sx = u32::from(c) * es;
    let sy = sx * u32::from(w);
    match which {
        "ifm" => vec![
            Command::SetIfmPrecision(SetIfmPrecision {
                activation_type: t,
                activation_precision: prec,
                activation_format: ActivationFormat::Nhwc,
                activation_storage: ActivationStorage::Tile2x2,
            }),
            Command::SetIfmRegion(SetIfmRegion { region: 1 }),
            Command::SetIfmBase0(SetIfmBase0 {
                addr_hi: 0,
                addr_lo: base,
            }),
            Command::SetIfmStrideX(SetIfmStrideX {
                addr_hi: 0,
                addr_lo: sx,
            }),
            Command::SetIfmStrideY(SetIfmStrideY {
                addr_hi: 0,
                addr_lo: sy,
            }),
            Command::SetIfmWidth0M1(SetIfmWidth0M1 { width_m1: w - 1 }),
            Command::SetIfmHeight0M1(SetIfmHeight0M1 { height_m1: h - 1 }),
            Command::SetIfmHeight1M1(SetIfmHeight1M1 { height_m1: h - 1 }),
            Command::SetIfmDepthM1(SetIfmDepthM1 { depth_m1: c - 1 }),
        ],
        "ifm2" => vec![
            Command::SetIfm2Precision(SetIfm2Precision {
                activation_type: t,
                activation_precision: prec,
                activation_format: ActivationFormat::Nhwc,
                activation_storage: ActivationStorage::Tile2x2,
            }),
            Command::SetIfm2Region(SetIfm2Region { region: 1 }),
            Command::SetIfm2Base0(SetIfm2Base0 {
                addr_hi: 0,
                addr_lo: base,
            }),
            Command::SetIfm2StrideX(SetIfm2StrideX {
                addr_hi: 0,
                addr_lo: sx,
            }),
            Command::SetIfm2StrideY(SetIfm2StrideY {
                addr_hi: 0,
                addr_lo: sy,
            }),
            Command::SetIfm2Width0M1(SetIfm2Width0M1 { width_m1: w - 1 }),
            Command::SetIfm2Height0M1(SetIfm2Height0M1 { height_m1: h - 1 }),
            Command::SetIfm2Height1M1(SetIfm2Height1M1 { height_m1: h - 1 }),
        ],
        _ => vec![
            Command::SetOfmPrecision(SetOfmPrecision {
                activation_type: t,
                activation_precision: prec,
                activation_format: ActivationFormat::Nhwc,
                scale_mode: OfmScaleMode::Global,
                activation_reverse: ActivationReverse::None,
                activation_transpose: ActivationTranspose::Hwc,
                activation_storage: ActivationStorage::Tile2x2,
            }),
            Command::SetOfmRegion(SetOfmRegion { region: 1 }),
            Command::SetOfmBase0(SetOfmBase0 {
                addr_hi: 0,
                addr_lo: base,
            }),
            Command::SetOfmStrideX(SetOfmStrideX {
                addr_hi: 0,
                addr_lo: sx,
            }),
            Command::SetOfmStrideY(SetOfmStrideY {
                addr_hi: 0,
                addr_lo: sy,
            }),
            Command::SetOfmWidth0M1(SetOfmWidth0M1 { width_m1: w - 1 }),
            Command::SetOfmHeight0M1(SetOfmHeight0M1 { height_m1: h - 1 }),
            Command::SetOfmHeight1M1(SetOfmHeight1M1 { height_m1: h - 1 }),
            Command::SetOfmWidthM1(SetOfmWidthM1 { width_m1: w - 1 }),
            Command::SetOfmHeightM1(SetOfmHeightM1 { height_m1: h - 1 }),
            Command::SetOfmDepthM1(SetOfmDepthM1 { depth_m1: c - 1 }),
            Command::SetOfmBlkWidthM1(SetOfmBlkWidthM1 {
                width_m1: (w - 1) as u8,
            }),
            Command::SetOfmBlkHeightM1(SetOfmBlkHeightM1 {
                height_m1: (h - 1) as u8,
            }),
            Command::SetOfmBlkDepthM1(SetOfmBlkDepthM1 { depth_m1: 15 }),
            // unity scale, no clipping beyond int8
            Command::SetOfmScale(SetOfmScale {
                shift: 0,
                dbl_rnd: 0,
                round_mode: RoundModeOfm::Natural,
                scale: 1,
            }),
            Command::SetActivation(SetActivation {
                activation_function: ActivationFunction::LutNone,
                table: 0,
                activation_clip_range: ActivationClipRange::B16,
            }),
            Command::SetActivationMin(SetActivationMin {
                clip_boundary: (-128i16) as u16,
            }),
            Command::SetActivationMax(SetActivationMax { clip_boundary: 127 }),
        ],
    }
}

/// Unity IFM/IFM2 scales (scale 1, shift 0).
pub fn unity_in_scales() -> Vec<Command> {
    vec![
        Command::SetIfmScale(SetIfmScale {
            shift: 0,
            dbl_rnd: 0,
            round_mode: RoundModeIfm::Natural,
            scale: 1,
        }),
        Command::SetIfm2Scale(SetIfm2Scale {
            shift: 0,
            dbl_rnd: 0,
            round_mode: RoundModeIfm::Natural,
            scale: 1,
        }),
    ]
}
