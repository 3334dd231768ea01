//! The OHWI weight tensor the ordering reads.

use super::OrderingError;
use std::sync::{Arc, OnceLock};

/// Dimensions of a weight tensor in the TRM's `weight[ofm][ky][kx][ifm]` layout.
///
/// Kernel sizes are undilated (the tensor's own size, not `KERNEL_*_M1 + 1`).
/// Depthwise weights use `ifm_depth == 1` and one "OFM channel" per channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WeightShape {
    /// Output channels (O).
    pub ofm_depth: usize,
    /// Kernel height (H).
    pub kernel_height: usize,
    /// Kernel width (W).
    pub kernel_width: usize,
    /// Input channels (I); 1 for depthwise.
    pub ifm_depth: usize,
}

impl WeightShape {
    /// Number of weights.
    pub fn len(&self) -> usize {
        self.ofm_depth * self.kernel_height * self.kernel_width * self.ifm_depth
    }

    /// True if any dimension is zero.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Flat C-order index of `[o][y][x][i]`.
    pub fn index(&self, o: usize, y: usize, x: usize, i: usize) -> usize {
        ((o * self.kernel_height + y) * self.kernel_width + x) * self.ifm_depth + i
    }
}

/// Weight values (zero point already subtracted, -255..=255) in OHWI order.
///
/// Clones share the values (cloning copies no weight), and [`Self::identity`] tells clones
/// of one set apart from other sets without comparing values.
#[derive(Clone, Debug)]
pub struct OhwiWeights {
    shape: WeightShape,
    values: Arc<[i16]>,
    /// [`Self::is_sparse_2_4`], found the first time it is asked (shared by the clones: the
    /// scheduling passes ask it of every operation many times).
    sparse_2_4: Arc<OnceLock<bool>>,
}

/// Equal shapes and values (whether the sparsity was found yet does not matter).
impl PartialEq for OhwiWeights {
    fn eq(&self, other: &Self) -> bool {
        self.shape == other.shape && self.values == other.values
    }
}

impl Eq for OhwiWeights {}

impl OhwiWeights {
    /// Wraps `values` in C order over `shape` (`[O][H][W][I]`).
    ///
    /// # Errors
    /// [`OrderingError::ShapeMismatch`] if `values.len()` differs from the shape's size.
    pub fn new(shape: WeightShape, values: Vec<i16>) -> Result<Self, OrderingError> {
        if values.len() != shape.len() {
            return Err(OrderingError::ShapeMismatch {
                expected: shape.len(),
                actual: values.len(),
            });
        }
        Ok(Self {
            shape,
            values: values.into(),
            sparse_2_4: Arc::default(),
        })
    }

    /// Depthwise weights given as TFLite's `[1, KH, KW, C]` (C order), stored as
    /// `[C][KH][KW][1]`, the layout the ordering reads.
    ///
    /// # Errors
    /// [`OrderingError::ShapeMismatch`] if `values.len() != kh * kw * c`.
    pub fn from_depthwise_hwc(
        kernel_height: usize,
        kernel_width: usize,
        channels: usize,
        values: &[i16],
    ) -> Result<Self, OrderingError> {
        let shape = WeightShape {
            ofm_depth: channels,
            kernel_height,
            kernel_width,
            ifm_depth: 1,
        };
        if values.len() != shape.len() {
            return Err(OrderingError::ShapeMismatch {
                expected: shape.len(),
                actual: values.len(),
            });
        }
        let mut out = vec![0; values.len()];
        for (hwc, &v) in values.iter().enumerate() {
            let (hw, c) = (hwc / channels, hwc % channels);
            out[c * kernel_height * kernel_width + hw] = v;
        }
        Ok(Self {
            shape,
            values: out.into(),
            sparse_2_4: Arc::default(),
        })
    }

    /// The inverse of [`Self::from_depthwise_hwc`]: values as `[1, KH, KW, C]`.
    pub fn to_depthwise_hwc(&self) -> Vec<i16> {
        let s = self.shape;
        let hw = s.kernel_height * s.kernel_width;
        let mut out = vec![0; self.values.len()];
        for (c, chunk) in self.values.chunks(hw.max(1)).enumerate() {
            for (k, &v) in chunk.iter().enumerate() {
                out[k * s.ofm_depth + c] = v;
            }
        }
        out
    }

