//! Emission of planned regions as SWD slices (TRM §3.9.5, §3.9.10), into a [`BitSink`]: a
//! `BitWriter` for the stream, a `BitCounter` for its exact length without the stream.

use super::cost::WParam;
use super::slices::RegionPlan;
use crate::bitwriter::BitSink;
use crate::swd::{
    Palette, ZeroRunMode, DIROFS_BITS, PALBITS_BITS, PALSIZE_BITS, SLICELEN_M1_BITS, SLICELEN_MAX,
    WDIV_BITS, WUNARY0_BITS, ZDIV_BITS,
};

/// Writes a region's slices; returns the number of slices written.
pub(super) fn emit_region<S: BitSink>(w: &mut S, plan: &RegionPlan) -> usize {
    let sym = &plan.sym;
    let mut count = 0;
    let mut first = true;
    for s in &plan.slices {
        // Slices longer than SLICELEN_MAX are split (same parameters).
        let mut a = s.start;
        while a < s.end {
            let b = (a + SLICELEN_MAX as usize).min(s.end);
            let zr: &[u32] = if sym.alternating {
                if first {
                    &sym.zruns[a..=b]
                } else {
                    &sym.zruns[a + 1..=b]
                }
            } else {
                &[]
            };
            let pal = if first {
                Some(&plan.mapping.palette)
            } else {
                None
            };
            emit_slice(
                w,
                sym.alternating,
                s.zdiv,
                s.wparam,
                pal,
                &plan.mapping.palette,
                &sym.idx[a..b],
                zr,
            );
            first = false;
            count += 1;
            a = b;
        }
    }
    count
}

/// The bits [`emit_region`] writes for `plan`, counted from the symbols without the chunk
/// walk: every chunk's `wunary0` holds 12 unary positions and its `zunary` `zunary_len`
/// bits, and both fill every chunk but the last they are enabled in (the chunk parser,
/// §3.9.10, only disables them while the other side catches up), so a slice's unary fields
/// take whole chunks of its total positions; `wunary1` and the remainders are per symbol.
pub(super) fn region_bits(plan: &RegionPlan) -> u64 {
    let sym = &plan.sym;
    let palette = &plan.mapping.palette;
    let ubits = palette.uncompressed_bits();
    let mut bits = u64::from(
        DIROFS_BITS
            + PALSIZE_BITS
            + PALBITS_BITS
            + u32::from(palette.palette_bits) * palette.entries.len() as u32,
    );
    let mut first = true;
    for s in &plan.slices {
        let mut a = s.start;
        while a < s.end {
            let b = (a + SLICELEN_MAX as usize).min(s.end);
            bits += u64::from(ZDIV_BITS + SLICELEN_M1_BITS + WDIV_BITS + 2);
            let idx = &sym.idx[a..b];
            bits += match s.wparam {
                WParam::Unc => idx.len() as u64 * u64::from(ubits),
                WParam::Gr { wdiv, trunc } => index_unary_bits(idx, u32::from(wdiv), trunc),
            };
            if sym.alternating {
                let zr = &sym.zruns[if first { a } else { a + 1 }..=b];
                let zdiv = u32::from(s.zdiv);
                let zlen = u64::from(ZeroRunMode::Alternating { zdiv: s.zdiv }.zunary_len());
                let unary: u64 = zr.iter().map(|&z| u64::from(z >> zdiv) + 1).sum();
                bits += unary.next_multiple_of(zlen) + zr.len() as u64 * u64::from(zdiv);
            }
            first = false;
            a = b;
        }
    }
    bits
}

/// Bits of a Golomb-Rice coded slice's weight indices: the `wunary0` chunks (one position
/// per index, plus one per pair of quotient bits without `wtrunc`), `wunary1` and the
/// `wdiv`-bit remainders.
fn index_unary_bits(idx: &[u16], wdiv: u32, trunc: bool) -> u64 {
    let n = idx.len() as u64;
    let (positions, wunary1) = if trunc {
        let nonzero = idx.iter().filter(|&&i| u32::from(i) >> wdiv != 0).count() as u64;
        (n, nonzero)
    } else {
        let (mut q_sum, mut pairs) = (0u64, 0u64);
        for &i in idx {
            let q = u32::from(i) >> wdiv;
            q_sum += u64::from(q);
            pairs += u64::from(q >> 1);
        }
        // A quotient q takes q / 2 positions of "11" and one of q % 2: q - q / 2 wunary1 bits.
        (n + pairs, q_sum - pairs)
    };
    positions.next_multiple_of(u64::from(WUNARY0_BITS)) + wunary1 + n * u64::from(wdiv)
}

