//! The (H, W, C) shapes of an elementwise operation's feature maps, for tensors of any rank
//! and broadcast operands.
//!
//! A batch-1 tensor of rank 4 or less keeps its natural (H, W, C) view, each operand
//! broadcasting along the axes where its extent is 1. Any other shape (rank 5 and above, a
//! batch above 1) is folded: unit output axes are dropped, and neighbouring axes along which
//! every operand either keeps its extent or broadcasts alike merge into one (outermost pairs
//! first) until three remain. An operation whose operands broadcast in more than three
//! alternating groups of axes is not supported.

use crate::LowerError;
use crate::{unsupported, Ctx, Fm, View};
use npuc_ir::{DType, OpNode, TensorId};

/// Largest extent of one feature-map axis.
const MAX_DIM: usize = 65536;

/// Operand `dims` right-aligned to `rank` (leading extents of 1 added).
fn aligned(dims: &[usize], rank: usize) -> Vec<usize> {
    let mut v = vec![1; rank.saturating_sub(dims.len())];
    v.extend_from_slice(dims);
    v
}

/// The folded axes: (output extent, per operand: broadcast along it), outermost first.
fn folded(out: &[usize], ins: &[Vec<usize>]) -> Result<Vec<(usize, Vec<bool>)>, String> {
    let mut axes: Vec<(usize, Vec<bool>)> = Vec::new();
    for (i, &n) in out.iter().enumerate() {
        if n == 1 {
            continue;
        }
        axes.push((n, ins.iter().map(|d| d[i] == 1).collect()));
    }
    while axes.len() > 3 {
        let Some(i) = (0..axes.len() - 1).find(|&i| axes[i].1 == axes[i + 1].1) else {
            return Err("operands broadcast along more than three groups of axes".into());
        };
        let next = axes.remove(i + 1);
        axes[i].0 *= next.0;
    }
    while axes.len() < 3 {
        axes.insert(0, (1, vec![false; ins.len()]));
    }
    Ok(axes)
}

/// True if the operands `ins` (of the result's rank) of a result `out` fold into three
/// groups of axes.
pub(crate) fn folds_into_three(out: &[usize], ins: &[Vec<usize>]) -> bool {
    folded(out, ins).is_ok()
}

/// (H, W, C) of a dense tensor read or written element by element with its shape unchanged:
/// the natural view for batch 1 and rank 4 or less; otherwise the depth is the last axis and
/// the leading axes fold into the height and the width (as much as possible into the height).
fn flat_dims(d: &[usize]) -> Option<(usize, usize, usize)> {
    let r = d.len();
    if r <= 3 || (r == 4 && d[0] == 1) {
        return None;
    }
    let c = d[r - 1];
    let lead = &d[..r - 1];
    let view = |k: usize| {
        let h: usize = lead[..k].iter().product();
        let w: usize = lead[k..].iter().product();
        (h, w, c)
    };
    // A view with a side above 65536 is split after lowering (`split`).
    (0..lead.len())
        .rev()
        .map(view)
        .find(|&(h, w, c)| h <= MAX_DIM && w <= MAX_DIM && c <= MAX_DIM)
        .or_else(|| Some(view(lead.len())))
        .filter(|&(h, w, c)| [h, w, c].iter().all(|&v| v <= u32::MAX as usize))
}

impl<'g> Ctx<'g> {
    /// The (H, W, C) view of `t` for an operation that keeps the shape and treats every
    /// element alike (RESCALE, TABLE, CLAMP, CAST, ...): [`flat_dims`].
    pub(crate) fn flat_hwc(
        &self,
        node: &OpNode,
        t: TensorId,
    ) -> Result<(u32, u32, u32), LowerError> {
        let d = self.dims(t);
        if d.len() <= 3 || (d.len() == 4 && d[0] == 1) {
            return self.hwc(node, t, false);
        }
        let (h, w, c) = flat_dims(d).ok_or_else(|| unsupported(node, "a dimension above 65536"))?;
        Ok((h as u32, w as u32, c as u32))
    }

    /// [`Ctx::fm`] in the [`Ctx::flat_hwc`] view.
    pub(crate) fn fm_flat(&self, node: &OpNode, t: TensorId, zp: i64) -> Result<Fm, LowerError> {
        let shape = self.flat_hwc(node, t)?;
        self.fm_shaped(node, t, shape, zp)
    }

    /// [`Ctx::ofm`] in the [`Ctx::flat_hwc`] view.
    pub(crate) fn ofm_flat(
        &mut self,
        node: &OpNode,
        t: TensorId,
        zp: i64,
    ) -> Result<Fm, LowerError> {
        let shape = self.flat_hwc(node, t)?;
        self.ofm_shaped(node, t, shape, zp)
    }

    /// An elementwise operand's feature map with zero point `zp` (shape set by
    /// [`Ctx::broadcast_layout`]).
    pub(crate) fn ew_fm(&self, node: &OpNode, t: TensorId, zp: i64) -> Result<Fm, LowerError> {
        let dtype = self.dtype(t);
        if !matches!(
            dtype,
            DType::Int8 | DType::Int16 | DType::Int32 | DType::Bool
        ) {
            return Err(unsupported(
                node,
                format!("{dtype} feature maps (only bool, i8, i16 and i32 so far)"),
            ));
        }
        if !(-128..=127).contains(&zp) || (dtype == DType::Int32 && zp != 0) {
            return Err(unsupported(node, format!("zero point {zp}")));
        }
        Ok(Fm {
            buffer: self.input_buffer(node, t)?,
            shape: (1, 1, 1),
            zero_point: zp,
            dtype,
            broadcast: (false, false, false),
            view: View::default(),
        })
    }

