//! The fixtures' `.npy` arrays through the workspace's shared reader
//! (`npuc_test_support::npy`), in the form these tests use: elements widened to `f64`
//! (exact for the fixture types) plus exact integer views.

use npuc_test_support::npy;

/// An array read from a `.npy` file.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    /// Dimensions.
    pub shape: Vec<usize>,
    /// Elements in C order, widened to `f64`.
    pub data: Vec<f64>,
    raw: npy::Array,
}

impl NpyArray {
    /// Elements converted to i16; panics if any is not an integer in range.
    pub fn to_i16(&self) -> Vec<i16> {
        self.to_i64()
            .into_iter()
            .map(|v| i16::try_from(v).expect("element fits i16"))
            .collect()
    }

    /// Elements of an integer array, exactly; panics for float arrays.
    #[allow(dead_code)]
    pub fn to_i64(&self) -> Vec<i64> {
        self.raw.to_i64().expect("integer array")
    }
}

/// Reads an `.npy` file; panics with a message on anything unsupported.
pub fn read_npy(path: &std::path::Path) -> NpyArray {
    let raw = npy::read(path).unwrap_or_else(|e| panic!("{e}"));
    NpyArray {
        shape: raw.shape.clone(),
        data: raw.to_f64(),
        raw,
    }
}
