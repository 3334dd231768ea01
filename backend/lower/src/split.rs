//! Feature maps above the 16-bit size fields: operations split until every piece fits.
//!
//! `NPU_SET_{IFM,IFM2,OFM}_{HEIGHT,WIDTH,DEPTH}_M1` hold 16 bits (TRM 3.10), so one NPU
//! operation reads and writes feature maps of at most 65536 rows, columns and channels. The
//! operators are lowered on their whole tensors; [`split_large`] then rewrites each operation
//! with a larger feature map into operations that fit (decision L46 in docs/decisions.md):
//!
//! * **Re-folding.** An operation that treats every element (ELEMENTWISE; a 1x1 POOL with a
//!   global scale) or every pixel (a 1x1 CONV, DEPTHWISE or POOL with stride 1 and no
//!   padding) alike, whose feature maps are all dense, unbroadcast and of one shape, reads the
//!   same bytes as any other height x width (x depth) of the same element (pixel) count: it
//!   becomes one operation on a factorisation whose sides fit, when there is one.
//! * **Chunking.** Otherwise the OFM is cut along the first axis that is too large into
//!   pieces of equal size (within one): each piece is the operation on a window of every
//!   feature map (offset and strides, [`View`]). A broadcast operand (size 1 along the axis)
//!   stays whole. A CONV, DEPTHWISE or POOL cut along height or width reads, for its band of
//!   OFM rows (columns), the IFM window the band needs (kernel halo included) with the
//!   operation's padding only where the window meets the edge of the IFM: the band windows
//!   of cascading (decision S8, `RowMap`), so each piece computes exactly the rows (columns)
//!   of the whole operation. Bands are short enough that their IFM windows fit too. Cutting
//!   along depth takes the matching channels of the IFM and of the per-channel scales.
//!
//! A zero-inserting IFM upscale (TRANSPOSE_CONV2D) keeps its parity: a window starting on an
//! inserted row starts a row later with one more row of padding (both read 0).
//!
//! A piece still too large (two large axes) is split again. Operations that cannot be split
//! this way (RESIZE, a nearest-neighbour IFM upscale, a CONV reading more than 65536 IFM channels) are
//! refused with the reason the lowering gave before: "a dimension above 65536".

use crate::LowerError;
use crate::RowMap;
use crate::{Buffer, Fm, Kernel, Lowered, NpuOp, Requant};
use npuc_backend::isa::{ActivationReverse, ActivationTranspose, IfmUpscaleMode, PoolingMode};
use npuc_ir::Graph;
use std::collections::BTreeMap;

/// Largest height, width or depth of a feature map (16-bit `*_M1` fields).
pub(crate) const MAX_DIM: u32 = 65536;

/// The reason an operation that cannot be split is refused with.
const TOO_LARGE: &str = "a dimension above 65536";

fn dim(shape: (u32, u32, u32), axis: usize) -> u32 {
    [shape.0, shape.1, shape.2][axis]
}

fn set_dim(shape: &mut (u32, u32, u32), axis: usize, v: u32) {
    match axis {
        0 => shape.0 = v,
        1 => shape.1 = v,
        _ => shape.2 = v,
    }
}

fn broadcast(fm: &Fm, axis: usize) -> bool {
    [fm.broadcast.0, fm.broadcast.1, fm.broadcast.2][axis]
}

/// Which operand is a scalar (`Some(true)`: IFM2, `Some(false)`: IFM): it reads no memory.
type Scalar = Option<bool>;

/// The feature maps an operation reads or writes in memory (a scalar operand is not one).
fn operands(op: &NpuOp, scalar: Scalar) -> Vec<&Fm> {
    let mut v = Vec::with_capacity(3);
    if scalar != Some(false) {
        v.push(&op.ifm);
    }
    if let Some(f) = &op.ifm2 {
        if scalar != Some(true) {
            v.push(f);
        }
    }
    v.push(&op.ofm);
    v
}

/// Whether every feature map of `op` fits the size fields. A DMA has no such fields (its
/// lengths and strides are checked where it is made: `data_movement`).
fn fits(op: &NpuOp, scalar: Scalar) -> bool {
    matches!(op.kernel, Kernel::Dma(_))
        || operands(op, scalar)
            .iter()
            .all(|f| (0..3).all(|a| dim(f.shape, a) <= MAX_DIM))
}

