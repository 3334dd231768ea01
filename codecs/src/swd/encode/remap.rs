//! Exact re-costing of a planned region under another index mapping
//! (TRM §3.9.6–§3.9.8): a mapping found cheaper by its single-parameter
//! estimate is adopted for the region's planned slices only if those
//! slices, with every weight index translated, cost fewer bits.

use super::cost::WParam;
use super::mapping::{Candidate, NO_INDEX};
use super::slices::RegionPlan;
use crate::swd::{SLICELEN_MAX, WEIGHT_INDEX_MAX, WQ_MAX, WQ_MAX_TRUNCATED, WUNARY0_BITS};

/// A weight index's share of [`index_bits_exact`]'s sums under one
/// Golomb-Rice parameter, as it is (`old`) and translated (`new`): the
/// quotient bits in the low 32 bits, the extra `wunary0` positions (one per
/// pair of quotient bits without `wtrunc`) in the high 32 (a slice part of
/// at most [`SLICELEN_MAX`] indices sums to less than 2^24 in each).
#[derive(Clone, Copy, Default)]
struct Share {
    old: u64,
    new: u64,
    /// 1 if the parameter cannot code the index or its translation.
    bad: u8,
}

/// The [`Share`] of every weight index (512 entries) under `wdiv` and `trunc` with
/// translation `t`.
fn shares(t: &[u16; 512], wdiv: u8, trunc: bool) -> Box<[Share]> {
    let q_max = if trunc { WQ_MAX_TRUNCATED } else { WQ_MAX };
    let codable = |x: u16| x <= WEIGHT_INDEX_MAX && u32::from(x) >> wdiv <= q_max;
    let share = |x: u16| {
        let q = u64::from(x) >> wdiv;
        if trunc {
            q.min(1)
        } else {
            q | (q >> 1) << 32
        }
    };
    // Made on the heap (a `Box::new` of an array builds it on the stack and copies it).
    let mut out = vec![Share::default(); 512].into_boxed_slice();
    for (i, (s, &x)) in out.iter_mut().zip(t).enumerate() {
        let i = i as u16;
        *s = if codable(i) && codable(x) {
            Share {
                old: share(i),
                new: share(x),
                bad: 0,
            }
        } else {
            Share {
                bad: 1,
                ..Share::default()
            }
        };
    }
    out
}

/// Exact bits of the weight indices of `plan`'s slices, as emitted (slices
/// longer than [`SLICELEN_MAX`] split), as they are and with every index `i`
/// replaced by `t[i]` and `new_ubits` uncompressed bits: Golomb-Rice bits plus
/// the unused positions of each slice's last `wunary0`. One pass for both,
/// one table lookup per Golomb-Rice coded index ([`shares`], built once per
/// weight parameter); `None` if a slice's parameter cannot code an index or a
/// translated index.
fn index_bits_exact(
    plan: &RegionPlan,
    t: &[u16; 512],
    old_ubits: u32,
    new_ubits: u32,
) -> Option<(u64, u64)> {
    const LOW: u64 = 0xFFFF_FFFF;
    let mut tables: [Option<Box<[Share]>>; 12] = Default::default();
    let (mut old, mut new) = (0u64, 0u64);
    for s in &plan.slices {
        for part in plan.sym.idx[s.start..s.end].chunks(SLICELEN_MAX as usize) {
            let n = part.len() as u64;
            match s.wparam {
                WParam::Unc => {
                    let (mut max_old, mut max_new) = (0u16, 0u16);
                    for &i in part {
                        max_old = max_old.max(i);
                        max_new = max_new.max(t[usize::from(i) & 511]);
                    }
                    if u32::from(max_old) >> old_ubits != 0 || u32::from(max_new) >> new_ubits != 0
                    {
                        return None;
                    }
                    old += n * u64::from(old_ubits);
                    new += n * u64::from(new_ubits);
                }
                WParam::Gr { wdiv, trunc } => {
                    let table =
                        tables[s.wparam.ordinal()].get_or_insert_with(|| shares(t, wdiv, trunc));
                    let (mut sum_old, mut sum_new, mut bad) = (0u64, 0u64, 0u8);
                    for &i in part {
                        let sh = &table[usize::from(i) & 511];
                        sum_old += sh.old;
                        sum_new += sh.new;
                        bad |= sh.bad;
                    }
                    if bad != 0 {
                        return None;
                    }
                    // One wunary0 position per index (+ one per pair of
                    // quotient bits without wtrunc).
                    let bits = |sum: u64| {
                        let positions = (sum >> 32) + n;
                        let unused =
                            positions.next_multiple_of(u64::from(WUNARY0_BITS)) - positions;
                        n * (1 + u64::from(wdiv)) + (sum & LOW) + unused
                    };
                    old += bits(sum_old);
                    new += bits(sum_new);
                }
            }
        }
    }
    Some((old, new))
}