    /// The output feature map of an elementwise operation (bool, i8 or i16) with zero point
    /// `zp`, in a new buffer (shape set by [`Ctx::broadcast_layout`]).
    pub(crate) fn ew_ofm(&mut self, node: &OpNode, t: TensorId, zp: i64) -> Result<Fm, LowerError> {
        let dtype = self.dtype(t);
        if !matches!(
            dtype,
            DType::Int8 | DType::Int16 | DType::Int32 | DType::Bool
        ) {
            return Err(unsupported(
                node,
                format!("{dtype} results (only bool, i8, i16 and i32 so far)"),
            ));
        }
        if !(-128..=127).contains(&zp) || (dtype == DType::Int32 && zp != 0) {
            return Err(unsupported(node, format!("zero point {zp}")));
        }
        let idx = self.lowered.ops.len();
        let buffer = self.new_buffer(t, Some(idx));
        Ok(Fm {
            buffer,
            shape: (1, 1, 1),
            zero_point: zp,
            dtype,
            broadcast: (false, false, false),
            view: View::default(),
        })
    }

    /// Sets the shapes and broadcast flags of an elementwise operation writing `out` (`ofm`)
    /// from the operand tensors `ins` (`fms`, in the same order).
    pub(crate) fn broadcast_layout(
        &self,
        node: &OpNode,
        out: TensorId,
        ofm: &mut Fm,
        ins: &[TensorId],
        fms: &mut [&mut Fm],
    ) -> Result<(), LowerError> {
        let od = self.dims(out);
        let rank = od.len();
        let dims: Vec<Vec<usize>> = ins.iter().map(|&t| aligned(self.dims(t), rank)).collect();
        if dims.iter().any(|d| d.len() != rank) {
            return Err(unsupported(
                node,
                "an operand of higher rank than the result",
            ));
        }
        for d in &dims {
            if d.iter().zip(od).any(|(&a, &o)| a != o && a != 1) {
                return Err(unsupported(node, "operand shape does not broadcast"));
            }
        }
        let natural = rank <= 3 || (rank == 4 && od[0] == 1);
        let axes = if natural {
            let pad = |d: &[usize]| aligned(&d[rank.saturating_sub(3)..], 3);
            let o = pad(od);
            let ds: Vec<Vec<usize>> = dims.iter().map(|d| pad(d)).collect();
            (0..3)
                .map(|i| (o[i], ds.iter().map(|d| d[i] != o[i]).collect()))
                .collect()
        } else {
            folded(od, &dims).map_err(|e| unsupported(node, e))?
        };
        // Sides above 65536 are split after lowering (`split`).
        if axes.iter().any(|a| a.0 > u32::MAX as usize) {
            return Err(unsupported(node, "a dimension above 65536"));
        }
        let ext = |i: usize| axes[i].0 as u32;
        ofm.shape = (ext(0), ext(1), ext(2));
        for (k, fm) in fms.iter_mut().enumerate() {
            let b = (axes[0].1[k], axes[1].1[k], axes[2].1[k]);
            let e = |i: usize, b: bool| if b { 1 } else { ext(i) };
            fm.shape = (e(0, b.0), e(1, b.1), e(2, b.2));
            fm.broadcast = b;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{flat_dims, folded};

    #[test]
    fn rank_5_same_shapes_fold_the_outermost_axes() {
        let ins = vec![vec![1, 2, 3, 4, 5], vec![1, 2, 3, 4, 5]];
        let axes = folded(&[1, 2, 3, 4, 5], &ins).unwrap();
        let ext: Vec<usize> = axes.iter().map(|a| a.0).collect();
        assert_eq!(ext, [6, 4, 5]);
    }

    #[test]
    fn broadcast_groups_stay_apart() {
        // [2, 3, 4, 5, 6] + [2, 3, 1, 1, 6]: the broadcast axes 4 and 5 merge, and so do 2, 3.
        let ins = vec![vec![2, 3, 4, 5, 6], vec![2, 3, 1, 1, 6]];
        let axes = folded(&[2, 3, 4, 5, 6], &ins).unwrap();
        let got: Vec<(usize, bool)> = axes.iter().map(|a| (a.0, a.1[1])).collect();
        assert_eq!(got, [(6, false), (20, true), (6, false)]);
    }

    #[test]
    fn flat_views_keep_the_depth_and_fold_the_rest() {
        assert_eq!(flat_dims(&[1, 4, 5, 6]), None);
        assert_eq!(flat_dims(&[2, 4, 5, 6]), Some((8, 5, 6)));
        assert_eq!(flat_dims(&[2, 3, 4, 5, 6]), Some((24, 5, 6)));
        assert_eq!(flat_dims(&[300, 300, 2, 6]), Some((300, 600, 6)));
        // No fitting view: all leading axes in the height, split after lowering.
        assert_eq!(flat_dims(&[1, 65539, 1, 1, 2]), Some((65539, 1, 2)));
    }

    #[test]
    fn four_alternating_groups_are_refused() {
        let ins = vec![vec![2, 1, 4, 1], vec![1, 3, 1, 5]];
        assert!(folded(&[2, 3, 4, 5], &ins).is_err());
    }
}
