//! 2:4 sparse weights (TRM 3.10.63 NPU_SET_WEIGHT_FORMAT.weight_sparsity = sparse_2_4, weight
//! ordering TRM 3.9.2 with `i_sz` = 16): a CONV with a sparse stream computes the same as with
//! the dense stream of the same weights, and a stream breaking the 2:4 rule or the -127..127
//! range is a failed assert (docs/decisions.md, simulator #31).
mod sim_common;
use npuc_backend::isa::*;
use npuc_backend::sim::weights::ordering_params;
use npuc_backend::sim::{Fault, SimError};
use npuc_codecs::ordering::{WeightOrdering, WeightShape};
use sim_common::*;

const IFM: u32 = 0;
const OFM: u32 = 128;
const H: u16 = 1;
const W: u16 = 3;
const C: u16 = 8;
const OC: u16 = 2;

/// [oc][ic] weights of a 1x1 kernel, 2:4 sparse along the input channels.
const WEIGHTS: [[i16; 8]; 2] = [[3, 0, -2, 0, 0, 5, 0, -1], [0, 0, 7, 1, -4, 0, 0, 127]];

fn ifm(y: usize, x: usize, c: usize) -> i8 {
    (x as i8 * 5 - c as i8 * 3 + 7) * if y == 0 { 1 } else { -1 }
}

fn commands(sparsity: WeightSparsity, weight_len: u32) -> Vec<Command> {
    let mut c = fm_cmds("ifm", IFM, H, W, C, true, ActivationPrecision::B8);
    c.extend(fm_cmds(
        "ofm",
        OFM,
        H,
        W,
        OC,
        true,
        ActivationPrecision::B32,
    ));
    c.extend([
        Command::SetActivation(SetActivation {
            activation_function: ActivationFunction::LutNone,
            table: 0,
            activation_clip_range: ActivationClipRange::None,
        }),
        Command::SetAccFormat(SetAccFormat {
            acc_format: AccFormat::I32,
            acc_input: AccInput::Reset,
            acc_output: AccOutput::Enable,
            microblock: Microblock::U2x2,
        }),
        Command::SetWeightFormat(SetWeightFormat {
            weight_format: WeightFormat::Swd,
            weight_sparsity: sparsity,
        }),
        Command::SetWeightRegion(SetWeightRegion { region: 2 }),
        Command::SetWeightBase(SetWeightBase {
            addr_hi: 0,
            addr_lo: 0,
        }),
        Command::SetWeightLength(SetWeightLength { length: weight_len }),
    ]);
    c
}

/// The SWD stream(s) of `weights` in the ordering the registers of `cmds` select.
fn encode(weights: &[[i16; 8]; 2], cmds: &[Command]) -> Vec<u8> {
    let mut regs = RegisterFile::default();
    for cmd in cmds {
        regs.apply(cmd);
    }
    let arch = npuc_backend::arch::Accelerator::U85_256.config();
    let params = ordering_params(&arch, &regs, false).unwrap();
    let shape = WeightShape {
        ofm_depth: OC as usize,
        kernel_height: 1,
        kernel_width: 1,
        ifm_depth: C as usize,
    };
    let ordering = WeightOrdering::new(&params, shape).unwrap();
    assert_eq!(ordering.num_streams(), 1, "one weight decoder on u85_256");
    let flat: Vec<i16> = weights.iter().flatten().copied().collect();
    let stream: Vec<i16> = ordering
        .stream_sources(0)
        .map(|src| src.map_or(0, |i| flat[i]))
        .collect();
    npuc_codecs::swd::encode::encode(&stream).unwrap()
}

/// Runs the 1x1 CONV and returns the int32 OFM in (x, oc) order.
fn conv(weights: &[[i16; 8]; 2], sparsity: WeightSparsity) -> Result<Vec<i32>, SimError> {
    let stream = encode(weights, &commands(sparsity, 0));
    let mut bytes = vec![0u8; 256];
    for y in 0..H as usize {
        for x in 0..W as usize {
            for c in 0..C as usize {
                bytes[IFM as usize + (y * W as usize + x) * C as usize + c] = ifm(y, x, c) as u8;
            }
        }
    }
    let (mut s, id) = sim_with(bytes);
    s.memory_mut().add_region(2, stream.clone());
    let mut cmds = commands(sparsity, stream.len() as u32);
    cmds.push(Command::OpConv(OpConv { weights_ifm2: 0 }));
    run(&mut s, &cmds)?;
    let out = &s.memory().buffer(id)[OFM as usize..OFM as usize + 4 * (W * OC) as usize];
    Ok(out
        .chunks(4)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

fn expected(weights: &[[i16; 8]; 2]) -> Vec<i32> {
    let mut v = Vec::new();
    for x in 0..W as usize {
        for w in weights {
            v.push(
                (0..C as usize)
                    .map(|c| i32::from(ifm(0, x, c)) * i32::from(w[c]))
                    .sum(),
            );
        }
    }
    v
}

#[test]
fn sparse_stream_computes_the_dense_convolution() {
    let dense = conv(&WEIGHTS, WeightSparsity::None).unwrap();
    assert_eq!(dense, expected(&WEIGHTS));
    let sparse = conv(&WEIGHTS, WeightSparsity::Sparse24).unwrap();
    assert_eq!(sparse, dense);
}

#[test]
fn the_sparse_ordering_differs_from_the_dense_one() {
    // Otherwise the test above would not exercise the sparse ordering (i_sz 16, TRM 3.9.2).
    let weights: [[i16; 8]; 2] = [[1, 2, 3, 4, 5, 6, 7, 8], [9, 10, 11, 12, 13, 14, 15, 16]];
    let d = encode(&weights, &commands(WeightSparsity::None, 0));
    let s = encode(&weights, &commands(WeightSparsity::Sparse24, 0));
    assert_ne!(d, s);
}

fn assert_sparse_fault(e: SimError, what: &str) {
    assert!(
        matches!(e.fault(), Some(Fault::Assert { section: "3.10.63", rule, .. }) if rule.contains(what)),
        "{e}"
    );
}

#[test]
fn three_nonzero_weights_in_a_group_of_four_is_a_failed_assert() {
    let mut w = WEIGHTS;
    w[1][1] = 1; // channels 0..4 of OFM channel 1: 0, 1, 7, 1
    assert_eq!(conv(&w, WeightSparsity::None).unwrap(), expected(&w));
    assert_sparse_fault(
        conv(&w, WeightSparsity::Sparse24).unwrap_err(),
        "2 out of each group of 4",
    );
}

#[test]
fn weight_128_is_outside_the_sparse_range() {
    let mut w = WEIGHTS;
    w[1][7] = 128;
    assert_eq!(conv(&w, WeightSparsity::None).unwrap(), expected(&w));
    assert_sparse_fault(
        conv(&w, WeightSparsity::Sparse24).unwrap_err(),
        "-127 to +127",
    );
}
