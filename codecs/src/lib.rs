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

pub mod bitreader;
pub mod bitwriter;
pub mod fwd;
pub mod ordering;
pub mod scale;
pub mod swd;
