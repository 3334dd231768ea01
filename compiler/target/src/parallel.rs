//! Independent work spread over the machine's threads, with results in the items' order
//! (the output does not depend on which thread computes what).

/// `f(i, &items[i])` for every item, in order, computed on up to `available_parallelism`
/// threads that take the next item as they finish one. The results do not depend on which
/// thread computes what, so the output is the sequential one.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(usize, &T) -> R + Sync) -> Vec<R> {
    map_heaviest_first(items, |_| 0, f)
}

/// [`map`] with the items taken heaviest first by `weight` (an estimate of their work;
/// ties in order), so that the threads finish close together: a heavy item taken last
/// would leave the other threads idle. The output is in the items' order, as [`map`]'s.
pub fn map_heaviest_first<T: Sync, R: Send>(
    items: &[T],
    weight: impl Fn(&T) -> u64,
    f: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(items.len());
    if threads <= 1 {
        return items.iter().enumerate().map(|(i, t)| f(i, t)).collect();
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(weight(&items[i])), i));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut out = Vec::new();
        loop {
            let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(&i) = order.get(n) else {
                return out;
            };
            out.push((i, f(i, &items[i])));
        }
    };
    // The calling thread is one of the workers: one thread fewer to start, and its
    // allocator's memory is reused.
    let parts: Vec<Vec<(usize, R)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let own = work();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .chain(std::iter::once(own))
            .collect()
    });
    let mut slots: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    for (i, r) in parts.into_iter().flatten() {
        slots[i] = Some(r);
    }
    slots.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::{map, map_heaviest_first};

    #[test]
    fn the_results_are_in_the_items_order_whatever_order_the_work_is_taken_in() {
        let items: Vec<u64> = (0..100).map(|i| (i * 37) % 101).collect();
        let sequential: Vec<(usize, u64)> = items.iter().map(|&x| (x as usize, x * x)).collect();
        let f = |i: usize, &x: &u64| {
            assert_eq!(items[i], x);
            (x as usize, x * x)
        };
        assert_eq!(map(&items, f), sequential);
        assert_eq!(map_heaviest_first(&items, |&x| x, f), sequential);
        assert_eq!(map_heaviest_first(&items, |&x| 100 - x, f), sequential);
        assert!(map(&[] as &[u64], f).is_empty());
    }
}
