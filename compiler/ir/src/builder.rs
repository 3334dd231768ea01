//! A convenience builder for writing graphs (in tests and frontends).
//!
//! Every method returns a plain [`TensorId`]; the first error is remembered ("sticky") and
//! reported by [`GraphBuilder::finish`], which also validates the graph. After an error the
//! builder keeps handing out placeholder tensors so call chains need no `?`.
//!
//! ```
//! use npuc_ir::*;
//! let mut b = GraphBuilder::new("relu6");
//! let x = b.input("x", DType::Int8, [1, 4]);
//! let y = b.op("clamp", Op::Clamp(ClampAttrs { min: 0, max: 6 }), &[x]);
//! b.output(y);
//! let g = b.finish().unwrap();
//! assert_eq!(g.num_ops(), 1);
//! ```

use crate::data::TensorData;
use crate::graph::{Graph, GraphError, TensorId};
use crate::ops::Op;
use crate::quant::Quantization;
use crate::types::{DType, Shape, TensorType};
use crate::validate::{validate, ValidationError};
use thiserror::Error;

/// Why [`GraphBuilder::finish`] failed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum BuildError {
    #[error(transparent)]
    Graph(#[from] GraphError),
    #[error(transparent)]
    Invalid(#[from] ValidationError),
}

/// Builds a [`Graph`] with inferred operator output types.
#[derive(Debug)]
pub struct GraphBuilder {
    g: Graph,
    error: Option<GraphError>,
}

impl GraphBuilder {
    /// An empty graph named `name`.
    pub fn new(name: impl Into<String>) -> GraphBuilder {
        GraphBuilder {
            g: Graph::new(name),
            error: None,
        }
    }

    fn placeholder(&mut self, e: GraphError) -> TensorId {
        if self.error.is_none() {
            self.error = Some(e);
        }
        self.g
            .add_tensor("<error>", TensorType::new(DType::Int32, [1]))
    }

    /// Adds a graph input.
    pub fn input(&mut self, name: &str, dtype: DType, shape: impl Into<Shape>) -> TensorId {
        self.g.add_input(name, TensorType::new(dtype, shape))
    }

    /// Adds a constant.
    pub fn constant(&mut self, name: &str, shape: impl Into<Shape>, data: TensorData) -> TensorId {
        match self.g.add_const(name, shape, data) {
            Ok(t) => t,
            Err(e) => self.placeholder(e),
        }
    }

    /// Adds an `i8` constant.
    pub fn const_i8(&mut self, name: &str, shape: impl Into<Shape>, v: &[i8]) -> TensorId {
        self.constant(name, shape, TensorData::I8(v.to_vec()))
    }

    /// Adds an `i16` constant.
    pub fn const_i16(&mut self, name: &str, shape: impl Into<Shape>, v: &[i16]) -> TensorId {
        self.constant(name, shape, TensorData::I16(v.to_vec()))
    }

    /// Adds an `i32` constant.
    pub fn const_i32(&mut self, name: &str, shape: impl Into<Shape>, v: &[i32]) -> TensorId {
        self.constant(name, shape, TensorData::I32(v.to_vec()))
    }

    /// Adds an `i48` constant (values must fit 48 bits).
    pub fn const_i48(&mut self, name: &str, shape: impl Into<Shape>, v: &[i64]) -> TensorId {
        match TensorData::from_i64(DType::Int48, v) {
            Ok(d) => self.constant(name, shape, d),
            Err(source) => self.placeholder(GraphError::Data {
                name: name.into(),
                source,
            }),
        }
    }

    /// Adds an operator with an inferred output tensor named `name`; returns the output.
    pub fn op(&mut self, name: &str, op: Op, inputs: &[TensorId]) -> TensorId {
        match self.g.add_op_inferred(name, op, inputs) {
            Ok((_, t)) => t,
            Err(e) => self.placeholder(e),
        }
    }

    /// Sets a tensor's quantization record.
    pub fn quant(&mut self, t: TensorId, q: Quantization) -> &mut Self {
        if let Err(e) = self.g.set_quant(t, q) {
            self.placeholder(e);
        }
        self
    }

    /// Appends a graph output.
    pub fn output(&mut self, t: TensorId) -> &mut Self {
        if let Err(e) = self.g.add_output(t) {
            self.placeholder(e);
        }
        self
    }

    /// The graph built so far.
    pub fn graph(&self) -> &Graph {
        &self.g
    }

    /// Returns the graph after checking it with [`validate`], or the first error.
    pub fn finish(self) -> Result<Graph, BuildError> {
        if let Some(e) = self.error {
            return Err(e.into());
        }
        validate(&self.g)?;
        Ok(self.g)
    }
}
