//! The simulator bounds the work and memory of a run (docs/decisions.md H2): a branch loop
//! around a kernel operation and operations of absurd size stop with a diagnostic naming the
//! command, before anything is allocated for them.
mod sim_common;
use npuc_backend::isa::*;
use npuc_backend::sim::work::{operation_work, WORK_PER_OPERATION};
use npuc_backend::sim::{Fault, SimError, DEFAULT_STEP_BUDGET};
use sim_common::*;

/// OFM(8) = IFM(0) + scalar, all 1x1x1 int8.
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
    c
}

fn add() -> Command {
    Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Add,
    })
}

fn fault(e: &SimError) -> &Fault {
    e.fault()
        .unwrap_or_else(|| panic!("not a command fault: {e}"))
}

/// A loop back to a kernel operation with the default budgets: the work budget ends it long
/// before the step budget would (each pass charges the operation's fixed cost).
#[test]
fn a_branch_loop_over_a_kernel_operation_exhausts_the_work_budget() {
    let (mut s, _) = sim_with(vec![0u8; 64]);
    s.set_work_budget(WORK_PER_OPERATION * 1000);
    let mut c = add_scalar_1x1x1();
    c.push(add());
    let op = encode_stream(&c).unwrap().len() as u32 * 4 - 4;
    c.push(Command::OpBranch(OpBranch {
        branch_cond: BranchCond::Always,
        branch_target: op,
    }));
    let e = run(&mut s, &c).unwrap_err();
    assert!(matches!(fault(&e), Fault::WorkBudget { .. }), "{e}");
    assert!(e.to_string().contains("NPU_OP_ELEMENTWISE"), "{e}");
    // The default budget stops such a loop well before the default step budget does: one
    // pass costs at least WORK_PER_OPERATION.
    const {
        assert!(
            npuc_backend::sim::DEFAULT_WORK_BUDGET / WORK_PER_OPERATION < DEFAULT_STEP_BUDGET / 10
        )
    };
}

/// OFM_HEIGHT_M1 = OFM_WIDTH_M1 = 0xffff on 64 mapped bytes: refused before the operands
/// (4 G elements each) are gathered.
#[test]
fn a_65536x65536_ofm_is_refused_before_anything_is_allocated() {
    for conv in [false, true] {
        let (mut s, _) = sim_with(vec![0u8; 64]);
        let mut c = add_scalar_1x1x1();
        c.push(Command::SetOfmHeightM1(SetOfmHeightM1 {
            height_m1: 0xffff,
        }));
        c.push(Command::SetOfmWidthM1(SetOfmWidthM1 { width_m1: 0xffff }));
        if conv {
            c.push(Command::OpConv(OpConv { weights_ifm2: 0 }));
        } else {
            c.push(add());
        }
        let e = run(&mut s, &c).unwrap_err();
        let f = fault(&e);
        assert!(
            matches!(f, Fault::WorkBudget { .. } | Fault::TooLarge { .. })
                || f.to_string().contains("the OFM's elements fit"),
            "{e}"
        );
    }
}

/// An 8192x8192 OFM with zero strides "fits" in one byte: refused, since its 64 Mi elements
/// cannot all be in the 64 bytes of its region.
#[test]
fn an_ofm_with_zero_strides_must_still_fit_its_region() {
    let (mut s, _) = sim_with(vec![0u8; 64]);
    let mut c = add_scalar_1x1x1();
    for cmd in [
        Command::SetOfmHeightM1(SetOfmHeightM1 { height_m1: 8191 }),
        Command::SetOfmWidthM1(SetOfmWidthM1 { width_m1: 8191 }),
        Command::SetOfmHeight0M1(SetOfmHeight0M1 { height_m1: 8191 }),
        Command::SetOfmHeight1M1(SetOfmHeight1M1 { height_m1: 8191 }),
        Command::SetOfmWidth0M1(SetOfmWidth0M1 { width_m1: 8191 }),
        Command::SetIfmHeight0M1(SetIfmHeight0M1 { height_m1: 8191 }),
        Command::SetIfmHeight1M1(SetIfmHeight1M1 { height_m1: 8191 }),
        Command::SetIfmWidth0M1(SetIfmWidth0M1 { width_m1: 8191 }),
        Command::SetOfmStrideX(SetOfmStrideX {
            addr_hi: 0,
            addr_lo: 0,
        }),
        Command::SetOfmStrideY(SetOfmStrideY {
            addr_hi: 0,
            addr_lo: 0,
        }),
        Command::SetIfmStrideX(SetIfmStrideX {
            addr_hi: 0,
            addr_lo: 0,
        }),
        Command::SetIfmStrideY(SetIfmStrideY {
            addr_hi: 0,
            addr_lo: 0,
        }),
    ] {
        c.push(cmd);
    }
    c.push(add());
    let e = run(&mut s, &c).unwrap_err();
    assert!(e.to_string().contains("the OFM's elements fit"), "{e}");
    assert!(e.to_string().contains("67108864 bytes"), "{e}");
}

/// The work of an operation is known from its registers, saturating instead of wrapping.
#[test]
fn operation_work_saturates() {
    let mut r = RegisterFile::default();
    for cmd in [
        Command::SetOfmHeightM1(SetOfmHeightM1 { height_m1: 0xffff }),
        Command::SetOfmWidthM1(SetOfmWidthM1 { width_m1: 0xffff }),
        Command::SetOfmDepthM1(SetOfmDepthM1 { depth_m1: 0xffff }),
        Command::SetIfmDepthM1(SetIfmDepthM1 { depth_m1: 0xffff }),
        Command::SetKernelHeightM1(SetKernelHeightM1 { height_m1: 0xffff }),
        Command::SetKernelWidthM1(SetKernelWidthM1 { width_m1: 0xffff }),
    ] {
        r.apply(&cmd);
    }
    let w = operation_work(&r, &Command::OpConv(OpConv { weights_ifm2: 0 }));
    assert_eq!(w.total, u64::MAX);
    assert!(w.elements > npuc_backend::sim::work::MAX_OPERATION_ELEMENTS);
    let w = operation_work(&RegisterFile::default(), &add());
    assert_eq!(w.total, 3 + WORK_PER_OPERATION);
    assert_eq!(w.elements, 3);
}