/// Writes one slice: header and chunks, mirroring the TRM chunk parser
/// (§3.9.10) step by step.
#[allow(clippy::too_many_arguments)]
fn emit_slice<S: BitSink>(
    w: &mut S,
    alternating: bool,
    zdiv: u8,
    wparam: WParam,
    newpal: Option<&Palette>,
    palette: &Palette,
    idx: &[u16],
    zruns: &[u32],
) {
    let zrm = if alternating {
        ZeroRunMode::Alternating { zdiv }
    } else {
        ZeroRunMode::NoZeroRuns
    };
    let wmode = wparam.mode();
    w.write(u64::from(zrm.zdiv()), ZDIV_BITS);
    w.write(idx.len() as u64 - 1, SLICELEN_M1_BITS);
    w.write(u64::from(wmode.wdiv()), WDIV_BITS);
    w.write_bit(wparam.trunc());
    w.write_bit(newpal.is_some());
    if let Some(p) = newpal {
        w.write(u64::from(p.dirofs), DIROFS_BITS);
        w.write(u64::from(p.palsize().unwrap_or(0)), PALSIZE_BITS);
        w.write(u64::from(p.palbits().unwrap_or(0)), PALBITS_BITS);
        for &e in &p.entries {
            w.write(u64::from(e), u32::from(p.palette_bits));
        }
    }
    let remainder_bits = palette.uncompressed_bits();
    let unc_per_chunk = palette.uncompressed_per_chunk();
    let args = (idx, zruns, zdiv, remainder_bits, unc_per_chunk);
    // The chunk walk with the slice's modes as constants (its branches on them removed).
    match (alternating, wparam) {
        // No zero runs and no unary parts: the chunks carry the indices in order,
        // uncompressed_bits each.
        (false, WParam::Unc) => {
            write_fields(w, idx.iter().map(|&i| u32::from(i)), remainder_bits);
        }
        (false, WParam::Gr { wdiv, trunc: false }) => {
            chunks::<S, false, false, false>(w, wdiv, args)
        }
        (false, WParam::Gr { wdiv, trunc: true }) => chunks::<S, false, true, false>(w, wdiv, args),
        (true, WParam::Gr { wdiv, trunc: false }) => chunks::<S, true, false, false>(w, wdiv, args),
        (true, WParam::Gr { wdiv, trunc: true }) => chunks::<S, true, true, false>(w, wdiv, args),
        (true, WParam::Unc) => chunks::<S, true, false, true>(w, 0, args),
    }
}

