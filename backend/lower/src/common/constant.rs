//! Tensors computed from constants alone (a RESCALE or RESHAPE of a constant, a comparison
//! operand's zero): their producers are never lowered. A consumer that reads one as a feature
//! map evaluates the constant subgraph with the reference interpreter and stores the values,
//! narrowed to the element type the operation reads, in a read-only buffer.

use crate::LowerError;
use crate::{unsupported, Ctx, Fm, NpuOp, View};
use npuc_ir::{DType, Graph, OpId, OpNode, TensorData, TensorId, TensorType, TensorValue};
use std::collections::{BTreeMap, BTreeSet};

/// The tensors of `g` an operator computes from constants alone: every output of an operator
/// (in `order`, the graph's topological order) whose every input is a constant or such a
/// tensor.
pub(crate) fn computed_constants(g: &Graph, order: &[OpId]) -> BTreeSet<TensorId> {
    let mut out = BTreeSet::new();
    for &o in order {
        let Some(node) = g.op(o) else {
            continue;
        };
        let constant =
            |t: &TensorId| out.contains(t) || g.tensor(*t).is_some_and(|x| x.data.is_some());
        if node.inputs().iter().all(constant) {
            out.extend(node.outputs().iter().copied());
        }
    }
    out
}

impl<'g> Ctx<'g> {
    /// True when `t` is a constant or every value it depends on is one.
    pub(crate) fn is_constant(&self, t: TensorId) -> bool {
        self.const_data(t).is_some() || self.computed_constants.contains(&t)
    }

    /// The values of a constant tensor (row-major), evaluated by the reference interpreter on
    /// the constant subgraph; `None` when `t` is not constant or its value is undefined.
    pub(crate) fn constant_values(&self, t: TensorId) -> Option<Vec<i64>> {
        if let Some(d) = self.const_data(t) {
            return Some(d.to_i64_vec());
        }
        if !self.is_constant(t) {
            return None;
        }
        // The producers of `t`'s ancestors, in graph order.
        let mut ops = BTreeSet::new();
        let mut stack = vec![t];
        while let Some(x) = stack.pop() {
            if self.const_data(x).is_some() {
                continue;
            }
            let p = self.g.producer(x)?;
            if ops.insert(p) {
                stack.extend(self.node(p).inputs().iter().copied());
            }
        }
        let mut sub = Graph::new("constant");
        let mut map: BTreeMap<TensorId, TensorId> = BTreeMap::new();
        for o in self.graph_order.iter().copied().filter(|o| ops.contains(o)) {
            let node = self.node(o);
            let mut ins = Vec::new();
            for &x in node.inputs() {
                let id = match map.get(&x) {
                    Some(&id) => id,
                    None => {
                        let tensor = self.g.tensor(x)?;
                        let data = tensor.data.clone()?;
                        let id = sub
                            .add_const(tensor.name.clone(), tensor.ty.shape.clone(), data)
                            .ok()?;
                        map.insert(x, id);
                        id
                    }
                };
                ins.push(id);
            }
            let mut outs = Vec::new();
            for &y in node.outputs() {
                let tensor = self.g.tensor(y)?;
                let id = sub.add_tensor(
                    tensor.name.clone(),
                    TensorType::new(tensor.ty.dtype, tensor.ty.shape.clone()),
                );
                map.insert(y, id);
                outs.push(id);
            }
            sub.add_op(node.name.clone(), node.op.clone(), &ins, &outs)
                .ok()?;
        }
        sub.add_output(*map.get(&t)?).ok()?;
        let out = npuc_ir::run_outputs(&sub, Vec::new()).ok()?;
        out.first().map(TensorValue::to_i64_vec)
    }

    /// A feature map reading the constant `t` as `dtype` (zero point 0) from a new read-only
    /// buffer; every value must fit `dtype`. Elementwise operands only: the shape is set by
    /// [`Ctx::broadcast_layout`].
    pub(crate) fn constant_fm(
        &mut self,
        node: &OpNode,
        t: TensorId,
        dtype: DType,
    ) -> Result<Fm, LowerError> {
        let values = self
            .constant_values(t)
            .ok_or_else(|| unsupported(node, "a constant operand has no defined value"))?;
        if let Some(v) = values.iter().find(|&&v| !dtype.contains(v)) {
            return Err(unsupported(
                node,
                format!("constant operand value {v} does not fit {dtype}"),
            ));
        }
        let data = TensorData::from_i64(dtype, &values)
            .map_err(|e| unsupported(node, format!("constant operand: {e}")))?;
        let buffer = self.anonymous_constant(data.to_le_bytes());
        Ok(Fm {
            buffer,
            shape: (1, 1, 1),
            zero_point: 0,
            dtype,
            broadcast: (false, false, false),
            view: View::default(),
        })
    }

