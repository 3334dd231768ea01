//! The dataflow graph: tensors, operators, and the edges between them.
//!
//! The graph is a bipartite [`StableDiGraph`]: tensor nodes and operator nodes, with an edge
//! `tensor → op` for every operator input (weight: input slot) and `op → tensor` for every
//! output (weight: output slot). Ids stay valid when other nodes are removed. Tensors and
//! operators share one index space, so `%3` and `#4` in a dump never refer to the same node.
//!
//! Iteration is deterministic: by node index, and [`Graph::topo_order`] is Kahn's algorithm
//! that always picks the ready operator with the smallest id.

use crate::data::{DataError, TensorData};
use crate::ops::Op;
use crate::quant::Quantization;
use crate::types::{Shape, TensorType};
use crate::validate::{infer_output_types, InferError};
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;
use petgraph::Direction;
use std::collections::BTreeSet;
use std::fmt;
use thiserror::Error;

/// Identifies a tensor in a [`Graph`]. Displays as `%N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(NodeIndex);

/// Identifies an operator in a [`Graph`]. Displays as `#N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpId(NodeIndex);

impl TensorId {
    /// The underlying node index.
    pub fn index(self) -> usize {
        self.0.index()
    }
}

impl OpId {
    /// The underlying node index.
    pub fn index(self) -> usize {
        self.0.index()
    }
}

impl fmt::Display for TensorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.index())
    }
}

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.index())
    }
}

/// A tensor: name, type, optional quantization record and optional constant data.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub name: String,
    pub ty: TensorType,
    /// Descriptive only; operators never read it (see [`crate::quant`]).
    pub quant: Option<Quantization>,
    /// Present for constants (weights, biases, ...).
    pub data: Option<TensorData>,
}

impl Tensor {
    /// True if the tensor holds constant data.
    pub fn is_const(&self) -> bool {
        self.data.is_some()
    }
}

/// An operator node: name, operator, and its ordered inputs and outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct OpNode {
    pub name: String,
    pub op: Op,
    inputs: Vec<TensorId>,
    outputs: Vec<TensorId>,
}

impl OpNode {
    /// Inputs in operand order.
    pub fn inputs(&self) -> &[TensorId] {
        &self.inputs
    }

    /// Outputs in result order.
    pub fn outputs(&self) -> &[TensorId] {
        &self.outputs
    }
}

#[derive(Debug, Clone)]
enum Node {
    Tensor(Tensor),
    Op(OpNode),
}

/// Errors from graph construction and mutation.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum GraphError {
    #[error("no tensor {0}")]
    UnknownTensor(TensorId),
    #[error("no operator {0}")]
    UnknownOp(OpId),
    #[error("tensor {tensor} '{name}' is already produced by {producer}")]
    AlreadyProduced {
        tensor: TensorId,
        name: String,
        producer: OpId,
    },
    #[error("tensor {tensor} '{name}' is a constant or graph input and cannot be an op output")]
    NotWritable { tensor: TensorId, name: String },
    #[error("tensor {tensor} '{name}' is still used")]
    InUse { tensor: TensorId, name: String },
    #[error("operator {op} has no input slot {slot}")]
    NoSuchSlot { op: OpId, slot: usize },
    #[error("constant '{name}': {source}")]
    Data {
        name: String,
        #[source]
        source: DataError,
    },
    #[error("constant '{name}' has {actual} data but type {expected}")]
    DataType {
        name: String,
        expected: TensorType,
        actual: crate::types::DType,
    },
    #[error("op '{name}' ({kind}): {source}")]
    Infer {
        name: String,
        kind: &'static str,
        #[source]
        source: InferError,
    },
    #[error("the graph has a cycle")]
    Cycle,
}

/// A dataflow graph of integer tensor operators.
#[derive(Debug, Clone)]
pub struct Graph {
    name: String,
    g: StableDiGraph<Node, u32>,
    inputs: Vec<TensorId>,
    outputs: Vec<TensorId>,
}

impl Graph {
    /// An empty graph.
    pub fn new(name: impl Into<String>) -> Graph {
        Graph {
            name: name.into(),
            g: StableDiGraph::default(),
            inputs: Vec::new(),
            outputs: Vec::new(),
        }
    }

    /// The graph's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds a tensor with no producer yet (to be an op output via [`Graph::add_op`]).
    pub fn add_tensor(&mut self, name: impl Into<String>, ty: TensorType) -> TensorId {
        TensorId(self.g.add_node(Node::Tensor(Tensor {
            name: name.into(),
            ty,
            quant: None,
            data: None,
        })))
    }

    /// Adds a tensor and appends it to the graph inputs.
    pub fn add_input(&mut self, name: impl Into<String>, ty: TensorType) -> TensorId {
        let t = self.add_tensor(name, ty);
        self.inputs.push(t);
        t
    }