/// Splits every operation with a feature map above [`MAX_DIM`] along some axis; operation
/// indices (LUTs, scalars, buffer producers and last uses) follow.
pub(crate) fn split_large(g: &Graph, l: &mut Lowered) -> Result<(), LowerError> {
    let big = |i: usize, op: &NpuOp| !fits(op, l.scalars.get(&i).map(|s| s.ifm2));
    if !l.ops.iter().enumerate().any(|(i, op)| big(i, op)) {
        return Ok(());
    }
    let old = std::mem::take(&mut l.ops);
    let mut ops = Vec::with_capacity(old.len() + 1);
    let mut span = Vec::with_capacity(old.len());
    let (mut luts, mut scalars) = (BTreeMap::new(), BTreeMap::new());
    // Scratch buffers of reductions in parts (indices already final).
    let mut scratch = Vec::new();
    for (i, op) in old.into_iter().enumerate() {
        let scalar = l.scalars.get(&i).copied();
        let fit = fits(&op, scalar.map(|s| s.ifm2));
        let partial = (!fit)
            .then(|| reduce_in_parts(&op, l.buffers.len() + scratch.len()))
            .flatten();
        let pieces = if fit {
            vec![op]
        } else if let Some((pieces, size)) = partial {
            scratch.push(Buffer {
                size,
                producer: Some(ops.len()),
                last_use: Some(ops.len() + pieces.len() - 1),
                is_input: false,
                is_output: false,
            });
            pieces
        } else {
            split_op(op.clone(), scalar.map(|s| s.ifm2), 0).map_err(|reason| {
                let kind = g.find_op(&op.name).and_then(|o| g.op(o)).map_or_else(
                    || kernel_name(op.kernel).to_string(),
                    |n| n.op.kind().to_string(),
                );
                LowerError::Unsupported {
                    name: op.name.clone(),
                    kind,
                    reason: reason.to_string(),
                }
            })?
        };
        let first = ops.len();
        for p in pieces {
            if let Some(lut) = l.luts.get(&i) {
                luts.insert(ops.len(), lut.clone());
            }
            if let Some(s) = scalar {
                scalars.insert(ops.len(), s);
            }
            ops.push(p);
        }
        span.push((first, ops.len() - 1));
    }
    for b in &mut l.buffers {
        b.producer = b.producer.map(|i| span[i].0);
        b.last_use = b.last_use.map(|i| span[i].1);
    }
    l.buffers.extend(scratch);
    l.ops = ops;
    l.luts = luts;
    l.scalars = scalars;
    Ok(())
}

/// The NPU operation kind, for an operation that is not one IR operator (a part, a copy).
fn kernel_name(k: Kernel) -> &'static str {
    match k {
        Kernel::Conv => "NPU_OP_CONV",
        Kernel::Depthwise => "NPU_OP_DEPTHWISE",
        Kernel::Pool(_) => "NPU_OP_POOL",
        Kernel::Elementwise(_) => "NPU_OP_ELEMENTWISE",
        Kernel::Resize(_) => "NPU_OP_RESIZE",
        Kernel::Dma(_) => "NPU_OP_DMA_START",
    }
}

/// The pieces of `op`, each fitting.
fn split_op(op: NpuOp, scalar: Scalar, depth: usize) -> Result<Vec<NpuOp>, &'static str> {
    if fits(&op, scalar) {
        return Ok(vec![op]);
    }
    if depth > 3 || matches!(op.kernel, Kernel::Resize(_)) {
        return Err(TOO_LARGE);
    }
    if let Some(r) = refold(&op, scalar).filter(|r| fits(r, scalar)) {
        return Ok(vec![r]);
    }
    let axis = (0..3)
        .find(|&a| {
            operands(&op, scalar)
                .iter()
                .any(|f| dim(f.shape, a) > MAX_DIM && !broadcast(f, a))
        })
        .ok_or(TOO_LARGE)?;
    let mut out = Vec::new();
    for p in chunk(&op, scalar, axis)? {
        out.extend(split_op(p, scalar, depth + 1)?);
    }
    Ok(out)
}

