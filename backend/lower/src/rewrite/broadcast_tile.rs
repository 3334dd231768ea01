//! Elementwise operations whose operands broadcast along more than three alternating groups
//! of axes (a graph rewrite before lowering).
//!
//! An NPU elementwise operation sees its feature maps as (H, W, C), each operand either full
//! or broadcast along each of the three axes ([`crate::elementwise::broadcast`]). When the folded axes of
//! an operation cannot be merged into three groups, some broadcast operands are first
//! expanded to the result's shape by a TILE (TOSA §2.10.7: a copy, exact for every element
//! type); the cheapest set of operands (fewest tiled elements) whose expansion leaves at most
//! three groups is chosen. The operation then reads the tiled tensors unchanged.

use super::dims;
use crate::elementwise::broadcast::folds_into_three;
use crate::LowerError;
use npuc_ir::{Graph, Op, OpId, TileAttrs};

/// Elementwise operators whose operands broadcast (every input has the result's rank).
fn broadcasts(op: &Op) -> bool {
    op.is_elementwise_binary() || matches!(op, Op::Select)
}

/// The operands to tile (by input slot), or `None` if the operation folds as it is.
fn tiled_slots(out: &[usize], ins: &[Vec<usize>]) -> Option<Vec<usize>> {
    let rank = out.len();
    let natural = rank <= 3 || (rank == 4 && out[0] == 1);
    if natural || ins.iter().any(|d| d.len() != rank) || folds_into_three(out, ins) {
        return None;
    }
    let n = ins.len();
    let mut best: Option<(usize, Vec<usize>)> = None;
    for mask in 1u32..(1 << n) {
        let slots: Vec<usize> = (0..n).filter(|&k| mask & (1 << k) != 0).collect();
        if slots.iter().any(|&k| ins[k] == out) {
            continue;
        }
        let expanded: Vec<Vec<usize>> = (0..n)
            .map(|k| {
                if slots.contains(&k) {
                    out.to_vec()
                } else {
                    ins[k].clone()
                }
            })
            .collect();
        if !folds_into_three(out, &expanded) {
            continue;
        }
        let cost = slots.len() * out.iter().product::<usize>();
        if best.as_ref().is_none_or(|(c, _)| cost < *c) {
            best = Some((cost, slots));
        }
    }
    best.map(|(_, s)| s)
}

/// `g` with the operands of every over-broadcast elementwise operation tiled, or `None` if
/// no operation needs it.
pub(crate) fn rewrite(g: &Graph) -> Result<Option<Graph>, LowerError> {
    let mut todo: Vec<(OpId, Vec<usize>)> = Vec::new();
    for o in g.op_ids() {
        let node = g.op(o).expect("op");
        if !broadcasts(&node.op) {
            continue;
        }
        let out = dims(g, node.outputs()[0]);
        let ins: Vec<Vec<usize>> = node.inputs().iter().map(|&t| dims(g, t)).collect();
        if let Some(slots) = tiled_slots(&out, &ins) {
            todo.push((o, slots));
        }
    }
    if todo.is_empty() {
        return Ok(None);
    }
    let err = |e: npuc_ir::GraphError| LowerError::Graph(e.to_string());
    let mut g = g.clone();
    for (o, slots) in todo {
        let node = g.op(o).expect("op").clone();
        let out = dims(&g, node.outputs()[0]);
        for k in slots {
            let x = node.inputs()[k];
            let d = dims(&g, x);
            let multiples = out.iter().zip(&d).map(|(&o, &i)| o / i).collect();
            let (_, t) = g
                .add_op_inferred(
                    format!("{}/tile{k}", node.name),
                    Op::Tile(TileAttrs { multiples }),
                    &[x],
                )
                .map_err(err)?;
            g.replace_input(o, k, t).map_err(err)?;
        }
    }
    Ok(Some(g))
}

#[cfg(test)]
mod tests {
    use super::{folds_into_three, tiled_slots};

    #[test]
    fn foldable_operations_are_left_alone() {
        let out = [2, 3, 4, 5];
        assert_eq!(
            tiled_slots(&out, &[vec![2, 3, 4, 5], vec![2, 3, 1, 1]]),
            None
        );
        // batch 1 rank 4: the natural view, always supported
        assert_eq!(
            tiled_slots(&[1, 3, 4, 5], &[vec![1, 1, 4, 1], vec![1, 3, 1, 5]]),
            None
        );
    }

    #[test]
    fn alternating_groups_tile_the_cheapest_operand() {
        // [2,3,1,4,5] + [1,3,2,1,5]: five groups; tiling either operand leaves three.
        let out = [2, 3, 2, 4, 5];
        let slots = tiled_slots(&out, &[vec![2, 3, 1, 4, 5], vec![1, 3, 2, 1, 5]]).unwrap();
        assert_eq!(slots.len(), 1);
        // SELECT [1,4,1,6] ? [2,4,5,6] : [1,1,5,1]
        let out = [2, 4, 5, 6];
        let ins = [vec![1, 4, 1, 6], vec![2, 4, 5, 6], vec![1, 1, 5, 1]];
        let slots = tiled_slots(&out, &ins).unwrap();
        let expanded: Vec<Vec<usize>> = (0..3)
            .map(|k| {
                if slots.contains(&k) {
                    out.to_vec()
                } else {
                    ins[k].clone()
                }
            })
            .collect();
        assert!(folds_into_three(&out, &expanded));
        assert!(!slots.contains(&1), "the full operand is never tiled");
    }
}