    /// Adds a constant tensor; its type is the data's element type and `shape`.
    pub fn add_const(
        &mut self,
        name: impl Into<String>,
        shape: impl Into<Shape>,
        data: TensorData,
    ) -> Result<TensorId, GraphError> {
        let name = name.into();
        let shape = shape.into();
        let expected = shape.num_elements().ok_or_else(|| GraphError::Data {
            name: name.clone(),
            source: DataError::TooLarge(shape.clone()),
        })?;
        if expected != data.len() {
            return Err(GraphError::Data {
                name,
                source: DataError::ElementCount {
                    shape,
                    expected,
                    actual: data.len(),
                },
            });
        }
        let ty = TensorType::new(data.dtype(), shape);
        Ok(TensorId(self.g.add_node(Node::Tensor(Tensor {
            name,
            ty,
            quant: None,
            data: Some(data),
        }))))
    }

    /// Appends a graph output.
    pub fn add_output(&mut self, t: TensorId) -> Result<(), GraphError> {
        self.check_tensor(t)?;
        self.outputs.push(t);
        Ok(())
    }

    /// Replaces the list of graph inputs.
    pub fn set_inputs(&mut self, inputs: Vec<TensorId>) -> Result<(), GraphError> {
        inputs
            .iter()
            .try_for_each(|&t| self.check_tensor(t).map(|_| ()))?;
        self.inputs = inputs;
        Ok(())
    }

    /// Replaces the list of graph outputs.
    pub fn set_outputs(&mut self, outputs: Vec<TensorId>) -> Result<(), GraphError> {
        outputs
            .iter()
            .try_for_each(|&t| self.check_tensor(t).map(|_| ()))?;
        self.outputs = outputs;
        Ok(())
    }

    /// Graph inputs, in order.
    pub fn inputs(&self) -> &[TensorId] {
        &self.inputs
    }

    /// Graph outputs, in order.
    pub fn outputs(&self) -> &[TensorId] {
        &self.outputs
    }

    fn check_tensor(&self, t: TensorId) -> Result<&Tensor, GraphError> {
        self.tensor(t).ok_or(GraphError::UnknownTensor(t))
    }

    /// Adds an operator reading `inputs` and writing `outputs` (existing tensors without a
    /// producer). Types are not checked here; see [`crate::validate()`].
    pub fn add_op(
        &mut self,
        name: impl Into<String>,
        op: Op,
        inputs: &[TensorId],
        outputs: &[TensorId],
    ) -> Result<OpId, GraphError> {
        for &t in inputs {
            self.check_tensor(t)?;
        }
        for &t in outputs {
            let tensor = self.check_tensor(t)?;
            if tensor.is_const() || self.inputs.contains(&t) {
                return Err(GraphError::NotWritable {
                    tensor: t,
                    name: tensor.name.clone(),
                });
            }
            if let Some(producer) = self.producer(t) {
                return Err(GraphError::AlreadyProduced {
                    tensor: t,
                    name: tensor.name.clone(),
                    producer,
                });
            }
        }
        let id = OpId(self.g.add_node(Node::Op(OpNode {
            name: name.into(),
            op,
            inputs: inputs.to_vec(),
            outputs: outputs.to_vec(),
        })));
        for (slot, &t) in inputs.iter().enumerate() {
            self.g.add_edge(t.0, id.0, slot as u32);
        }
        for (slot, &t) in outputs.iter().enumerate() {
            self.g.add_edge(id.0, t.0, slot as u32);
        }
        Ok(id)
    }

    /// Adds an operator and creates its single output tensor, named like the operator, with
    /// the type inferred from the inputs and attributes.
    pub fn add_op_inferred(
        &mut self,
        name: impl Into<String>,
        op: Op,
        inputs: &[TensorId],
    ) -> Result<(OpId, TensorId), GraphError> {
        let name = name.into();
        let mut types = Vec::with_capacity(inputs.len());
        for &t in inputs {
            types.push(self.check_tensor(t)?.ty.clone());
        }
        let mut out = infer_output_types(&op, &types).map_err(|source| GraphError::Infer {
            name: name.clone(),
            kind: op.kind(),
            source,
        })?;
        let ty = out.remove(0);
        let t = self.add_tensor(name.clone(), ty);
        let id = self.add_op(name, op, inputs, &[t])?;
        Ok((id, t))
    }

    /// The tensor with id `t`.
    pub fn tensor(&self, t: TensorId) -> Option<&Tensor> {
        match self.g.node_weight(t.0)? {
            Node::Tensor(x) => Some(x),
            Node::Op(_) => None,
        }
    }

