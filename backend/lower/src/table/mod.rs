//! Lookup tables of the activation unit: TABLE (`activation_lut`), GATHERs from constant tables
//! with an 8-bit index (`gather_lut8`) and with a rescaled 8/16-bit index (`gather_lut16`), the
//! 16-bit interpolating LUTs and their exhaustive check (`lut16`), and the IR's unary functions
//! they are fitted to (`ir_function`).

pub(super) mod activation_lut;
pub(super) mod gather_lut16;
pub(super) mod gather_lut8;
pub(super) mod ir_function;
pub(super) mod lut16;
