//! # npuc-ir: graph IR, operator set, quantization and reference interpreter
//!
//! Frontends (TFLite, TOSA) lower models into a [`Graph`]; compiler passes transform it; the
//! reference interpreter ([`interp::run`]) defines the exact output bytes every compiled model
//! must reproduce.
//!
//! ## Types
//! * [`DType`] — element types `bool`, `i8`, `u8`, `i16`, `u16`, `i32`, `i48`, `i64`;
//!   [`Shape`] — row-major extents; [`TensorType`] — both.
//! * [`TensorData`] — compact typed storage (one `Vec` per element type, `i48` in `i64`),
//!   with little-endian byte conversion; [`TensorValue`] — shape + data.
//! * [`Quantization`] — descriptive per-tensor / per-axis scale and zero point.
//! * [`Graph`] — a petgraph bipartite dataflow graph of [`Tensor`]s and [`OpNode`]s with typed
//!   ids [`TensorId`] (`%N`) and [`OpId`] (`#N`), graph inputs/outputs, constants, names,
//!   rewiring helpers and a deterministic [`Graph::topo_order`].
//! * [`Op`] — one variant per operator with typed attribute structs ([`ops::attrs`]).
//! * [`GraphBuilder`] — sticky-error builder inferring output types (for tests/frontends).
//!
//! ## Semantics
//! The operator set is TOSA 1.0 PRO-INT + EXT-INT16 + EXT-DOUBLEROUND, with these documented
//! differences:
//! * Compile-time operands (zero points, RESCALE multiplier/shift, MUL shift, TABLE, PAD /
//!   RESHAPE / SLICE / TILE / RESIZE parameters) are attributes, not tensors.
//! * Convolution-like operators ([`Op::Conv2d`], [`Op::DepthwiseConv2d`],
//!   [`Op::TransposeConv2d`], [`Op::FullyConnected`], [`Op::MatMul`]) output the raw
//!   accumulator (`i32` for `i8` inputs, `i48` for `i16` inputs). Requantization is an explicit
//!   [`Op::Rescale`] carrying [`RescaleRounding`]: `DoubleRound` for TFLite conv / depthwise /
//!   elementwise (gemmlowp's SaturatingRoundingDoublingHighMul + RoundingDivideByPOT),
//!   `SingleRound` for TFLite fully-connected per-channel and 16-bit paths. Fused activations
//!   are explicit [`Op::Clamp`]s.
//! * [`Op::AvgPool2d`] carries [`AvgPoolRounding`]: TOSA's reciprocal multiply or TFLite's exact
//!   division rounded half away from zero.
//! * Added operator: [`Op::FullyConnected`]; [`Op::MatMul`] accepts any rank ≥ 2 with
//!   broadcast batch dimensions; ADD/SUB/MUL/MIN/MAX/comparisons also accept `i8`/`i16`;
//!   `u8`/`u16` tensors stand for RESCALE's unsigned flags.
//! * Window operators use floor division for the output size where TOSA demands an exact
//!   division ([`validate::window_out`]).
//!
//! ## Decisions where the TOSA text is ambiguous or wrong
//! (Section numbers are those of the spec tree in `shared/specs/tosa`.)
//! * §2.13.4 RESCALE reads `value = sign_extend<int48_t>(value)`; it means `in_value`.
//! * §2.10.2 PAD tests `index[i] >= length(shape[i])`; it means the input index is past the
//!   input extent (the usual padding semantics).
//! * `DoubleRound` is TOSA's single-add formulation; it equals gemmlowp's two steps exactly,
//!   including the asymmetry they inherit (multiplier `2^30`, shift 33 maps 3 to 1 but -3 to
//!   0), as the property tests check.
//! * `apply_scale_32`'s value window (`|value| < 2^(shift-1)`) is enforced: outside it the
//!   result is [`interp::InterpError::Undefined`], even where TFLite's left-shift-then-multiply
//!   would still be defined (`2^(shift-1) <= |value| < 2^shift`).
//! * Accumulating operators REQUIRE every partial sum (in the pseudocode's loop order) to fit
//!   the accumulator, not just the total.
//! * MUL on `i32` with `shift == 0` keeps the low 32 bits of the product (as `apply_mul_s`
//!   does); with `shift > 0` the rounded result must fit.
//! * ARGMAX returns the first index of the maximum; LOGICAL_RIGHT_SHIFT works on the operand's
//!   own width; CAST from `u8`/`u16` zero-extends.
//!
//! ## Checking and running
//! * [`validate()`] — structural checks and per-operator type inference
//!   ([`validate::infer_output_types`]); errors name the operator and tensor.
//! * [`dump()`] — stable text form, one line per input/constant/operator/output.
//! * [`interp::run`] — executes a validated graph and returns every computed tensor keyed by
//!   [`TensorId`] in execution order; data-dependent undefined behaviour (TOSA `REQUIRE`:
//!   overflow, bad shift, index out of range) is an [`interp::InterpError::Undefined`].
//!   [`interp::first_mismatch`] finds the first differing tensor between two runs.
//! * [`quant`] — the exact scaling arithmetic (`apply_scale_32/16`, `reciprocal_scale`) and
//!   helpers to turn real scales into multiplier/shift pairs.

pub mod builder;
pub mod data;
pub mod dump;
pub mod graph;
pub mod interp;
pub mod ops;
pub mod quant;
pub mod types;
pub mod validate;

pub use builder::{BuildError, GraphBuilder};
pub use data::{DataError, TensorData, TensorValue};
pub use dump::dump;
pub use graph::{Graph, GraphError, OpId, OpNode, Tensor, TensorId};
pub use interp::{first_mismatch, run, run_outputs, InterpError, Values};
pub use ops::*;
pub use quant::{Quantization, RescaleRounding};
pub use types::{DType, Shape, TensorType};
pub use validate::{validate, ValidationError};
