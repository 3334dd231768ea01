//! What the SWD benches share: the thread CPU clock and the synthetic streams.

/// CPU time of the calling thread in seconds (Linux `schedstat`).
pub fn thread_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e9)
}

/// Synthetic weights: per-channel blocks of Laplacian weights of varying width and
/// sparsity (magnitudes up to `max_magnitude`), some followed by zero padding, some
/// clustered.
pub fn synthetic_streams(max_magnitude: f64) -> Vec<Vec<i16>> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    (0..200)
        .map(|k| {
            let channels = 8 + (next() % 120) as usize;
            let per = 9 * (1 + (next() % 64) as usize);
            let pad = if k % 3 == 0 {
                (next() % 100) as usize
            } else {
                0
            };
            let zeros = next() % 90;
            let scale = 2.0 + (next() % 40) as f64;
            let centres: Vec<i16> = (0..16).map(|_| (next() % 200) as i16 - 100).collect();
            let mut w = Vec::with_capacity(channels * (per + pad));
            for _ in 0..channels {
                for _ in 0..per {
                    let v = if next() % 100 < zeros {
                        0
                    } else if k % 5 == 1 {
                        centres[(next() % 16) as usize]
                    } else {
                        let u = ((next() >> 11) as f64 / (1u64 << 53) as f64).max(1e-12);
                        let m = (-u.ln() * scale).min(max_magnitude) as i16;
                        if next() % 2 == 0 {
                            m
                        } else {
                            -m
                        }
                    };
                    w.push(v);
                }
                w.extend(std::iter::repeat_n(0, pad));
            }
            w
        })
        .collect()
}
