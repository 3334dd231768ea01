//! The reference interpreter holds a 64-bit working copy only of the tensors still to be read
//! (issue 16 C2: it kept one of every tensor, so `npuc verify` needed 8 bytes per element of
//! every tensor of the model at once). Measured with a counting allocator.

use npuc_ir::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let n = NOW.fetch_add(l.size(), Ordering::SeqCst) + l.size();
        PEAK.fetch_max(n, Ordering::SeqCst);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        NOW.fetch_sub(l.size(), Ordering::SeqCst);
        System.dealloc(p, l)
    }
}

#[global_allocator]
static A: Counting = Counting;

/// A chain of 16 CLAMPs over a 1 MiB int8 tensor: the typed results take 17 MiB; a 64-bit
/// copy of every tensor would add 136 MiB, a copy of the live ones (one input, one output)
/// 16 MiB.
#[test]
fn a_chain_keeps_only_live_tensors_in_64_bits() {
    const N: usize = 1 << 20;
    let mut b = GraphBuilder::new("chain");
    let mut t = b.input("x", DType::Int8, [1, 1024, 1024, 1]);
    for k in 0..16 {
        t = b.op(
            &format!("clamp{k}"),
            Op::Clamp(ClampAttrs {
                min: -100 + k,
                max: 100 - k,
            }),
            &[t],
        );
    }
    b.output(t);
    let g = b.finish().unwrap();
    let x = TensorValue::from_le_bytes(DType::Int8, vec![1, 1024, 1024, 1], &vec![7u8; N]).unwrap();
    let base = NOW.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let values = run(&g, vec![x]).unwrap();
    let peak = PEAK.load(Ordering::SeqCst) - base;
    assert_eq!(values.len(), 17);
    let typed = 17 * N;
    assert!(
        peak < typed + 4 * 8 * N,
        "peak {} MiB above the {} MiB of typed results + 4 live 64-bit tensors",
        peak >> 20,
        (typed + 4 * 8 * N) >> 20
    );
}