    /// A read-only buffer holding the bytes of the constant `t` as its element type stores
    /// them (a bool as one byte 0 or 1), evaluated like any constant operand: the source of
    /// data movement, which copies bytes whatever the type.
    pub(crate) fn constant_bytes(
        &mut self,
        node: &OpNode,
        t: TensorId,
    ) -> Result<usize, LowerError> {
        let dtype = match self.dtype(t) {
            DType::Bool => DType::Int8,
            d @ (DType::Int8 | DType::Int16 | DType::Int32) => d,
            d => return Err(unsupported(node, format!("a {d} constant operand"))),
        };
        let values = self
            .constant_values(t)
            .ok_or_else(|| unsupported(node, "a constant operand has no defined value"))?;
        let data = TensorData::from_i64(dtype, &values)
            .map_err(|e| unsupported(node, format!("constant operand: {e}")))?;
        Ok(self.anonymous_constant(data.to_le_bytes()))
    }

    /// The feature map of an elementwise operand with zero point `zp`: the tensor's buffer
    /// (bool, i8 or i16; a bool is a byte 0 or 1), or, for a constant without one, the
    /// constant's values stored as `const_dtype`. The shape is set by
    /// [`Ctx::broadcast_layout`].
    pub(crate) fn operand_fm(
        &mut self,
        node: &OpNode,
        t: TensorId,
        const_dtype: DType,
        zp: i64,
    ) -> Result<Fm, LowerError> {
        if !self.lowered.tensor_buffer.contains_key(&t) && self.is_constant(t) {
            let mut fm = self.constant_fm(node, t, const_dtype)?;
            fm.zero_point = zp;
            return Ok(fm);
        }
        let dtype = self.dtype(t);
        if !matches!(
            dtype,
            DType::Bool | DType::Int8 | DType::Int16 | DType::Int32
        ) || (dtype == DType::Int32 && zp != 0)
        {
            return Err(unsupported(
                node,
                format!("{dtype} operand (only bool, i8, i16 and i32 so far)"),
            ));
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
}

/// A height, width, depth of `n` elements, each at most 65536 (None when there is none).
fn flat_hwc_of(n: usize) -> Option<(u32, u32, u32)> {
    const MAX: usize = 65536;
    let largest_divisor = |m: usize| (1..=m.min(MAX)).rev().find(|d| m % d == 0);
    let c = largest_divisor(n)?;
    let w = largest_divisor(n / c)?;
    let h = n / c / w;
    (h <= MAX).then_some((h as u32, w as u32, c as u32))
}

impl Ctx<'_> {
    /// A graph output whose value is a constant (a CONST graph, a RESHAPE of a constant):
    /// its values, evaluated like any constant operand, are stored in a read-only buffer and
    /// copied into a new buffer of the output by a 1x1 max pool. Bool values are copied as
    /// bytes, i48 values as 8-byte words (two i32 each). The output's buffer, or an error naming
    /// the output.
    pub(crate) fn constant_output(&mut self, t: TensorId) -> Result<usize, LowerError> {
        let tensor = self.g.tensor(t).expect("tensor");
        let name = tensor.name.clone();
        let refuse = |why: &str| LowerError::Graph(format!("output {name} is a constant: {why}"));
        let dtype = tensor.ty.dtype;
        let fm_dtype = match dtype {
            DType::Bool => DType::Int8,
            DType::Int8 | DType::Int16 | DType::Int32 => dtype,
            // i48 values are held as 8-byte words (decision L33), copied as pairs of i32.
            DType::Int48 => DType::Int32,
            _ => return Err(refuse(&format!("{dtype} constants cannot be copied"))),
        };
        let mut values = self
            .constant_values(t)
            .ok_or_else(|| refuse("its value is not defined"))?;
        if dtype == DType::Int48 {
            values = values
                .iter()
                .flat_map(|&v| [i64::from(v as u32 as i32), v >> 32])
                .collect();
        }
        let data = TensorData::from_i64(fm_dtype, &values).map_err(|e| refuse(&e.to_string()))?;
        let Some(shape) = flat_hwc_of(values.len()) else {
            return self.constant_output_bytes(t, data.to_le_bytes());
        };
        let src = self.anonymous_constant(data.to_le_bytes());
        let fm = |buffer| Fm {
            buffer,
            shape,
            zero_point: 0,
            dtype: fm_dtype,
            broadcast: (false, false, false),
            view: View::default(),
        };
        let op = self.lowered.ops.len();
        let dst = if dtype == DType::Int48 {
            let dst = self.scratch(values.len() as u64 * 4);
            self.lowered.tensor_buffer.insert(t, dst);
            dst
        } else {
            self.new_buffer(t, Some(op))
        };
        self.push(NpuOp::copy(
            name.clone(),
            vec![name],
            fm(src),
            fm(dst),
            (fm_dtype.min_value(), fm_dtype.max_value()),
        ));
        Ok(dst)
    }
}

impl Ctx<'_> {
    /// A constant output whose element count has no height, width, depth of at most 65536
    /// each (a prime factor above 65536): its bytes are copied as int8 in rows of 65536 bytes
    /// and a remainder (decision L41). An output with no elements is refused.
    fn constant_output_bytes(&mut self, t: TensorId, bytes: Vec<u8>) -> Result<usize, LowerError> {
        const ROW: usize = 65536;
        let name = self.g.tensor(t).expect("tensor").name.clone();
        let total = bytes.len();
        if total == 0 {
            return Err(LowerError::Graph(format!(
                "output {name} is a constant with no elements"
            )));
        }
        let head = total / ROW;
        // `head` rows of 65536 bytes as a height and width of at most 65536 each.
        let w = (1..=head.min(ROW))
            .rev()
            .find(|d| head % d == 0)
            .unwrap_or(1);
        if head / w > ROW {
            return Err(LowerError::Graph(format!(
                "output {name} is a constant: no feature map shape holds its {total} bytes"
            )));
        }
        let src = self.anonymous_constant(bytes);
        let op = self.lowered.ops.len();
        let dst = self.new_buffer(t, Some(op));
        let fm = |buffer, offset, shape: (u32, u32, u32)| Fm {
            buffer,
            shape,
            zero_point: 0,
            dtype: DType::Int8,
            broadcast: (false, false, false),
            view: View {
                offset,
                ..View::default()
            },
        };
        let mut parts = Vec::new();
        if head > 0 {
            parts.push((0u64, ((head / w) as u32, w as u32, ROW as u32)));
        }
        if total % ROW != 0 {
            parts.push(((head * ROW) as u64, (1, 1, (total % ROW) as u32)));
        }
        for (offset, shape) in parts {
            self.push(NpuOp::copy(
                name.clone(),
                vec![name.clone()],
                fm(src, offset, shape),
                fm(dst, offset, shape),
                (-128, 127),
            ));
        }
        Ok(dst)
    }
}

