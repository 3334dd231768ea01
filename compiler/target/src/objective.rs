//! What the scheduling passes minimise (decision S11): the cost model's cycles plus a price
//! for every byte moved off-chip (DRAM or flash).
//!
//! An off-chip byte costs far more energy than a MAC, and a schedule that re-reads its input
//! or its weights from DRAM block after block to save a few cycles spends the memory
//! bandwidth and energy the rest of the system shares. Each off-chip byte is therefore priced
//! as [`OFFCHIP_BYTE_CYCLES`] cycles, so one candidate wins over another only when the cycles
//! it saves exceed the off-chip bytes it adds at that price. Peak fast memory is not priced:
//! it is a constraint (the staging and allocation passes place buffers only where they fit).

/// Cycles one off-chip byte costs in the objective.
///
/// One cycle per byte puts a byte read from DRAM at roughly the energy of one cycle of the
/// MAC array (an LPDDR access is on the order of 100 pJ per byte, a cycle of 256 8-bit MACs
/// with its SRAM traffic on the same order), and makes re-reading a feature map or a
/// weight stream from DRAM lose against reading it once, unless it saves as many cycles as it
/// moves bytes.
pub const OFFCHIP_BYTE_CYCLES: u64 = 1;

/// The objective of `(cycles, off-chip bytes)`.
pub fn cost((cycles, offchip): (u64, u64)) -> u64 {
    cycles.saturating_add(offchip.saturating_mul(OFFCHIP_BYTE_CYCLES))
}

/// The objective of a whole stream's estimate: its cycles plus its priced off-chip (not SRAM)
/// bytes.
pub fn stream_cost(e: &crate::arch_interface::StreamEstimate) -> u64 {
    let offchip = e
        .ops
        .iter()
        .flat_map(|o| &o.memory)
        .filter(|(m, _, _)| m != "Sram")
        .map(|(_, r, w)| r + w)
        .sum();
    cost((e.total, offchip))
}

#[cfg(test)]
mod tests {
    use super::cost;

    #[test]
    fn an_off_chip_byte_costs_as_much_as_a_cycle() {
        // Re-reading 40 KB from DRAM to save 900 cycles loses against reading 2 KB once.
        assert!(cost((14_000, 2_000)) < cost((13_100, 40_700)));
        // Saving more cycles than bytes added wins.
        assert!(cost((10_000, 5_000)) < cost((20_000, 1_000)));
        assert_eq!(cost((u64::MAX, 1)), u64::MAX);
    }
}