/// The chunks of a slice (TRM §3.9.10) after its header, but for a non-alternating
/// uncompressed one: in alternating mode (`ALT`) with the zero runs, the weight indices
/// Golomb-Rice coded with `wdiv` (`TRUNC`: `wtrunc`) or uncompressed (`UNC`, alternating
/// only), `remainder_bits` each; `args`: the indices, the zero runs, `zdiv`,
/// the uncompressed index width and the indices an uncompressed chunk holds.
fn chunks<S: BitSink, const ALT: bool, const TRUNC: bool, const UNC: bool>(
    w: &mut S,
    wdiv: u8,
    (idx, zruns, zdiv, remainder_bits, unc_per_chunk): (&[u16], &[u32], u8, u32, usize),
) {
    let alternating = ALT;
    let zrm = if ALT {
        ZeroRunMode::Alternating { zdiv }
    } else {
        ZeroRunMode::NoZeroRuns
    };
    let w_cnt = idx.len();
    let z_cnt = if alternating { zruns.len() } else { 0 };
    let zdiv = u32::from(zdiv);
    let zlen = zrm.zunary_len();
    let (unc, trunc, wdiv) = (UNC, TRUNC, u32::from(wdiv));
    let wremain_bits = if unc { remainder_bits } else { wdiv };
    let wmask = (1u32 << wremain_bits) - 1;
    let zmask = (1u32 << zdiv) - 1;

    let (mut wq_i, mut wr_i) = (0usize, 0usize);
    // Quotient still to emit for weight wq_i.
    let mut wq_left = idx.first().map_or(0, |&i| u32::from(i) >> wdiv);
    let (mut zq_i, mut zr_i) = (0usize, 0usize);
    let mut zq_left = zruns.first().map_or(0, |&z| z >> zdiv);
    let (mut prev_w, mut prev_wq_i, mut prev_z, mut prev_zq_i) = (false, 0usize, false, 0usize);
    loop {
        let balance = wq_i as i64 - zq_i as i64;
        let w_enable = (!alternating || balance < 8) && wq_i < w_cnt;
        let z_enable = alternating && balance >= 0 && zq_i < z_cnt;
        let mut wunary1 = 0u64;
        let mut wunary1_len = 0u32;
        if w_enable && !unc {
            // Positions of this chunk, filled weight by weight. Each
            // position is c = 0 ("0"), 1 ("1" + wunary1 0) or 2 ("1" +
            // wunary1 1); c < 2 ends an index. Without wtrunc a quotient q
            // takes q / 2 positions of c = 2 and one of c = q % 2, and may
            // continue in the next chunk; with wtrunc every index is one
            // position (q <= 2).
            let mut wunary0 = 0u64;
            let mut i = 0u32;
            while i < WUNARY0_BITS && wq_i < w_cnt {
                let q = wq_left;
                if trunc {
                    let b0 = u64::from(q > 0);
                    wunary0 |= b0 << i;
                    wunary1 |= u64::from(q >= 2) << wunary1_len;
                    wunary1_len += b0 as u32;
                    i += 1;
                } else {
                    let (pairs, last) = (q >> 1, q & 1);
                    let room = WUNARY0_BITS - i;
                    if pairs >= room {
                        // The chunk ends inside this index.
                        let ones = (1u64 << room) - 1;
                        wunary0 |= ones << i;
                        wunary1 |= ones << wunary1_len;
                        wunary1_len += room;
                        wq_left = q - 2 * room;
                        break;
                    }
                    let ones = (1u64 << pairs) - 1;
                    wunary0 |= (ones | (u64::from(last) << pairs)) << i;
                    wunary1 |= ones << wunary1_len;
                    wunary1_len += pairs + last;
                    i += pairs + 1;
                }
                wq_i += 1;
                wq_left = idx.get(wq_i).map_or(0, |&x| u32::from(x) >> wdiv);
            }
            w.write(wunary0, WUNARY0_BITS);
        }
        if z_enable {
            let mut zunary = 0u64;
            let mut i = 0;
            // Runs of '1' (quotient) bits in bulk, then the terminating '0'.
            while i < zlen && zq_i < z_cnt {
                let k = zq_left.min(zlen - i);
                zunary |= ((1u64 << k) - 1) << i;
                i += k;
                zq_left -= k;
                if i < zlen {
                    // the '0' ending run zq_i (padding bits also stay 0)
                    i += 1;
                    zq_i += 1;
                    zq_left = zruns.get(zq_i).map_or(0, |&z| z >> zdiv);
                }
            }
            w.write(zunary, zlen);
        }
        if w_enable && !unc {
            // At most 12 bits.
            w.write(wunary1, wunary1_len);
        }
        if w_enable && unc {
            wq_i += unc_per_chunk.min(w_cnt - wq_i);
        }
        if prev_w {
            write_fields(
                w,
                idx[wr_i..prev_wq_i].iter().map(|&i| u32::from(i) & wmask),
                wremain_bits,
            );
            wr_i = prev_wq_i;
        }
        if prev_z {
            write_fields(w, zruns[zr_i..prev_zq_i].iter().map(|&z| z & zmask), zdiv);
            zr_i = prev_zq_i;
        }
        prev_w = w_enable;
        prev_wq_i = wq_i;
        prev_z = z_enable;
        prev_zq_i = zq_i;
        if !(prev_w || prev_z) {
            break;
        }
    }
}

/// Writes `bits`-bit fields (each below `1 << bits`, `bits` <= 9),
/// gathering them into 32-bit writes.
#[inline]
fn write_fields<S: BitSink>(w: &mut S, fields: impl Iterator<Item = u32>, bits: u32) {
    if bits == 0 {
        return;
    }
    let (mut acc, mut nacc) = (0u64, 0u32);
    for f in fields {
        acc |= u64::from(f) << nacc;
        nacc += bits;
        if nacc >= 32 {
            w.write(acc, 32);
            acc >>= 32;
            nacc -= 32;
        }
    }
    w.write(acc, nacc);
}
