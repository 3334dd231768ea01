//! The performance model on small hand-made streams: what an elementwise ADD and a DMA cost in
//! the default system and in SRAM-only mode (docs/decisions.md P2, P4, P7, P8, P9).

use npuc_backend::arch::Accelerator;
use npuc_backend::isa::*;
use npuc_backend::perf::{memory_index, PerfError, PerfModel};
use npuc_backend::system::{presets, MemoryKind, MemoryMap};

fn model(acc: Accelerator, sys: &str, mode: &str) -> PerfModel {
    let map = MemoryMap::new(
        &presets::system_config(sys).unwrap(),
        &presets::memory_mode(mode).unwrap(),
    )
    .unwrap();
    PerfModel::new(acc.config(), map)
}

/// ADD of two 8x8x16 int8 NHWC tensors in region 1, OFM in region `ofm_region`.
fn add_stream(ofm_region: u8) -> Vec<u32> {
    let x = 16u32; // stride_x = depth
    let cmds = vec![
        Command::SetOfmHeightM1(SetOfmHeightM1 { height_m1: 7 }),
        Command::SetOfmWidthM1(SetOfmWidthM1 { width_m1: 7 }),
        Command::SetOfmDepthM1(SetOfmDepthM1 { depth_m1: 15 }),
        Command::SetIfmDepthM1(SetIfmDepthM1 { depth_m1: 15 }),
        Command::SetIfmRegion(SetIfmRegion { region: 1 }),
        Command::SetIfm2Region(SetIfm2Region { region: 1 }),
        Command::SetOfmRegion(SetOfmRegion { region: ofm_region }),
        Command::SetIfmStrideX(SetIfmStrideX {
            addr_hi: 0,
            addr_lo: x,
        }),
        Command::SetIfmStrideY(SetIfmStrideY {
            addr_hi: 0,
            addr_lo: 8 * x,
        }),
        Command::SetIfm2Base0(SetIfm2Base0 {
            addr_hi: 0,
            addr_lo: 1024,
        }),
        Command::SetIfm2StrideX(SetIfm2StrideX {
            addr_hi: 0,
            addr_lo: x,
        }),
        Command::SetIfm2StrideY(SetIfm2StrideY {
            addr_hi: 0,
            addr_lo: 8 * x,
        }),
        Command::SetOfmBase0(SetOfmBase0 {
            addr_hi: 0,
            addr_lo: 2048,
        }),
        Command::SetOfmStrideX(SetOfmStrideX {
            addr_hi: 0,
            addr_lo: x,
        }),
        Command::SetOfmStrideY(SetOfmStrideY {
            addr_hi: 0,
            addr_lo: 8 * x,
        }),
        Command::SetOfmWidth0M1(SetOfmWidth0M1 { width_m1: 7 }),
        Command::SetOfmHeight0M1(SetOfmHeight0M1 { height_m1: 7 }),
        Command::SetOfmHeight1M1(SetOfmHeight1M1 { height_m1: 7 }),
        // One block covers the OFM.
        Command::SetOfmBlkHeightM1(SetOfmBlkHeightM1 { height_m1: 7 }),
        Command::SetOfmBlkWidthM1(SetOfmBlkWidthM1 { width_m1: 7 }),
        Command::SetOfmBlkDepthM1(SetOfmBlkDepthM1 { depth_m1: 15 }),
        Command::OpElementwise(OpElementwise {
            elementwise_mode: ElementwiseMode::Add,
        }),
        Command::OpStop(OpStop { mask: 0 }),
    ];
    encode_stream(&cmds).unwrap()
}