/// A max or min pool over a whole axis above 65536 (a reduction) in parts: each part pools a
/// run of the axis into one element of a scratch feature map (the OFM with that axis as long
/// as the number of parts, same element type and zero point), and a last pool takes the
/// maximum (minimum) of the parts into the OFM. With the unit scale the pool's result is the
/// clamped extreme plus the zero point, and the clamp is monotonic, so the extreme of the
/// parts' results is the whole pool's: exact. The pieces and the scratch buffer's size.
fn reduce_in_parts(op: &NpuOp, scratch: usize) -> Option<(Vec<NpuOp>, u64)> {
    if !matches!(op.kernel, Kernel::Pool(PoolingMode::Max | PoolingMode::Min))
        || op.ifm2.is_some()
        || op.requant != (Requant::Global { scale: 1, shift: 0 })
        || op.pad != [0; 4]
        || op.ofm.shape.2 > MAX_DIM
        || op.ifm.shape.2 != op.ofm.shape.2
        || !plain(&op.ofm)
    {
        return None;
    }
    let k = [op.kernel_size.0, op.kernel_size.1];
    let axis = (0..2).find(|&a| {
        dim(op.ifm.shape, a) > MAX_DIM && dim(op.ofm.shape, a) == 1 && k[a] == dim(op.ifm.shape, a)
    })?;
    let other = 1 - axis;
    if dim(op.ifm.shape, other) > MAX_DIM || dim(op.ofm.shape, other) > MAX_DIM {
        return None;
    }
    // Pool windows: at most 65536 taps, the smaller side at most 256.
    let mut most = MAX_DIM / k[other];
    if k[other] > 256 {
        most = most.min(256);
    }
    let n = k[axis];
    let parts = n.div_ceil(most);
    let len = n.div_ceil(parts);
    if parts > MAX_DIM || k[other] * parts > MAX_DIM || (k[other] > 256 && parts > 256) {
        return None;
    }
    let mut shape = op.ofm.shape;
    set_dim(&mut shape, axis, parts);
    let mid = Fm {
        buffer: scratch,
        shape,
        view: Default::default(),
        ..op.ofm
    };
    let with_kernel = |p: &mut NpuOp, along: u32| {
        if axis == 0 {
            p.kernel_size.0 = along;
        } else {
            p.kernel_size.1 = along;
        }
    };
    let mut pieces = Vec::with_capacity(parts as usize + 1);
    let mut a0 = 0;
    let mut j = 0;
    while a0 < n {
        let a1 = (a0 + len).min(n);
        let mut p = op.clone();
        p.name = format!("{} (part {} of {parts})", op.name, j + 1);
        p.fused = Vec::new();
        p.ifm = slice(&op.ifm, axis, a0, a1 - a0);
        p.ofm = slice(&mid, axis, j, 1);
        with_kernel(&mut p, a1 - a0);
        pieces.push(p);
        a0 = a1;
        j += 1;
    }
    let mut last = op.clone();
    last.ifm = mid;
    with_kernel(&mut last, parts);
    pieces.push(last);
    let (h, w, c) = shape;
    let size = u64::from(h) * u64::from(w) * u64::from(c) * u64::from(mid.elem_bytes());
    Some((pieces, size))
}

/// Dense (no view strides other than the dense ones), written plainly, unbroadcast.
fn plain(fm: &Fm) -> bool {
    let (_, w, c) = fm.shape;
    let e = u64::from(fm.elem_bytes());
    let dense = (u64::from(w) * u64::from(c) * e, u64::from(c) * e);
    fm.view.strides.is_none_or(|s| s == dense)
        && fm.view.reverse == ActivationReverse::None
        && fm.view.transpose == ActivationTranspose::Hwc
        && fm.broadcast == (false, false, false)
}

/// `n` as `a * b` with both sides at most [`MAX_DIM`], `b` as large as possible.
fn factor2(n: u64) -> Option<(u32, u32)> {
    let m = u64::from(MAX_DIM);
    let lo = n.div_ceil(m);
    (lo..=m.min(n))
        .find(|a| n % a == 0)
        .map(|a| (a as u32, (n / a) as u32))
}

