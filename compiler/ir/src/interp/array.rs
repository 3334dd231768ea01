//! The interpreter's working representation: row-major `i64` elements plus a shape, and
//! index helpers (TOSA `tensor_index_to_offset`, broadcasting).

/// A REQUIRE-style failure message (data-dependent undefined behaviour).
pub(crate) type Undef = String;

/// Row-major array of widened elements (signed types as signed values, unsigned as
/// non-negative values, bool as 0/1).
#[derive(Debug, Clone)]
pub(crate) struct Arr {
    pub shape: Vec<usize>,
    pub data: Vec<i64>,
}

/// Row-major strides.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Number of elements.
pub(crate) fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Calls `f(index, offset)` for every multi-index of `shape` in row-major order (offset is the
/// row-major position). A rank-0 shape visits one empty index.
pub(crate) fn for_each_index<E>(
    shape: &[usize],
    mut f: impl FnMut(&[usize], usize) -> Result<(), E>,
) -> Result<(), E> {
    let n = numel(shape);
    let mut idx = vec![0usize; shape.len()];
    for off in 0..n {
        f(&idx, off)?;
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(())
}

/// Strides of `in_shape` viewed through broadcasting to an output of the same rank: size-1
/// dimensions get stride 0 (TOSA `apply_broadcast`).
pub(crate) fn broadcast_strides(in_shape: &[usize], out_shape: &[usize]) -> Vec<usize> {
    let s = strides(in_shape);
    in_shape
        .iter()
        .zip(out_shape)
        .zip(s)
        .map(|((&i, &o), st)| if i == 1 && o != 1 { 0 } else { st })
        .collect()
}

/// Evaluates `f` elementwise over inputs broadcast to `out_shape`.
pub(crate) fn broadcast_map(
    out_shape: &[usize],
    inputs: &[&Arr],
    mut f: impl FnMut(&[i64]) -> Result<i64, Undef>,
) -> Result<Vec<i64>, Undef> {
    let bstrides: Vec<Vec<usize>> = inputs
        .iter()
        .map(|a| broadcast_strides(&a.shape, out_shape))
        .collect();
    let mut out = Vec::with_capacity(numel(out_shape));
    let mut vals = vec![0i64; inputs.len()];
    for_each_index::<Undef>(out_shape, |idx, _| {
        for (k, a) in inputs.iter().enumerate() {
            let off: usize = idx.iter().zip(&bstrides[k]).map(|(i, s)| i * s).sum();
            vals[k] = a.data[off];
        }
        out.push(f(&vals)?);
        Ok(())
    })?;
    Ok(out)
}

/// Checks that `v` lies in `[min, max]` (an accumulator type's range), else a REQUIRE failure
/// naming `what`.
pub(crate) fn require_range(v: i64, min: i64, max: i64, what: &str) -> Result<i64, Undef> {
    if v < min || v > max {
        Err(format!("{what}: {v} overflows [{min}, {max}]"))
    } else {
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_walk() {
        let mut seen = Vec::new();
        for_each_index::<()>(&[2, 3], |i, o| {
            seen.push((i.to_vec(), o));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen[4], (vec![1, 1], 4));
        assert_eq!(seen.len(), 6);
        let mut n = 0;
        for_each_index::<()>(&[], |_, _| {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn broadcasting() {
        let a = Arr {
            shape: vec![2, 1],
            data: vec![10, 20],
        };
        let b = Arr {
            shape: vec![1, 3],
            data: vec![1, 2, 3],
        };
        let out = broadcast_map(&[2, 3], &[&a, &b], |v| Ok(v[0] + v[1])).unwrap();
        assert_eq!(out, vec![11, 12, 13, 21, 22, 23]);
    }
}
