//! POOL accumulator formats (TRM 3.10.10; docs/decisions.md simulator #39): argmax runs with
//! an i32 or an i48 accumulator (Vela 5.2's int64 ARG_MAX uses i48 and a b64 OFM); the other
//! modes except sum, reduce_sum and none still require i32.
mod sim_common;
use npuc_backend::isa::*;
use npuc_backend::sim::Fault;
use sim_common::*;

/// IFM 1x4x2 int8 at 0 (channel 0: 3, -1, 7, 2; channel 1: -5, 9, 0, 9), OFM 1x1x2 at 32,
/// kernel 1x4, OFM_SCALE `>> 16` truncating: the argmax index per channel.
fn argmax_setup(acc_format: AccFormat) -> Vec<Command> {
    let mut c = fm_cmds("ifm", 0, 1, 4, 2, true, ActivationPrecision::B8);
    c.extend(fm_cmds("ofm", 32, 1, 1, 2, true, ActivationPrecision::B8));
    c.extend(unity_in_scales());
    c.push(Command::SetKernelWidthM1(SetKernelWidthM1 { width_m1: 3 }));
    c.push(Command::SetOfmScale(SetOfmScale {
        shift: 16,
        dbl_rnd: 0,
        round_mode: RoundModeOfm::TruncateToLower,
        scale: 1,
    }));
    c.push(Command::SetAccFormat(SetAccFormat {
        acc_format,
        ..Default::default()
    }));
    c
}

fn memory() -> Vec<u8> {
    let mut m = vec![0u8; 64];
    for (i, v) in [3i8, -5, -1, 9, 7, 0, 2, 9].into_iter().enumerate() {
        m[i] = v as u8;
    }
    m
}

#[test]
fn argmax_accepts_i32_and_i48_accumulators() {
    for acc_format in [AccFormat::I32, AccFormat::I48] {
        let (mut s, id) = sim_with(memory());
        let mut c = argmax_setup(acc_format);
        c.push(Command::OpPool(OpPool {
            pooling_mode: PoolingMode::ArgmaxX,
        }));
        run(&mut s, &c).unwrap_or_else(|e| panic!("{acc_format:?}: {e}"));
        assert_eq!(
            &s.memory_mut().buffer(id)[32..34],
            &[2, 1],
            "{acc_format:?}"
        );
    }
}

#[test]
fn max_pooling_with_an_i48_accumulator_is_still_refused() {
    let (mut s, _) = sim_with(memory());
    let mut c = argmax_setup(AccFormat::I48);
    c.push(Command::OpPool(OpPool {
        pooling_mode: PoolingMode::Max,
    }));
    let e = run(&mut s, &c).unwrap_err();
    assert!(
        matches!(
            e.fault(),
            Some(Fault::Assert {
                section: "3.10.10",
                ..
            })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("acc_format"), "{e}");
}