    /// Mutable access to a tensor (name, type, quantization, data).
    pub fn tensor_mut(&mut self, t: TensorId) -> Option<&mut Tensor> {
        match self.g.node_weight_mut(t.0)? {
            Node::Tensor(x) => Some(x),
            Node::Op(_) => None,
        }
    }

    /// Sets a tensor's quantization record.
    pub fn set_quant(&mut self, t: TensorId, q: Quantization) -> Result<(), GraphError> {
        let tensor = self.tensor_mut(t).ok_or(GraphError::UnknownTensor(t))?;
        tensor.quant = Some(q);
        Ok(())
    }

    /// The operator with id `o`.
    pub fn op(&self, o: OpId) -> Option<&OpNode> {
        match self.g.node_weight(o.0)? {
            Node::Op(x) => Some(x),
            Node::Tensor(_) => None,
        }
    }

    /// Replaces an operator's kind/attributes, keeping its operands.
    pub fn set_op(&mut self, o: OpId, op: Op) -> Result<(), GraphError> {
        match self.g.node_weight_mut(o.0) {
            Some(Node::Op(x)) => {
                x.op = op;
                Ok(())
            }
            _ => Err(GraphError::UnknownOp(o)),
        }
    }

    /// Renames an operator.
    pub fn rename_op(&mut self, o: OpId, name: impl Into<String>) -> Result<(), GraphError> {
        match self.g.node_weight_mut(o.0) {
            Some(Node::Op(x)) => {
                x.name = name.into();
                Ok(())
            }
            _ => Err(GraphError::UnknownOp(o)),
        }
    }

