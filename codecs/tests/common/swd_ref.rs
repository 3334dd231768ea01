//! Test-local reference SWD writer: a literal transcription of the chunk
//! syntax of TRM §3.9.10 run "backwards", with no size optimisation. It lets
//! the decoder be checked on every coding mode, including the ones Vela's
//! golden streams never use (Golomb-Rice indices, `wtrunc`, palettes,
//! non-alternating mode).

use super::bits::Bits;
use npuc_codecs::swd::{Palette, WeightIndexMode, ZeroRunMode};

/// One slice to write.
#[derive(Clone, Debug)]
pub struct RefSlice {
    /// Zero-run mode (`zdiv`).
    pub zero_run_mode: ZeroRunMode,
    /// Weight index mode (`wdiv`).
    pub weight_index_mode: WeightIndexMode,
    /// `wtrunc`.
    pub wtrunc: bool,
    /// `newpal == 1` with this palette.
    pub new_palette: Option<Palette>,
    /// Weight indices (`slicelen` of them).
    pub indices: Vec<u16>,
    /// Zero runs: `slicelen + newpal` in alternating mode, else empty.
    pub zruns: Vec<u64>,
}

/// Quotient symbols `c` of one Golomb-Rice quotient: pairs of unary bits,
/// `c` in {0, 1, 2}; 2 continues the quotient unless `wtrunc`.
fn quotient_symbols(q: u32, wtrunc: bool) -> Vec<u32> {
    if wtrunc {
        return vec![q];
    }
    let mut s = vec![2; (q / 2) as usize];
    s.push(q % 2);
    s
}

/// Writes a stream of `slices` (the palette of the previous slice applies when
/// `new_palette` is `None`) and the end of stream.
pub fn write_stream(slices: &[RefSlice]) -> Vec<u8> {
    let mut b = Bits::default();
    let mut palette: Option<Palette> = None;
    for s in slices {
        if let Some(p) = &s.new_palette {
            palette = Some(p.clone());
        }
        write_slice(
            &mut b,
            s,
            palette.as_ref().expect("first slice needs a palette"),
        );
    }
    b.end_of_stream();
    b.bytes
}

fn write_slice(b: &mut Bits, s: &RefSlice, palette: &Palette) {
    let w_cnt = s.indices.len();
    let alternating = s.zero_run_mode.is_alternating();
    let newpal = usize::from(s.new_palette.is_some());
    let z_cnt = if alternating { w_cnt + newpal } else { 0 };
    assert_eq!(s.zruns.len(), z_cnt);
    b.put(u64::from(s.zero_run_mode.zdiv()), 3);
    b.put(w_cnt as u64 - 1, 15);
    b.put(u64::from(s.weight_index_mode.wdiv()), 3);
    b.put(u64::from(s.wtrunc), 1);
    b.put(newpal as u64, 1);
    if let Some(p) = &s.new_palette {
        b.put(u64::from(p.dirofs), 5);
        b.put(u64::from(p.palsize().unwrap()), 5);
        b.put(u64::from(p.palbits().unwrap()), 3);
        for &e in &p.entries {
            b.put(u64::from(e), u32::from(p.palette_bits));
        }
    }
    let zdiv = u32::from(s.zero_run_mode.zdiv()) * u32::from(alternating);
    let zunary_len = s.zero_run_mode.zunary_len();
    let (uncompressed, wdiv) = match s.weight_index_mode {
        WeightIndexMode::GolombRice { wdiv } => (false, u32::from(wdiv)),
        WeightIndexMode::Uncompressed => (true, 0),
    };
    let wremain_bits = if uncompressed {
        palette.uncompressed_bits()
    } else {
        wdiv
    };
    // Per index, its quotient symbols; a cursor (index, symbol) walks them.
    let symbols: Vec<Vec<u32>> = s
        .indices
        .iter()
        .map(|&i| quotient_symbols(u32::from(i) >> wdiv, s.wtrunc))
        .collect();
    let (mut wq_i, mut sym_i) = (0usize, 0usize);
    let (mut zq_i, mut zq_done) = (0usize, 0u64); // zq_done: ones already written for zruns[zq_i]
    let (mut wr_i, mut zr_i) = (0usize, 0usize);
    let (mut prev_w, mut prev_wq_i, mut prev_z, mut prev_zq_i) = (false, 0, false, 0);
    loop {
        let balance = wq_i as i64 - zq_i as i64;
        let w_enable = (!alternating || balance < 8) && wq_i < w_cnt;
        let z_enable = alternating && balance >= 0 && zq_i < z_cnt;
        // Fill the 12 weight slots.
        let (mut wunary0, mut wunary1, mut n1) = (0u64, 0u64, 0u32);
        if w_enable && !uncompressed {
            for slot in 0..12 {
                if wq_i >= w_cnt {
                    break;
                }
                let c = symbols[wq_i][sym_i];
                if c > 0 {
                    wunary0 |= 1 << slot;
                    wunary1 |= u64::from(c - 1) << n1;
                    n1 += 1;
                }
                sym_i += 1;
                if sym_i == symbols[wq_i].len() {
                    wq_i += 1;
                    sym_i = 0;
                }
            }
            b.put(wunary0, 12);
        }
        if z_enable {
            let mut zunary = 0u64;
            for bit in 0..zunary_len {
                if zq_i >= z_cnt {
                    break; // padding 0 bits
                }
                if zq_done < (s.zruns[zq_i] >> zdiv) {
                    zunary |= 1 << bit;
                    zq_done += 1;
                } else {
                    zq_i += 1;
                    zq_done = 0;
                }
            }
            b.put(zunary, zunary_len);
        }
        if w_enable && !uncompressed {
            b.put(wunary1, n1);
        }
        if w_enable && uncompressed {
            wq_i += palette.uncompressed_per_chunk().min(w_cnt - wq_i);
        }
        if prev_w {
            while wr_i < prev_wq_i {
                let mask = (1u64 << wremain_bits) - 1;
                b.put(u64::from(s.indices[wr_i]) & mask, wremain_bits);
                wr_i += 1;
            }
        }
        if prev_z {
            while zr_i < prev_zq_i {
                b.put(s.zruns[zr_i] & ((1 << zdiv) - 1), zdiv);
                zr_i += 1;
            }
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