/// Replaces the index mapping of `plans` (regions sharing one mapping and
/// mode class, each repeating it in its `newpal`) by `cand`'s, keeping
/// their slices, if that makes them smaller in total. Returns whether it
/// did.
pub(super) fn remap_if_smaller(plans: &mut [&mut RegionPlan], cand: &Candidate) -> bool {
    let Some(first) = plans.first() else {
        return false;
    };
    debug_assert_eq!(cand.alternating, first.sym.alternating);
    let new = cand.mapping();
    let mut t = [NO_INDEX; 512];
    for (&old, &new) in first.mapping.index_of.iter().zip(new.index_of.iter()) {
        if old != NO_INDEX {
            t[usize::from(old) & 511] = new;
        }
    }
    let (old_ubits, new_ubits) = (
        first.mapping.palette.uncompressed_bits(),
        new.palette.uncompressed_bits(),
    );
    let (old_header, new_header) = (first.mapping.header_bits(), new.header_bits());
    let mut saved = Vec::with_capacity(plans.len());
    for plan in plans.iter() {
        let Some((old_bits, new_bits)) = index_bits_exact(plan, &t, old_ubits, new_ubits) else {
            return false;
        };
        saved.push(
            (old_bits + u64::from(old_header)) as i64 - (new_bits + u64::from(new_header)) as i64,
        );
    }
    if saved.iter().sum::<i64>() <= 0 {
        return false;
    }
    for (plan, s) in plans.iter_mut().zip(saved) {
        for i in &mut plan.sym.idx {
            *i = t[usize::from(*i) & 511];
        }
        plan.bits = plan.bits.saturating_add_signed(-s);
        plan.mapping = new.clone();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::regions::plan_regions;
    use super::*;
    use crate::swd::encode::cost::ALL_WPARAMS;

    /// The original [`index_bits_exact`], one pass computing both sums per index.
    /// Exact bits of the weight indices of `plan`'s slices, as emitted (slices
    /// longer than [`SLICELEN_MAX`] split), as they are and with every index `i`
    /// replaced by `t[i]` and `new_ubits` uncompressed bits: Golomb-Rice bits plus
    /// the unused positions of each slice's last `wunary0`. One pass for both;
    /// `None` if a slice's parameter cannot code an index or a translated index.
    fn index_bits_exact_reference(
        plan: &RegionPlan,
        t: &[u16; 512],
        old_ubits: u32,
        new_ubits: u32,
    ) -> Option<(u64, u64)> {
        let (mut old, mut new) = (0u64, 0u64);
        for s in &plan.slices {
            for part in plan.sym.idx[s.start..s.end].chunks(SLICELEN_MAX as usize) {
                let n = part.len() as u64;
                match s.wparam {
                    WParam::Unc => {
                        let (mut max_old, mut max_new) = (0u16, 0u16);
                        for &i in part {
                            max_old = max_old.max(i);
                            max_new = max_new.max(t[usize::from(i) & 511]);
                        }
                        if u32::from(max_old) >> old_ubits != 0
                            || u32::from(max_new) >> new_ubits != 0
                        {
                            return None;
                        }
                        old += n * u64::from(old_ubits);
                        new += n * u64::from(new_ubits);
                    }
                    WParam::Gr { wdiv, trunc } => {
                        let (mut q_old, mut pos_old, mut max_old) = (0u64, 0u64, 0u16);
                        let (mut q_new, mut pos_new, mut max_new) = (0u64, 0u64, 0u16);
                        for &i in part {
                            let x = t[usize::from(i) & 511];
                            max_old = max_old.max(i);
                            max_new = max_new.max(x);
                            let (qo, qn) = (u32::from(i) >> wdiv, u32::from(x) >> wdiv);
                            if trunc {
                                q_old += u64::from(qo.min(1));
                                q_new += u64::from(qn.min(1));
                            } else {
                                q_old += u64::from(qo);
                                q_new += u64::from(qn);
                                pos_old += u64::from(qo >> 1);
                                pos_new += u64::from(qn >> 1);
                            }
                        }
                        let q_max = if trunc { WQ_MAX_TRUNCATED } else { WQ_MAX };
                        let codable =
                            |max: u16| max <= WEIGHT_INDEX_MAX && u32::from(max) >> wdiv <= q_max;
                        if !codable(max_old) || !codable(max_new) {
                            return None;
                        }
                        // One wunary0 position per index (+ one per pair of
                        // quotient bits without wtrunc).
                        let bits = |q_sum: u64, positions: u64| {
                            let positions = positions + n;
                            let unused =
                                positions.next_multiple_of(u64::from(WUNARY0_BITS)) - positions;
                            n * (1 + u64::from(wdiv)) + q_sum + unused
                        };
                        old += bits(q_old, pos_old);
                        new += bits(q_new, pos_new);
                    }
                }
            }
        }
        Some((old, new))
    }

    /// xorshift32 for deterministic test data.
    fn rng(seed: u32) -> impl FnMut() -> u32 {
        let mut x = seed | 1;
        move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

        /// The table-driven sums are the per-index sums, for planned regions of random
        /// weights (dense, sparse, narrow, wide) under random translations (some indices
        /// untranslatable, some beyond what a slice's parameter codes) and `ubits`.
        #[test]
        fn index_bits_exact_is_the_reference(
            n in 1usize..70_000,
            seed in proptest::prelude::any::<u32>(),
            zero_pct in 0u32..=100,
            spread in 1u32..=255,
            shift in 0u32..=9,
            holes in 0u32..=8,
            old_ubits in 1u32..=9,
            new_ubits in 1u32..=9,
        ) {
            let mut next = rng(seed);
            let w: Vec<i16> = (0..n)
                .map(|_| {
                    if next() % 100 < zero_pct {
                        0
                    } else {
                        ((next() % (2 * spread + 1)) as i32 - spread as i32) as i16
                    }
                })
                .collect();
            let mut t = [0u16; 512];
            for x in t.iter_mut() {
                *x = if next() % 64 < holes {
                    NO_INDEX
                } else {
                    (next() % 512) as u16 >> shift
                };
            }
            for mut r in plan_regions(&w) {
                proptest::prop_assert_eq!(
                    index_bits_exact(&r.plan, &t, old_ubits, new_ubits),
                    index_bits_exact_reference(&r.plan, &t, old_ubits, new_ubits)
                );
                for sl in &mut r.plan.slices {
                    sl.wparam = ALL_WPARAMS[next() as usize % 13];
                }
                proptest::prop_assert_eq!(
                    index_bits_exact(&r.plan, &t, old_ubits, new_ubits),
                    index_bits_exact_reference(&r.plan, &t, old_ubits, new_ubits)
                );
                let ubits = r.plan.mapping.palette.uncompressed_bits();
                let same: [u16; 512] = std::array::from_fn(|i| i as u16);
                proptest::prop_assert_eq!(
                    index_bits_exact(&r.plan, &same, ubits, ubits),
                    index_bits_exact_reference(&r.plan, &same, ubits, ubits)
                );
            }
        }
    }
}
