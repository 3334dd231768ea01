//! Table-based unary activations (int8: a 256-entry TABLE computed by evaluating TFLite's
//! reference kernel for every input value).

use super::ctx::{OpCx, R};
use crate::BuiltinOperator;

pub(crate) fn unary(cx: &mut OpCx<'_, '_>, code: BuiltinOperator) -> R<()> {
    let _ = cx;
    Err(format!("{code:?} is not lowered yet"))
}
