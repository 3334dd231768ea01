//! Ethos-U85 weight ordering, weight streams and scale/bias streams.
//!
//! Weight streams (TRM §3.9): [`ordering`] maps OHWI weights to the per-decoder
//! stream order, [`bitreader`] reads the LSB-first bit fields, and [`swd`]
//! holds the standard weight decoder stream format and its decoder.
//!
//! Encoders: [`bitwriter`] writes LSB-first bit fields, `swd::encode` produces
//! size-optimised SWD streams, [`fwd`] encodes and decodes fast weight decoder
//! streams (TRM §3.9.11), and [`scale`] the scale and bias stream (TRM §3.7)
//! together with the quantized multiplier rule.
//!
//! [`arith`] is the scaling unit's integer arithmetic (TRM 3.6.6: rounded shifts in every
//! round mode), shared by the simulator and the compiler's lowering.
//!
//! [`isa_fields`] holds the ISA field enums these formats are parameterised by
//! (`acc_format_t`, `microblock_t`, `weight_order_t`, ...), generated from the
//! ISA table by `tools/isa-gen`; the backend's ISA module re-exports them.

pub mod arith;
pub mod bitreader;
pub mod bitwriter;
pub mod fwd;
#[rustfmt::skip]
#[allow(clippy::all, missing_docs)]
pub mod isa_fields;
pub mod ordering;
pub mod scale;
pub mod swd;
