//! NPU_OP_ELEMENTWISE corners (TRM 3.10.6).
#![allow(clippy::needless_range_loop)]
mod sim_common;
use npuc_backend::isa::*;
use sim_common::*;

fn add_setup(ofm_clip_max: u16) -> Vec<Command> {
    let mut c = fm_cmds("ifm", 0, 2, 2, 2, true, ActivationPrecision::B8);
    c.extend(fm_cmds("ifm2", 16, 2, 2, 2, true, ActivationPrecision::B8));
    c.extend(fm_cmds("ofm", 32, 2, 2, 2, true, ActivationPrecision::B8));
    c.extend(unity_in_scales());
    c.push(Command::SetActivationMax(SetActivationMax {
        clip_boundary: ofm_clip_max,
    }));
    c
}

/// add: scale_a(a) + scale_b(b), then activation clamp (TRM 3.6.7: saturation only via clamp).
#[test]
fn add_clamps_to_activation_range() {
    let mut mem = vec![0u8; 64];
    for i in 0..8 {
        mem[i] = (i * 10) as u8;
        mem[16 + i] = 100;
    }
    let (mut s, id) = sim_with(mem);
    let mut c = add_setup(127);
    c.push(Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Add,
    }));
    run(&mut s, &c).unwrap();
    let out: Vec<i8> = s.memory().buffer(id)[32..40]
        .iter()
        .map(|&b| b as i8)
        .collect();
    assert_eq!(out, vec![100, 110, 120, 127, 127, 127, 127, 127]);
}

/// Broadcast of IFM2 along H and W (broadcast bits h=1, w=2) reads (0, 0, c).
#[test]
fn broadcast_hw_reads_first_pixel() {
    let mut mem = vec![0u8; 64];
    for i in 0..8 {
        mem[i] = i as u8;
    }
    mem[16] = 10;
    mem[17] = 20;
    let (mut s, id) = sim_with(mem);
    let mut c = add_setup(127);
    c.push(Command::SetIfm2Broadcast(SetIfm2Broadcast {
        broadcast_mode: BroadcastMode::Hw,
    }));
    c.push(Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Sub,
    }));
    run(&mut s, &c).unwrap();
    let out: Vec<i8> = s.memory().buffer(id)[32..40]
        .iter()
        .map(|&b| b as i8)
        .collect();
    assert_eq!(out, vec![-10, -19, -8, -17, -6, -15, -4, -13]);
}

/// A scalar IFM2 is OP_SCALAR, without zero point subtraction; IFM2 storage must be none.
#[test]
fn scalar_operand_requires_storage_none() {
    let (mut s, _) = sim_with(vec![0u8; 64]);
    let mut c = add_setup(127);
    c.push(Command::SetIfm2Broadcast(SetIfm2Broadcast {
        broadcast_mode: BroadcastMode::Scalar,
    }));
    c.push(Command::SetOpScalar(SetOpScalar { scalar: 3 }));
    c.push(Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Add,
    }));
    let e = run(&mut s, &c).unwrap_err().to_string();
    assert!(e.contains("activation_storage == none"), "{e}");
}

/// Chaining (TRM 3.6.4): MUL writes FIFO 0, ADD reads it as IFM; same result as via memory.
#[test]
fn chained_elementwise_matches_memory_round_trip() {
    let mut mem = vec![0u8; 96];
    for i in 0..8 {
        mem[i] = (i as u8) + 1;
        mem[16 + i] = 3;
    }
    let (mut s, id) = sim_with(mem);
    let mut c = add_setup(127);
    c.push(Command::SetOfmPrecision(SetOfmPrecision {
        activation_type: ActivationType::Signed,
        activation_precision: ActivationPrecision::B8,
        activation_format: ActivationFormat::Nhwc,
        scale_mode: OfmScaleMode::Global,
        activation_reverse: ActivationReverse::None,
        activation_transpose: ActivationTranspose::Hwc,
        activation_storage: ActivationStorage::Chained,
    }));
    c.push(Command::SetOfmRegion(SetOfmRegion { region: 0 }));
    c.push(Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Mul,
    }));
    c.push(Command::SetIfmPrecision(SetIfmPrecision {
        activation_type: ActivationType::Signed,
        activation_precision: ActivationPrecision::B8,
        activation_format: ActivationFormat::Nhwc,
        activation_storage: ActivationStorage::Chained,
    }));
    c.push(Command::SetIfmRegion(SetIfmRegion { region: 0 }));
    c.extend(fm_cmds("ofm", 64, 2, 2, 2, true, ActivationPrecision::B8));
    c.push(Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Add,
    }));
    run(&mut s, &c).unwrap();
    let out: Vec<i8> = s.memory().buffer(id)[64..72]
        .iter()
        .map(|&b| b as i8)
        .collect();
    assert_eq!(out, (1..=8).map(|v| v * 3 + 3).collect::<Vec<i8>>());
}

/// Reading a chaining FIFO that no earlier operation of the chain wrote is a failed assert.
#[test]
fn chained_input_without_producer_fails() {
    let (mut s, _) = sim_with(vec![0u8; 64]);
    let mut c = add_setup(127);
    c.push(Command::SetIfmPrecision(SetIfmPrecision {
        activation_type: ActivationType::Signed,
        activation_precision: ActivationPrecision::B8,
        activation_format: ActivationFormat::Nhwc,
        activation_storage: ActivationStorage::Chained,
    }));
    c.push(Command::SetIfmRegion(SetIfmRegion { region: 1 }));
    c.push(Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Add,
    }));
    let e = run(&mut s, &c).unwrap_err().to_string();
    assert!(e.contains("g_fifo_valid"), "{e}");
}