/// The operation on a re-folded shape of the same bytes, when it treats every element (or
/// every pixel) alike and one fits.
fn refold(op: &NpuOp, scalar: Scalar) -> Option<NpuOp> {
    let elementwise = matches!(op.kernel, Kernel::Elementwise(_));
    // Pool modes whose 1x1 window is the element itself (not the depth sums of ReduceSum nor
    // the index-encoding argmax modes).
    let plain_pool = matches!(
        op.kernel,
        Kernel::Pool(
            PoolingMode::Max
                | PoolingMode::Min
                | PoolingMode::Average
                | PoolingMode::Sum
                | PoolingMode::None
        )
    );
    let pointwise = !elementwise
        && (matches!(op.kernel, Kernel::Conv | Kernel::Depthwise) || plain_pool)
        && op.kernel_size == (1, 1)
        && op.stride == (1, 1)
        && op.pad == [0; 4]
        && op.upscale == IfmUpscaleMode::None
        && op.ifm2.is_none()
        && op.ifm.shape.0 == op.ofm.shape.0
        && op.ifm.shape.1 == op.ofm.shape.1;
    if !elementwise && !pointwise {
        return None;
    }
    let fms = operands(op, scalar);
    if !fms.iter().all(|f| plain(f)) {
        return None;
    }
    if elementwise && !fms.iter().all(|f| f.shape == op.ofm.shape) {
        return None;
    }
    // Depth may change only where no channel is special: elementwise, or a 1x1 pool with one
    // scale for all channels whose result is the element (max, min, average, sum of one tap).
    let any_depth = elementwise
        || (plain_pool && matches!(op.requant, Requant::Global { .. }) && op.weights.is_none());
    let (h, w, c) = op.ofm.shape;
    let pixels = u64::from(h) * u64::from(w);
    let shape = if c <= MAX_DIM {
        factor2(pixels).map(|(a, b)| (a, b, c))
    } else {
        None
    };
    let shape = shape.or_else(|| {
        if !any_depth {
            return None;
        }
        let n = pixels * u64::from(c);
        (1..=u64::from(MAX_DIM))
            .rev()
            .filter(|d| n % d == 0)
            .find_map(|d| factor2(n / d).map(|(a, b)| (a, b, d as u32)))
    })?;
    // A new depth is the IFM's too (a pool's IFM has the OFM's depth; else it is kept).
    let depth_changed = shape.2 != c;
    if depth_changed && op.ifm.shape.2 != c {
        return None;
    }
    let mut r = op.clone();
    let reshape = |f: &mut Fm, depth: u32| {
        f.view.strides = None;
        f.shape = (shape.0, shape.1, depth);
    };
    if scalar != Some(false) {
        let depth = if elementwise || depth_changed {
            shape.2
        } else {
            op.ifm.shape.2
        };
        reshape(&mut r.ifm, depth);
    }
    if let Some(f) = r.ifm2.as_mut() {
        if scalar != Some(true) {
            reshape(f, shape.2);
        }
    }
    reshape(&mut r.ofm, shape.2);
    Some(r)
}

/// `fm` restricted to elements `start..start + len` of `axis` (explicit strides: the view of
/// the whole feature map's layout).
fn slice(fm: &Fm, axis: usize, start: u32, len: u32) -> Fm {
    let mut f = *fm;
    let (sy, sx) = fm.strides();
    f.view.strides = Some((sy, sx));
    f.view.offset += u64::from(start) * [sy, sx, u64::from(fm.elem_bytes())][axis];
    set_dim(&mut f.shape, axis, len);
    f
}

/// `op` with height and width exchanged (kernel, stride, dilation, padding, OFM shape): a
/// column band's geometry as [`RowMap`] computes a row band's.
fn columns_as_rows(op: &NpuOp) -> NpuOp {
    let mut t = op.clone();
    let (h, w, c) = op.ofm.shape;
    t.ofm.shape = (w, h, c);
    t.kernel_size = (op.kernel_size.1, op.kernel_size.0);
    t.stride = (op.stride.1, op.stride.0);
    t.dilation = (op.dilation.1, op.dilation.0);
    t.pad = [op.pad[2], op.pad[3], op.pad[0], op.pad[1]];
    t
}

