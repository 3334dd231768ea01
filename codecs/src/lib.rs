//! Ethos-U85 weight ordering, weight streams and scale/bias streams.
//!
//! Weight streams (TRM §3.9): [`ordering`] maps OHWI weights to the per-decoder
//! stream order, [`bitreader`] reads the LSB-first bit fields, and [`swd`]
//! holds the standard weight decoder stream format and its decoder.

pub mod bitreader;
pub mod ordering;
pub mod swd;