#[test]
fn elementwise_add_is_bound_by_the_ao_unit_in_the_default_system() {
    let m = model(
        Accelerator::U85_256,
        "Ethos_U85_SYS_DRAM_Mid",
        "Dedicated_Sram_384KB",
    );
    let p = m.stream(&add_stream(1)).unwrap();
    assert_eq!(p.ops.len(), 1);
    let op = &p.ops[0];
    assert_eq!(op.instruction, "NPU_OP_ELEMENTWISE");
    assert_eq!(op.cost.read[1], 2 * 1024);
    assert_eq!(op.cost.written[1], 1024);
    assert_eq!(op.cost.macs, 0);
    // Table 4-12: CB_8 -> OB_8 at 1 element per SU per cycle, 4 SUs: 1024 / 4.
    assert_eq!(op.cost.compute_cycles, 256);
    // Region 1 is DRAM (arena of Dedicated_Sram). Each operand is one contiguous kilobyte,
    // read on the IFM stream channel: its 104-word read buffer holds 13 bursts of 128 bytes,
    // each held for the 500-cycle latency, at 80 %: 128 x 13 / 500 x 0.8 = 2.66 bytes per
    // cycle, 769 cycles for the 2048 bytes (P18); the port's 12 bytes per cycle would take 256.
    assert_eq!(op.memory_read[memory_index(MemoryKind::Dram)], 2048);
    assert_eq!(op.memory_cycles[memory_index(MemoryKind::Dram)], 770);
    // The AO (256 cycles) and the CC issuing the one block (P17) are faster: DRAM sets the
    // operation's cycles.
    assert_eq!(op.npu_cycles, 256);
    assert_eq!(op.cycles, 770);
    assert_eq!(p.total_cycles, op.cycles);
    // The OFM ends at 2048 + 1024.
    assert_eq!(p.peak[1], 3072);
    assert_eq!(p.memory_peak(&m.map, MemoryKind::Dram), 3072);
}

#[test]
fn a_slow_memory_bounds_the_operation() {
    // Flash_Low: 200 MHz, SRAM x2 at 16 B/port; Shared_Sram puts the arena in SRAM.
    let m = model(
        Accelerator::U85_2048,
        "Ethos_U85_SYS_Flash_Low",
        "Shared_Sram",
    );
    let p = m.stream(&add_stream(1)).unwrap();
    let op = &p.ops[0];
    // 2048: 32 SUs -> 32 compute cycles; the SRAM's two ports move 32 B/cycle, its reads and
    // writes together (P18): 3072 bytes -> 96 cycles.
    assert_eq!(op.cost.compute_cycles, 32);
    assert_eq!(op.memory_cycles[memory_index(MemoryKind::Sram)], 96);
    assert_eq!(op.cycles, 96);
}

#[test]
fn dma_from_flash_costs_its_bytes_at_flash_bandwidth() {
    let cmds = vec![
        Command::SetDma0SrcRegion(SetDma0SrcRegion {
            region: 0,
            ..Default::default()
        }),
        Command::SetDma0DstRegion(SetDma0DstRegion {
            region: 2,
            ..Default::default()
        }),
        Command::SetDma0Src(SetDma0Src {
            addr_hi: 0,
            addr_lo: 256,
        }),
        Command::SetDma0Dst(SetDma0Dst {
            addr_hi: 0,
            addr_lo: 0,
        }),
        Command::SetDma0Len(SetDma0Len {
            addr_hi: 0,
            addr_lo: 1000,
        }),
        Command::OpDmaStart(OpDmaStart::default()),
    ];
    let words = encode_stream(&cmds).unwrap();
    let m = model(
        Accelerator::U85_256,
        "Ethos_U85_SYS_Flash_High",
        "Shared_Sram",
    );
    let p = m.stream(&words).unwrap();
    let op = &p.ops[0];
    assert_eq!(op.instruction, "NPU_OP_DMA_START");
    assert_eq!(op.memory_read[memory_index(MemoryKind::OffChipFlash)], 1000);
    assert_eq!(op.memory_written[memory_index(MemoryKind::Sram)], 1000);
    // Off-chip flash: 16 bytes per 16 cycles (clock scale 0.0625), 1000 cycles; 2 x 0.8
    // outstanding 128-byte bursts per 64 cycles at 80 % (2.56 B/cycle) is faster. A DMA
    // pays its read's latency (64) on top; the SRAM write (49 + 32) is hidden (P18).
    assert_eq!(op.cycles, 1000 + 64);
    assert_eq!((p.peak[0], p.peak[2]), (1256, 1000));
}

#[test]
fn an_invalid_stream_is_an_error_not_a_panic() {
    let m = model(Accelerator::U85_256, "Ethos_U85_SYS_DRAM_Mid", "Sram_Only");
    // Control bits [15:14] = 11 are reserved (TRM 3.5.3).
    let err = m.stream(&[0x0000_c000]).unwrap_err();
    assert!(matches!(err, PerfError::Decode(_)), "{err}");
}