    /// All tensor ids in index order.
    pub fn tensor_ids(&self) -> impl Iterator<Item = TensorId> + '_ {
        self.g
            .node_indices()
            .filter(|&n| matches!(self.g[n], Node::Tensor(_)))
            .map(TensorId)
    }

    /// All operator ids in index order.
    pub fn op_ids(&self) -> impl Iterator<Item = OpId> + '_ {
        self.g
            .node_indices()
            .filter(|&n| matches!(self.g[n], Node::Op(_)))
            .map(OpId)
    }

    /// Number of operators.
    pub fn num_ops(&self) -> usize {
        self.op_ids().count()
    }

    /// The operator producing `t`, if any.
    pub fn producer(&self, t: TensorId) -> Option<OpId> {
        self.g
            .edges_directed(t.0, Direction::Incoming)
            .next()
            .map(|e| OpId(e.source()))
    }

    /// The operators reading `t`, with the input slot, sorted by (op, slot).
    pub fn consumers(&self, t: TensorId) -> Vec<(OpId, usize)> {
        let mut v: Vec<(OpId, usize)> = self
            .g
            .edges_directed(t.0, Direction::Outgoing)
            .map(|e| (OpId(e.target()), *e.weight() as usize))
            .collect();
        v.sort();
        v
    }

    /// Finds a tensor by name (the first in index order).
    pub fn find_tensor(&self, name: &str) -> Option<TensorId> {
        self.tensor_ids()
            .find(|&t| self.tensor(t).is_some_and(|x| x.name == name))
    }

    /// Finds an operator by name (the first in index order).
    pub fn find_op(&self, name: &str) -> Option<OpId> {
        self.op_ids()
            .find(|&o| self.op(o).is_some_and(|x| x.name == name))
    }

    /// Makes input `slot` of operator `o` read `new` instead.
    pub fn replace_input(&mut self, o: OpId, slot: usize, new: TensorId) -> Result<(), GraphError> {
        self.check_tensor(new)?;
        let old = match self.g.node_weight_mut(o.0) {
            Some(Node::Op(x)) => {
                let s = x
                    .inputs
                    .get_mut(slot)
                    .ok_or(GraphError::NoSuchSlot { op: o, slot })?;
                std::mem::replace(s, new)
            }
            _ => return Err(GraphError::UnknownOp(o)),
        };
        let edge = self
            .g
            .edges_connecting(old.0, o.0)
            .find(|e| *e.weight() as usize == slot)
            .map(|e| e.id());
        if let Some(e) = edge {
            self.g.remove_edge(e);
        }
        self.g.add_edge(new.0, o.0, slot as u32);
        Ok(())
    }

    /// Makes every reader of `old` (operators and graph outputs) read `new` instead.
    pub fn replace_all_uses(&mut self, old: TensorId, new: TensorId) -> Result<(), GraphError> {
        self.check_tensor(old)?;
        self.check_tensor(new)?;
        for (o, slot) in self.consumers(old) {
            self.replace_input(o, slot, new)?;
        }
        for t in &mut self.outputs {
            if *t == old {
                *t = new;
            }
        }
        Ok(())
    }

    /// Removes an operator. Its output tensors remain, without a producer.
    pub fn remove_op(&mut self, o: OpId) -> Result<OpNode, GraphError> {
        if self.op(o).is_none() {
            return Err(GraphError::UnknownOp(o));
        }
        match self.g.remove_node(o.0) {
            Some(Node::Op(x)) => Ok(x),
            _ => Err(GraphError::UnknownOp(o)),
        }
    }

    /// Removes a tensor that no operator reads or writes and that is not a graph input or
    /// output.
    pub fn remove_tensor(&mut self, t: TensorId) -> Result<Tensor, GraphError> {
        let tensor = self.check_tensor(t)?;
        let used = self
            .g
            .edges_directed(t.0, Direction::Incoming)
            .next()
            .is_some()
            || self
                .g
                .edges_directed(t.0, Direction::Outgoing)
                .next()
                .is_some()
            || self.inputs.contains(&t)
            || self.outputs.contains(&t);
        if used {
            return Err(GraphError::InUse {
                tensor: t,
                name: tensor.name.clone(),
            });
        }
        match self.g.remove_node(t.0) {
            Some(Node::Tensor(x)) => Ok(x),
            _ => Err(GraphError::UnknownTensor(t)),
        }
    }

    /// Operators in a topological order: Kahn's algorithm, always taking the ready operator
    /// with the smallest id, so the order is deterministic and follows insertion order where
    /// the dependencies allow.
    pub fn topo_order(&self) -> Result<Vec<OpId>, GraphError> {
        let ops: Vec<OpId> = self.op_ids().collect();
        let mut pending: std::collections::HashMap<OpId, usize> = Default::default();
        let mut ready = BTreeSet::new();
        for &o in &ops {
            let deps = self.op_predecessors(o).len();
            if deps == 0 {
                ready.insert(o);
            } else {
                pending.insert(o, deps);
            }
        }
        let mut order = Vec::with_capacity(ops.len());
        while let Some(o) = ready.pop_first() {
            order.push(o);
            for succ in self.op_successors(o) {
                if let Some(n) = pending.get_mut(&succ) {
                    *n -= 1;
                    if *n == 0 {
                        pending.remove(&succ);
                        ready.insert(succ);
                    }
                }
            }
        }
        if order.len() != ops.len() {
            return Err(GraphError::Cycle);
        }
        Ok(order)
    }

    /// Distinct operators producing an input of `o`.
    fn op_predecessors(&self, o: OpId) -> BTreeSet<OpId> {
        self.op(o)
            .map(|n| n.inputs.iter().filter_map(|&t| self.producer(t)).collect())
            .unwrap_or_default()
    }

    /// Distinct operators reading an output of `o`.
    fn op_successors(&self, o: OpId) -> BTreeSet<OpId> {
        self.op(o)
            .map(|n| {
                n.outputs
                    .iter()
                    .flat_map(|&t| self.consumers(t).into_iter().map(|(c, _)| c))
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::DType;

    fn i32t(shape: &[usize]) -> TensorType {
        TensorType::new(DType::Int32, shape.to_vec())
    }

    #[test]
    fn producers_consumers_and_order() {
        let mut g = Graph::new("g");
        let x = g.add_input("x", i32t(&[2]));
        let (a, ta) = g.add_op_inferred("a", Op::Add, &[x, x]).unwrap();
        let (b, tb) = g.add_op_inferred("b", Op::Abs, &[ta]).unwrap();
        g.add_output(tb).unwrap();
        assert_eq!(g.producer(ta), Some(a));
        assert_eq!(g.consumers(x), vec![(a, 0), (a, 1)]);
        assert_eq!(g.topo_order().unwrap(), vec![a, b]);
        assert_eq!(g.tensor(ta).unwrap().ty, i32t(&[2]));
        assert!(g.tensor(TensorId(a.0)).is_none());
    }

    #[test]
    fn rewiring() {
        let mut g = Graph::new("g");
        let x = g.add_input("x", i32t(&[2]));
        let y = g.add_input("y", i32t(&[2]));
        let (a, ta) = g.add_op_inferred("a", Op::Sub, &[x, y]).unwrap();
        g.add_output(ta).unwrap();
        g.replace_input(a, 1, x).unwrap();
        assert_eq!(g.op(a).unwrap().inputs(), &[x, x]);
        assert_eq!(g.consumers(y), vec![]);
        assert_eq!(g.consumers(x), vec![(a, 0), (a, 1)]);
        g.replace_all_uses(x, y).unwrap();
        assert_eq!(g.consumers(y), vec![(a, 0), (a, 1)]);
        assert!(g.add_op("dup", Op::Abs, &[y], &[ta]).is_err());
        g.remove_op(a).unwrap();
        assert_eq!(g.producer(ta), None);
        assert!(g.remove_tensor(x).is_err()); // still a graph input
    }
}