    /// The shape.
    pub fn shape(&self) -> WeightShape {
        self.shape
    }

    /// The values in OHWI C order.
    pub fn values(&self) -> &[i16] {
        &self.values
    }

    /// The address of the shared values and the shape: equal for clones of one value set,
    /// and distinct from every other set's while this one lives (a cache keyed by it keeps a
    /// clone, so that the address is not reused).
    pub fn identity(&self) -> (usize, WeightShape) {
        (self.values.as_ptr() as usize, self.shape)
    }

    /// Whether the weights satisfy TRM 3.10.63 `sparse_2_4`: every value in -127..=127 and at
    /// most two non-zero values in every group of four consecutive input channels (a last
    /// group of fewer included), for every output channel and kernel position. Found once per
    /// value set.
    pub fn is_sparse_2_4(&self) -> bool {
        *self.sparse_2_4.get_or_init(|| {
            let c = self.shape.ifm_depth.max(1);
            let v = &self.values;
            v.iter().all(|w| (-127..=127).contains(w))
                && v.chunks(c).all(|taps| {
                    taps.chunks(4)
                        .all(|g| g.iter().filter(|&&w| w != 0).count() <= 2)
                })
        })
    }

    /// Whether another clone of these values lives.
    pub fn is_shared(&self) -> bool {
        Arc::strong_count(&self.values) > 1
    }

    /// `weight[o][y][x][i]`.
    pub fn get(&self, o: usize, y: usize, x: usize, i: usize) -> i16 {
        self.values[self.shape.index(o, y, x, i)]
    }
}

#[cfg(test)]
mod tests {
    use super::{OhwiWeights, WeightShape};

    #[test]
    fn clones_share_their_values_and_identity() {
        let shape = WeightShape {
            ofm_depth: 2,
            kernel_height: 1,
            kernel_width: 1,
            ifm_depth: 2,
        };
        let a = OhwiWeights::new(shape, vec![1, -2, 3, -4]).unwrap();
        let b = OhwiWeights::new(shape, vec![1, -2, 3, -4]).unwrap();
        assert!(!a.is_shared());
        let c = a.clone();
        assert!(a.is_shared() && c.is_shared());
        assert_eq!(a.identity(), c.identity());
        // Equal values, another set: equal, but not the same identity.
        assert_eq!(a, b);
        assert_ne!(a.identity(), b.identity());
        drop(c);
        assert!(!a.is_shared());
        assert_eq!(a.values(), &[1, -2, 3, -4]);
    }

    #[test]
    fn sparse_2_4_is_two_non_zero_in_every_four_channels_of_int7_values() {
        let shape = |ifm_depth| WeightShape {
            ofm_depth: 2,
            kernel_height: 1,
            kernel_width: 1,
            ifm_depth,
        };
        let w = |ifm_depth, v: Vec<i16>| OhwiWeights::new(shape(ifm_depth), v).unwrap();
        // Groups of four input channels per output channel and kernel position.
        assert!(w(4, vec![1, 0, 0, -127, 0, 5, 6, 0]).is_sparse_2_4());
        assert!(!w(4, vec![1, 2, 3, 0, 0, 0, 0, 0]).is_sparse_2_4());
        // 128 is outside -127..=127.
        assert!(!w(4, vec![128, 0, 0, 0, 0, 0, 0, 0]).is_sparse_2_4());
        // Six channels: groups 0..4 and the last two (a group of fewer), never across the
        // output channels: [1, 1 | 0, 0, ...] starts the second channel's group.
        assert!(w(6, vec![0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0]).is_sparse_2_4());
        assert!(!w(6, vec![0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0]).is_sparse_2_4());
        // Found once, shared by clones, and equality does not depend on it.
        let a = w(4, vec![1, 2, 3, 0, 0, 0, 0, 0]);
        let b = a.clone();
        assert!(!a.is_sparse_2_4());
        assert_eq!(a, w(4, vec![1, 2, 3, 0, 0, 0, 0, 0]));
        assert!(!b.is_sparse_2_4());
    }
}