#[test]
fn dmas_overlap_kernels_until_the_stream_waits() {
    use npuc_backend::perf::Timeline;
    let mut t = Timeline::default();
    // A 100-cycle kernel, then a 30-cycle DMA: the DMA runs alongside.
    assert_eq!(t.schedule(false, 100), 0);
    assert_eq!(t.schedule(true, 30), 0);
    // A second kernel queues behind the first.
    assert_eq!(t.schedule(false, 50), 100);
    // KERNEL_WAIT 0 waits for both kernels; the DMA after it starts at 150.
    t.kernel_wait(0);
    assert_eq!(t.schedule(true, 10), 150);
    t.dma_wait(0);
    assert_eq!(t.end(), 160);
    // At most two kernel operations remain when a command starts (TRM 3.10.8): a third
    // kernel issued at once makes the CC wait for the first to finish before issuing it.
    let mut u = Timeline::default();
    u.schedule(false, 10);
    u.schedule(false, 10);
    u.schedule(false, 10);
    assert!(u.issue >= 10);
    assert_eq!(u.end(), 30);
}

#[test]
fn a_dma_and_a_kernel_on_the_same_memory_share_its_channels() {
    use npuc_backend::perf::{Timeline, NUM_MEMORIES};
    // A DMA that keeps the DRAM read channel (index 2) busy for 1000 cycles, then a kernel
    // issued at once whose own cycles are 300 but which needs 200 cycles of that channel: it
    // ends when the channel has served both (1200), not at 300.
    let mut t = Timeline::default();
    let mut dram_read = [0; 2 * NUM_MEMORIES];
    dram_read[2 * memory_index(MemoryKind::Dram)] = 1000;
    assert_eq!(t.schedule_on(true, 1000, &dram_read), (0, 1000));
    dram_read[2 * memory_index(MemoryKind::Dram)] = 200;
    assert_eq!(t.schedule_on(false, 300, &dram_read), (0, 1200));
    // A kernel on another memory is not delayed.
    let mut sram_read = [0; 2 * NUM_MEMORIES];
    sram_read[2 * memory_index(MemoryKind::Sram)] = 200;
    assert_eq!(t.schedule_on(false, 300, &sram_read), (1200, 1500));
}

#[test]
fn the_largest_operation_in_one_element_blocks_is_estimated_at_once() {
    // 65536^3 elements in 1x1x1 blocks (the reset block size): blocks of one shape are
    // costed together, so this takes no longer than a small operation.
    let cmds = vec![
        Command::SetOfmHeightM1(SetOfmHeightM1 { height_m1: 65535 }),
        Command::SetOfmWidthM1(SetOfmWidthM1 { width_m1: 65535 }),
        Command::SetOfmDepthM1(SetOfmDepthM1 { depth_m1: 65535 }),
        Command::SetIfmDepthM1(SetIfmDepthM1 { depth_m1: 65535 }),
        Command::SetKernelHeightM1(SetKernelHeightM1 { height_m1: 2 }),
        Command::SetKernelWidthM1(SetKernelWidthM1 { width_m1: 2 }),
        Command::OpElementwise(OpElementwise {
            elementwise_mode: ElementwiseMode::Add,
        }),
        Command::OpDepthwise(OpDepthwise::default()),
        Command::OpStop(OpStop { mask: 0 }),
    ];
    let m = model(
        Accelerator::U85_256,
        "Ethos_U85_SYS_DRAM_Mid",
        "Dedicated_Sram_384KB",
    );
    let start = std::time::Instant::now();
    let p = m.stream(&encode_stream(&cmds).unwrap()).unwrap();
    assert_eq!(p.ops.len(), 2);
    assert!(p.ops.iter().all(|o| o.cycles > 65536u64.pow(3) / 4));
    assert!(start.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn a_kernel_held_back_by_a_dma_wait_overlaps_its_memory_cycles_with_the_wait() {
    use npuc_backend::perf::Timeline;
    // P25: a 100-cycle kernel, then a 500-cycle DMA issued alongside it and a DMA_WAIT: the
    // next kernel could start at 100 and starts at 500, held back 400 cycles.
    let mut t = Timeline::default();
    t.schedule(false, 100);
    t.schedule(true, 500);
    assert_eq!(t.held_by_dma_waits(), 0);
    t.dma_wait(0);
    assert_eq!(t.issue, 500);
    assert_eq!(t.held_by_dma_waits(), 400);
    // Scheduling the kernel ends the hold; a KERNEL_WAIT is not a DMA wait.
    t.schedule(false, 50);
    assert_eq!(t.held_by_dma_waits(), 0);
    t.kernel_wait(0);
    assert_eq!(t.held_by_dma_waits(), 0);
    // A DMA the previous kernel hides holds nothing back.
    let mut u = Timeline::default();
    u.schedule(true, 80);
    u.schedule(false, 300);
    u.schedule(true, 100);
    u.dma_wait(0);
    assert_eq!(u.held_by_dma_waits(), 0);
}
