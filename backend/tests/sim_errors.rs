//! Diagnostics (TRM 3.5.4, 3.6.1, 3.11.2): every failure names the command and the rule.
#![allow(clippy::needless_range_loop)]
mod sim_common;
use npuc_backend::isa::*;
use npuc_backend::sim::{Fault, SimError};
use sim_common::*;

fn copy_setup() -> Vec<Command> {
    let mut c = fm_cmds("ifm", 0, 2, 2, 2, true, ActivationPrecision::B8);
    c.extend(fm_cmds("ifm2", 0, 2, 2, 2, true, ActivationPrecision::B8));
    c.extend(fm_cmds("ofm", 32, 2, 2, 2, true, ActivationPrecision::B8));
    c.extend(unity_in_scales());
    c
}

/// An IFM beyond the mapped bytes is an out-of-region read naming the command's offset.
#[test]
fn out_of_region_read_names_command() {
    let (mut s, _) = sim_with(vec![0u8; 40]);
    let mut c = copy_setup();
    c.push(Command::SetIfmBase0(SetIfmBase0 {
        addr_hi: 0,
        addr_lo: 36,
    }));
    let at = encode_stream(&c).unwrap().len() * 4;
    c.push(Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Max,
    }));
    match run(&mut s, &c).unwrap_err() {
        SimError::Command {
            offset,
            instruction,
            fault: Fault::OutOfRegion { region: 1, .. },
        } => {
            assert_eq!(offset, at);
            assert_eq!(instruction, "NPU_OP_ELEMENTWISE");
        }
        e => panic!("{e}"),
    }
}

/// Unmapped region.
#[test]
fn unmapped_region() {
    let (mut s, _) = sim_with(vec![0u8; 64]);
    let mut c = copy_setup();
    c.push(Command::SetIfmRegion(SetIfmRegion { region: 5 }));
    c.push(Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Max,
    }));
    assert!(matches!(
        run(&mut s, &c).unwrap_err().fault(),
        Some(Fault::UnmappedRegion { region: 5 })
    ));
}

/// NPU_OP_BRANCH: target must be 4-aligned and < QSIZE, checked even when not taken (3.11.2).
#[test]
fn branch_fault_even_if_not_taken() {
    let (mut s, _) = sim_with(vec![0u8; 64]);
    let c = [Command::OpBranch(OpBranch {
        branch_cond: BranchCond::RfTrue,
        branch_target: 0x1000,
    })];
    match run(&mut s, &c).unwrap_err() {
        SimError::Command {
            offset: 0,
            fault:
                Fault::BranchFault {
                    target: 0x1000,
                    qsize: 12,
                },
            ..
        } => {}
        e => panic!("{e}"),
    }
    let c = [Command::OpBranch(OpBranch {
        branch_cond: BranchCond::Always,
        branch_target: 2,
    })];
    assert!(matches!(
        run(&mut s, &c).unwrap_err().fault(),
        Some(Fault::BranchFault { .. })
    ));
}

/// An endless branch loop stops at the step budget.
#[test]
fn step_budget_stops_loops() {
    let (mut s, _) = sim_with(vec![0u8; 64]);
    s.set_step_budget(1000);
    let c = [Command::OpBranch(OpBranch {
        branch_cond: BranchCond::Always,
        branch_target: 0,
    })];
    assert!(matches!(
        run(&mut s, &c).unwrap_err(),
        SimError::StepBudget { budget: 1000, .. }
    ));
}

/// A taken branch skips commands; rf_true follows COND_STATUS.result_flag of a 1x1x1 OFM.
#[test]
fn conditional_branch_on_result_flag() {
    let mut mem = vec![0u8; 64];
    mem[0] = 3; // odd -> result_flag 1
    let (mut s, id) = sim_with(mem);
    let mut c = fm_cmds("ifm", 0, 1, 1, 1, true, ActivationPrecision::B8);
    c.extend(fm_cmds("ofm", 8, 1, 1, 1, true, ActivationPrecision::B8));
    c.extend(unity_in_scales());
    c.push(Command::SetIfm2Broadcast(SetIfm2Broadcast {
        broadcast_mode: BroadcastMode::Scalar,
    }));
    c.push(Command::SetIfm2Precision(SetIfm2Precision {
        activation_type: ActivationType::Signed,
        activation_precision: ActivationPrecision::B8,
        activation_format: ActivationFormat::Nhwc,
        activation_storage: ActivationStorage::None,
    }));
    c.push(Command::SetOpScalar(SetOpScalar { scalar: 0 }));
    c.push(Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Add,
    }));
    let head = encode_stream(&c).unwrap().len() as u32 * 4;
    // BRANCH (8 bytes) rf_true over OP_SCALAR (8) and ADD (4) to STOP.
    c.push(Command::OpBranch(OpBranch {
        branch_cond: BranchCond::RfTrue,
        branch_target: head + 20,
    }));
    c.push(Command::SetOpScalar(SetOpScalar { scalar: 100 }));
    c.push(Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Add,
    }));
    let r = run(&mut s, &c).unwrap();
    assert_eq!(s.memory().buffer(id)[8], 3, "the second ADD was skipped");
    assert_eq!(r.ops.len(), 1);
}

/// Stride 4 (encodable, outside "1 to 3") is a failed assert (docs/decisions.md, simulator #15).
#[test]
fn stride_four_is_rejected() {
    let (mut s, _) = sim_with(vec![0u8; 64]);
    let mut c = copy_setup();
    c.push(Command::SetKernelStride(SetKernelStride {
        stride_x_lsb: 1,
        stride_x_msb: 1,
        ..Default::default()
    }));
    c.push(Command::OpPool(OpPool {
        pooling_mode: PoolingMode::Max,
    }));
    let e = run(&mut s, &c).unwrap_err();
    assert!(
        matches!(
            e.fault(),
            Some(Fault::Assert {
                section: "3.10.44",
                ..
            })
        ),
        "{e}"
    );
}

/// A reserved encoding is a cmd_parse_error with the byte offset, not a panic.
#[test]
fn reserved_encoding_is_parse_error() {
    let (mut s, _) = sim_with(vec![0u8; 64]);
    let e = s.run(&[0x0000_0105, 0x0000_8000]).unwrap_err();
    assert!(matches!(e, SimError::Decode(_)), "{e}");
}

/// Arbitrary words never panic.
#[test]
fn random_streams_never_panic() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..2000 {
        let words: Vec<u32> = (0..24)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u32 & 0xc3ff_c1ff
            })
            .collect();
        let (mut s, _) = sim_with(vec![0u8; 256]);
        s.set_step_budget(10_000);
        let _ = s.run(&words);
    }
}