#[cfg(test)]
mod tests {
    use super::computed_constants;
    use npuc_ir::{DType, GraphBuilder, Op};

    #[test]
    fn a_tensor_is_computed_from_constants_when_every_input_is_one() {
        // c + c and |c + c| are constants; x + (c + c) and |x + (c + c)| are not, nor is x.
        let mut b = GraphBuilder::new("constants");
        let x = b.input("x", DType::Int32, [1, 2, 2, 4]);
        let c = b.const_i32("c", [1, 2, 2, 4], &[3; 16]);
        let cc = b.op("cc", Op::Add, &[c, c]);
        let abs_cc = b.op("abs_cc", Op::Abs, &[cc]);
        let xcc = b.op("xcc", Op::Add, &[x, cc]);
        let abs_xcc = b.op("abs_xcc", Op::Abs, &[xcc]);
        b.output(abs_cc).output(abs_xcc);
        let g = b.finish().unwrap();
        let order = g.topo_order().unwrap();
        let found = computed_constants(&g, &order);
        assert!(found.contains(&cc) && found.contains(&abs_cc));
        assert!(!found.contains(&xcc) && !found.contains(&abs_xcc) && !found.contains(&x));
        // The constant itself is data, not computed.
        assert!(!found.contains(&c));
    }
}
