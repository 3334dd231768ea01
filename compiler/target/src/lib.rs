//! The target seam of npuc: what the driver (`npuc`) and an NPU target share.
//!
//! [`arch_interface`] is the [`arch_interface::Target`] trait the driver's passes see and its
//! target-neutral value types (decisions A1-A3 in `docs/decisions.md`); [`payload`] is the
//! target-tagged program a compiled model carries; [`alloc`] (feature-map placement by
//! liveness over any `LoweredView`) and [`objective`] (what scheduling minimises, decision
//! S11) are the parts of the schedule framework every target's passes share. The crate depends on the IR and the codecs
//! only: a target implements the trait without depending on the driver, and the driver
//! re-exports both modules under the same paths (`npuc::arch_interface`, `npuc::payload`).

pub mod alloc;
pub mod arch_interface;
pub mod objective;
pub mod parallel;
pub mod payload;
