//! Control flow (TRM 3.11.2 NPU_OP_BRANCH, 3.6.5 COND_STATUS.result_flag): unconditional and
//! rf_true branches, branch_fault, step budget, and rf_true on an UNPREDICTABLE result flag
//! (docs/decisions.md, simulator #20).
mod sim_common;
use npuc_backend::isa::*;
use npuc_backend::sim::{Fault, SimError};
use sim_common::*;

/// OFM(8) = IFM(0) + scalar, all 1x1x1 int8 (the OFM write sets result_flag, TRM 3.6.5).
fn add_scalar_1x1x1() -> Vec<Command> {
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
    c
}

fn len_bytes(c: &[Command]) -> u32 {
    encode_stream(c).unwrap().len() as u32 * 4
}

/// Appends BRANCH `cond` over `OP_SCALAR 100; ADD` to the final STOP.
fn branch_over_second_add(c: &mut Vec<Command>, cond: BranchCond) {
    let head = len_bytes(c);
    // BRANCH (8 bytes) + SET_OP_SCALAR (8 bytes) + ADD (4 bytes) -> STOP.
    c.push(Command::OpBranch(OpBranch {
        branch_cond: cond,
        branch_target: head + 20,
    }));
    c.push(Command::SetOpScalar(SetOpScalar { scalar: 100 }));
    c.push(Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Add,
    }));
}

/// branch_cond == always (TRM 3.11.2): QREAD = branch_target, the skipped ADD never runs.
#[test]
fn branch_always_is_taken() {
    let mut mem = vec![0u8; 64];
    mem[0] = 4;
    let (mut s, id) = sim_with(mem);
    let mut c = add_scalar_1x1x1();
    branch_over_second_add(&mut c, BranchCond::Always);
    let r = run(&mut s, &c).unwrap();
    assert_eq!(s.memory().buffer(id)[8], 4);
    assert_eq!(r.ops.len(), 1);
}

/// rf_true (TRM 3.11.2) with result_flag = bit 0 of the single OFM value (TRM 3.6.5): odd ->
/// taken.
#[test]
fn branch_rf_true_taken_on_odd_value() {
    let mut mem = vec![0u8; 64];
    mem[0] = 5;
    let (mut s, id) = sim_with(mem);
    let mut c = add_scalar_1x1x1();
    branch_over_second_add(&mut c, BranchCond::RfTrue);
    let r = run(&mut s, &c).unwrap();
    assert_eq!(s.result_flag(), Some(true));
    assert_eq!(s.memory().buffer(id)[8], 5, "second ADD skipped");
    assert_eq!(r.ops.len(), 1);
}

/// rf_true with an even single OFM value (result_flag 0): not taken, execution falls through.
#[test]
fn branch_rf_true_not_taken_on_even_value() {
    let mut mem = vec![0u8; 64];
    mem[0] = 6;
    let (mut s, id) = sim_with(mem);
    let mut c = add_scalar_1x1x1();
    branch_over_second_add(&mut c, BranchCond::RfTrue);
    let r = run(&mut s, &c).unwrap();
    assert_eq!(s.memory().buffer(id)[8], 106, "second ADD ran");
    assert_eq!(r.ops.len(), 2);
}

/// TRM 3.11.2: `if (branch_target >= QSIZE) { STATUS.branch_fault = 1; raise_error(); }`.
/// QSIZE is the stream length, so a target exactly at the end (one past the STOP) faults,
/// while the STOP itself is a valid target.
#[test]
fn branch_target_outside_stream_faults() {
    let (mut s, _) = sim_with(vec![0u8; 64]);
    // BRANCH (8 bytes) + STOP (4 bytes): QSIZE = 12.
    let c = [Command::OpBranch(OpBranch {
        branch_cond: BranchCond::Always,
        branch_target: 12,
    })];
    match run(&mut s, &c).unwrap_err() {
        SimError::Command {
            offset: 0,
            instruction: "NPU_OP_BRANCH",
            fault:
                Fault::BranchFault {
                    target: 12,
                    qsize: 12,
                },
        } => {}
        e => panic!("{e}"),
    }
    let c = [Command::OpBranch(OpBranch {
        branch_cond: BranchCond::Always,
        branch_target: 8,
    })];
    let r = run(&mut s, &c).unwrap();
    assert_eq!(r.commands, 2);
}

/// A backwards branch loop around a kernel operation never reaches STOP; the run stops at the
/// step budget (commands executed, counting repeats) instead of hanging.
#[test]
fn branch_loop_stopped_by_step_budget() {
    let (mut s, _) = sim_with(vec![0u8; 64]);
    s.set_step_budget(500);
    let mut c = add_scalar_1x1x1();
    let op = len_bytes(&c) - 4; // offset of the ADD
    c.push(Command::OpBranch(OpBranch {
        branch_cond: BranchCond::Always,
        branch_target: op,
    }));
    match run(&mut s, &c).unwrap_err() {
        SimError::StepBudget { budget: 500, .. } => {}
        e => panic!("{e}"),
    }
}

/// rf_true after an OFM that is not 1x1x1: TRM 3.6.5 sets `COND_STATUS.result_flag =
/// UNPREDICTABLE()`; the simulator makes the branch a failed assert (decisions.md, simulator
/// #20) naming the BRANCH.
#[test]
fn branch_rf_true_on_unpredictable_flag_fails() {
    let (mut s, _) = sim_with(vec![0u8; 64]);
    let mut c = fm_cmds("ifm", 0, 2, 2, 2, true, ActivationPrecision::B8);
    c.extend(fm_cmds("ifm2", 0, 2, 2, 2, true, ActivationPrecision::B8));
    c.extend(fm_cmds("ofm", 32, 2, 2, 2, true, ActivationPrecision::B8));
    c.extend(unity_in_scales());
    c.push(Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Max,
    }));
    let at = len_bytes(&c) as usize;
    c.push(Command::OpBranch(OpBranch {
        branch_cond: BranchCond::RfTrue,
        branch_target: 0,
    }));
    let e = run(&mut s, &c).unwrap_err();
    assert_eq!(s.result_flag(), None);
    match &e {
        SimError::Command {
            offset,
            instruction: "NPU_OP_BRANCH",
            fault: Fault::Assert { detail, .. },
        } => {
            assert_eq!(*offset, at);
            assert!(detail.contains("UNPREDICTABLE"), "{e}");
        }
        _ => panic!("{e}"),
    }
}

/// COND_STATUS.result_flag resets to 0 (TRM COND_STATUS register, "default value 0x0"), so
/// rf_true before any OFM write is defined and not taken.
#[test]
fn branch_rf_true_before_any_ofm_uses_reset_value() {
    let (mut s, _) = sim_with(vec![0u8; 64]);
    let c = [Command::OpBranch(OpBranch {
        branch_cond: BranchCond::RfTrue,
        branch_target: 0,
    })];
    let r = run(&mut s, &c).unwrap();
    assert_eq!(r.commands, 2);
}
