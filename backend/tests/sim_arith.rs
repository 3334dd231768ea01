//! Output-stage arithmetic (TRM 3.6.6 rounded_shift_right / rescale, 3.6.7 activation).
use npuc_backend::isa::{ActivationClipRange, ActivationFunction, RoundModeOfm};
use npuc_backend::sim::arith::Activation;
use npuc_codecs::arith::{avgpool_scale, rounded_shift_right};

fn rsr(acc: i128, s: u32, m: RoundModeOfm, d: u32) -> i128 {
    rounded_shift_right(acc, s, m, d).unwrap()
}

/// Every round mode on +-2.5 and +-3.5 (shift 1).
#[test]
fn round_modes_on_halves() {
    use RoundModeOfm::*;
    let cases = [
        (Natural, [3, 4, -2, -3]),
        (Symmetric, [3, 4, -3, -4]),
        (TruncateToZero, [2, 3, -2, -3]),
        (TruncateToLower, [2, 3, -3, -4]),
        // D = 0 for shift <= 31 - dbl_rnd: both double modes round like natural here.
        (DoubleSymmetric, [3, 4, -2, -3]),
        (DoubleAsymmetric, [3, 4, -2, -3]),
    ];
    for (m, want) in cases {
        let got: Vec<i128> = [5, 7, -5, -7].iter().map(|&v| rsr(v, 1, m, 0)).collect();
        assert_eq!(got, want.to_vec(), "{m:?}");
    }
}

/// Double rounding: shift > 31 - dbl_rnd adds 1 << (30 - dbl_rnd) (TFLite's doubling high mul).
#[test]
fn double_rounding_term() {
    // acc*scale = x * 2^31 with the product's remainder just below the natural half.
    let v: i128 = (3i128 << 33) + (1 << 32) - (1 << 30);
    assert_eq!(rsr(v, 33, RoundModeOfm::Natural, 0), 3);
    assert_eq!(rsr(v, 33, RoundModeOfm::DoubleAsymmetric, 0), 4);
    assert_eq!(
        rsr(v, 20, RoundModeOfm::DoubleAsymmetric, 0),
        rsr(v, 20, RoundModeOfm::Natural, 0)
    );
    assert!(rounded_shift_right(1, 64, RoundModeOfm::Natural, 0).is_err());
    assert!(rounded_shift_right(1, 3, RoundModeOfm::Natural, 31).is_err());
}

/// Built-in average pool reciprocal (TRM 3.6.6 rescale, rescale_mode_avpool).
#[test]
fn avgpool_reciprocal() {
    assert_eq!(avgpool_scale(1), ((1 << 30) + 1, 30));
    assert_eq!(avgpool_scale(9), ((((1i64 << 30) + 1) << 4) / 9, 34));
    for d in 1..=64u32 {
        let (s, sh) = avgpool_scale(d);
        assert!(((1 << 30)..(1 << 31)).contains(&s), "d={d}");
        // 9 * d / d rounds to 9 with natural rounding
        assert_eq!(
            rsr(
                i128::from(9 * d as i64) * i128::from(s),
                sh,
                RoundModeOfm::Natural,
                0
            ),
            9
        );
    }
}

fn act(f: ActivationFunction, clip: ActivationClipRange) -> Activation {
    Activation {
        b64: false,
        zero_point: 5,
        min: -128,
        max: 127,
        function: f,
        table: 0,
        clip,
    }
}

/// Zero point added, then the 16-bit clamp; no clamp with clip range none (TRM 3.6.7).
#[test]
fn activation_clamp_and_zero_point() {
    let lut = vec![0u8; 2048];
    let a = act(ActivationFunction::LutNone, ActivationClipRange::B16);
    assert_eq!(a.apply(200, &lut).unwrap(), 127);
    assert_eq!(a.apply(-10, &lut).unwrap(), -5);
    let a = act(ActivationFunction::LutNone, ActivationClipRange::None);
    assert_eq!(a.apply(200, &lut).unwrap(), 205);
    // (int32)(acc64 + zp) wraps (docs/decisions.md, simulator #5b)
    assert_eq!(a.apply((1i64 << 32) + 1, &lut).unwrap(), 6);
}

/// s8_s8 LUT: index (acc + 128) & 255 of table T.
#[test]
fn lut_s8_s8() {
    let mut lut = vec![0u8; 2048];
    for i in 0..256 {
        lut[256 + i] = (255 - i) as u8;
    }
    let mut a = act(ActivationFunction::LutS8S8, ActivationClipRange::B16);
    a.table = 1;
    a.zero_point = 0;
    assert_eq!(a.apply(-128, &lut).unwrap(), -1);
    assert_eq!(a.apply(127, &lut).unwrap(), 0);
}