/// `op` cut along `axis` of its OFM into pieces that fit along that axis.
fn chunk(op: &NpuOp, scalar: Scalar, axis: usize) -> Result<Vec<NpuOp>, &'static str> {
    if op.ofm.view.reverse != ActivationReverse::None
        || op.ofm.view.transpose != ActivationTranspose::Hwc
    {
        return Err(TOO_LARGE);
    }
    let windowed = matches!(
        op.kernel,
        Kernel::Conv | Kernel::Depthwise | Kernel::Pool(_)
    );
    // A CONV's IFM2 is either its initial accumulator (OFM-shaped) or a MATMUL's B matrix.
    if op.kernel == Kernel::Conv && op.ifm2.is_some() && !op.acc_from_ifm2() {
        return Err(TOO_LARGE);
    }
    let n = dim(op.ofm.shape, axis);
    let map = if windowed && axis < 2 {
        if op.upscale == IfmUpscaleMode::Nearest {
            return Err(TOO_LARGE);
        }
        Some(RowMap::of(&if axis == 0 {
            op.clone()
        } else {
            columns_as_rows(op)
        }))
    } else {
        None
    };
    // Channels are independent in a POOL (a CONV or DEPTHWISE would need its weights cut).
    if windowed && axis == 2 && (op.weights.is_some() || !matches!(op.kernel, Kernel::Pool(_))) {
        return Err(TOO_LARGE);
    }
    // Most OFM elements of a piece along the axis: its IFM window fits too.
    let most = match map {
        Some(_) => {
            let (k, s, d) = if axis == 0 {
                (op.kernel_size.0, op.stride.0, op.dilation.0)
            } else {
                (op.kernel_size.1, op.stride.1, op.dilation.1)
            };
            let kd = (k - 1) * d + 1;
            if kd > MAX_DIM {
                return Err(TOO_LARGE);
            }
            ((MAX_DIM - kd) / s.max(1) + 1).min(MAX_DIM)
        }
        None => MAX_DIM,
    };
    let count = n.div_ceil(most);
    let size = n.div_ceil(count);
    let mut pieces = Vec::with_capacity(count as usize);
    let mut r0 = 0;
    while r0 < n {
        let r1 = (r0 + size).min(n);
        let mut p = op.clone();
        p.ofm = slice(&op.ofm, axis, r0, r1 - r0);
        // An operand of the OFM's shape along the axis (elementwise operands, the initial
        // accumulator, a channel band's IFM) takes the same elements; a broadcast one stays.
        let same = |f: &Fm| -> Result<Fm, &'static str> {
            if broadcast(f, axis) {
                Ok(*f)
            } else if dim(f.shape, axis) == n {
                Ok(slice(f, axis, r0, r1 - r0))
            } else {
                Err(TOO_LARGE)
            }
        };
        if scalar != Some(false) {
            p.ifm = match &map {
                Some(m) => {
                    let (lo, hi) = m.window(r0, r1);
                    if hi == lo {
                        return Err("a band that reads only padding");
                    }
                    let (top, bottom) = m.pads(r0, r1, (lo, hi));
                    // With zeros inserted (TRM 3.6.5 read_ifm: upscaled row `u` is IFM row
                    // `u / 2` when even, else 0), a window starting on an inserted row starts
                    // one row later with one more row of padding, which reads 0 as well.
                    let (first, top) = match op.upscale {
                        IfmUpscaleMode::Zeros => (lo.next_multiple_of(2), top + lo % 2),
                        _ => (lo, top),
                    };
                    if first >= hi {
                        return Err("a band that reads only padding");
                    }
                    let (start, rows) = match op.upscale {
                        IfmUpscaleMode::Zeros => (first / 2, (hi - first).div_ceil(2)),
                        _ => (lo, hi - lo),
                    };
                    p.pad[2 * axis] = top;
                    p.pad[2 * axis + 1] = bottom;
                    slice(&op.ifm, axis, start, rows)
                }
                None => same(&op.ifm)?,
            };
        }
        if let Some(f) = &op.ifm2 {
            if scalar != Some(true) {
                p.ifm2 = Some(same(f)?);
            }
        }
        if axis == 2 {
            if let Requant::PerChannel(v) = &op.requant {
                p.requant = Requant::PerChannel(v[r0 as usize..r1 as usize].to_vec());
            }
        }
        pieces.push(p);
        r0 = r1;
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::{factor2, refold};
    use crate::{Fm, NpuOp, View};
    use npuc_backend::isa::PoolingMode;
    use npuc_ir::DType;

    fn fm(buffer: usize, shape: (u32, u32, u32)) -> Fm {
        Fm {
            buffer,
            shape,
            zero_point: 0,
            dtype: DType::Int8,
            broadcast: (false, false, false),
            view: View::default(),
        }
    }

    #[test]
    fn a_refolded_pool_keeps_ifm_and_ofm_alike() {
        // A 1x1 max pool (a copy) over 3 x 65536 channels: the depth must change, on both.
        let op = NpuOp::pool(
            PoolingMode::Max,
            "copy".into(),
            vec![],
            fm(0, (1, 1, 3 * 65536)),
            fm(1, (1, 1, 3 * 65536)),
            (-128, 127),
        );
        let r = refold(&op, None).expect("refolds");
        assert_eq!(r.ifm.shape, r.ofm.shape);
        let (h, w, c) = r.ofm.shape;
        assert_eq!(u64::from(h) * u64::from(w) * u64::from(c), 3 * 65536);
        assert!(c <= 65536);
        // A depth-summing pool is not re-folded (its result is not the element).
        let sum = NpuOp::pool(
            PoolingMode::ReduceSum,
            "sum".into(),
            vec![],
            fm(0, (1, 1, 3 * 65536)),
            fm(1, (1, 1, 1)),
            (-128, 127),
        );
        assert!(refold(&sum, None).is_none());
    }

    #[test]
    fn factorisations_fit_and_keep_the_count() {
        assert_eq!(factor2(65539), None, "a prime above 65536 does not fold");
        assert_eq!(factor2(2 * 65537), None, "nor twice one");
        let (a, b) = factor2(3 * 65536).expect("3 x 65536");
        assert_eq!((a, b), (3, 65536));
        assert_eq!(factor2(65540), Some((2, 32770)));
        assert_eq!(factor2(12), Some((1, 12)));
    }
}
