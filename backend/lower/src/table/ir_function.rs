//! A unary function of the IR, evaluated by the reference interpreter on every input value.
//!
//! The operators between a tensor `x` and a tensor `out` (elementwise operators with scalar
//! constants, RESHAPEs, and GATHERs from a constant `[1, K, 1]` table) are rebuilt in a
//! graph whose input holds every value of `x`'s element type, and the interpreter runs it:
//! the result is, by definition, what the original graph computes for each input value.

use crate::Ctx;
use npuc_ir::{DType, GraphBuilder, Op, OpId, ReshapeAttrs, TensorId, TensorValue};
use std::collections::BTreeMap;

impl<'g> Ctx<'g> {
    /// Every value of `x`'s (8- or 16-bit) type and what `ops` (in topological order) compute
    /// for `out` from it.
    pub(crate) fn eval_unary(
        &self,
        x: TensorId,
        ops: &[OpId],
        out: TensorId,
    ) -> Result<(Vec<i64>, Vec<i64>), String> {
        let dt = self.dtype(x);
        if !matches!(dt, DType::Int8 | DType::Int16) {
            return Err(format!("a unary function of {dt}"));
        }
        let domain: Vec<i64> = (dt.min_value()..=dt.max_value()).collect();
        let n = domain.len();
        let mut b = GraphBuilder::new("unary");
        let mut map = BTreeMap::new();
        map.insert(x, b.input("x", dt, [1, n]));
        for &o in ops {
            let node = self.node(o);
            let mapped = |t: &TensorId| map.get(t).copied();
            let y = match &node.op {
                Op::Reshape(_) | Op::Identity => mapped(&node.inputs()[0]).ok_or("reshape")?,
                Op::Gather => {
                    let v = node.inputs()[0];
                    let data = self.folded_const(v).ok_or("a GATHER from a tensor")?;
                    if data.is_empty() || self.dims(node.outputs()[0]).last() != Some(&1) {
                        return Err("a GATHER of rows".into());
                    }
                    let values = b.constant("values", [1, data.len(), 1], data.clone());
                    let idx = mapped(&node.inputs()[1]).ok_or("GATHER indices")?;
                    let g = b.op("gather", Op::Gather, &[values, idx]);
                    let shape = ReshapeAttrs {
                        shape: vec![1, n].into(),
                    };
                    b.op("flat", Op::Reshape(shape), &[g])
                }
                op => {
                    if let Op::Rescale(r) = op {
                        if r.multiplier.len() != 1 {
                            return Err("a per-channel RESCALE".into());
                        }
                    }
                    let mut ins = Vec::new();
                    for t in node.inputs() {
                        let i = match (mapped(t), self.folded_const(*t)) {
                            (Some(i), _) => i,
                            (None, Some(d)) if d.len() == 1 => b.constant("c", [1, 1], d.clone()),
                            _ => return Err(format!("{}: a tensor operand", node.name)),
                        };
                        ins.push(i);
                    }
                    b.op(&node.name, op.clone(), &ins)
                }
            };
            map.insert(node.outputs()[0], y);
        }
        let y = *map.get(&out).ok_or("the output is not computed")?;
        b.output(y);
        let g = b.finish().map_err(|e| e.to_string())?;
        let input = TensorValue::from_i64(dt, [1, n], &domain).map_err(|e| e.to_string())?;
        let r = npuc_ir::run_outputs(&g, vec![input]).map_err(|e| e.to_string())?;
        Ok((domain, r[0].to_i64_vec()))
    }
}
