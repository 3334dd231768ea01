//! NPU_OP_DMA_START (TRM 3.10.4) and copy_bytes (3.6.3).
#![allow(clippy::needless_range_loop)]
mod sim_common;
use npuc_backend::isa::*;
use npuc_backend::sim::Fault;
use sim_common::*;

fn dma(src: u32, dst: u32, len: u32, mode: DmaStrideMode, internal: bool) -> Vec<Command> {
    vec![
        Command::SetDma0SrcRegion(SetDma0SrcRegion {
            region: 1,
            region_mode: DmaRegionMode::External,
            stride_mode: mode,
            idx_mode: DmaIdxMode::Disabled,
        }),
        Command::SetDma0DstRegion(SetDma0DstRegion {
            region: if internal { 0 } else { 1 },
            region_mode: if internal {
                DmaRegionMode::Internal
            } else {
                DmaRegionMode::External
            },
            idx_mode: DmaIdxMode::Disabled,
        }),
        Command::SetDma0Src(SetDma0Src {
            addr_hi: 0,
            addr_lo: src,
        }),
        Command::SetDma0Dst(SetDma0Dst {
            addr_hi: 0,
            addr_lo: dst,
        }),
        Command::SetDma0Len(SetDma0Len {
            addr_hi: 0,
            addr_lo: len,
        }),
    ]
}

/// 1-D copy.
#[test]
fn linear_copy() {
    let mem: Vec<u8> = (0..64).collect();
    let (mut s, id) = sim_with(mem);
    let mut c = dma(0, 32, 16, DmaStrideMode::D1, false);
    c.push(Command::OpDmaStart(OpDmaStart {}));
    let r = run(&mut s, &c).unwrap();
    assert_eq!(
        &s.memory().buffer(id)[32..48],
        &(0..16).collect::<Vec<u8>>()[..]
    );
    assert_eq!(r.traffic.read[1], 16);
    assert_eq!(r.traffic.written[1], 16);
}

/// 3-D: STRIDE0 per element (x < SIZE0), STRIDE1 per row (y < SIZE1) (docs/decisions.md, simulator #13).
#[test]
fn three_d_strides() {
    let mem: Vec<u8> = (0..128).collect();
    let (mut s, id) = sim_with(mem);
    let mut c = dma(0, 64, 2, DmaStrideMode::D3, false);
    c.extend([
        Command::SetDma0Size0(SetDma0Size0 { size: 2 }),
        Command::SetDma0Size1(SetDma0Size1 { size: 2 }),
        Command::SetDma0SrcStride0(SetDma0SrcStride0 {
            addr_hi: 0,
            addr_lo: 4,
        }),
        Command::SetDma0SrcStride1(SetDma0SrcStride1 {
            addr_hi: 0,
            addr_lo: 16,
        }),
        Command::SetDma0DstStride0(SetDma0DstStride0 {
            addr_hi: 0,
            addr_lo: 2,
        }),
        Command::SetDma0DstStride1(SetDma0DstStride1 {
            addr_hi: 0,
            addr_lo: 4,
        }),
        Command::OpDmaStart(OpDmaStart {}),
    ]);
    run(&mut s, &c).unwrap();
    assert_eq!(
        &s.memory().buffer(id)[64..72],
        &[0, 1, 4, 5, 16, 17, 20, 21]
    );
}

/// LUT RAM destination needs 16-byte aligned address and length (3.6.3 copy_bytes).
#[test]
fn lut_destination_alignment() {
    let (mut s, _) = sim_with((0..64).collect());
    let mut c = dma(0, 16, 32, DmaStrideMode::D1, true);
    c.push(Command::OpDmaStart(OpDmaStart {}));
    let r = run(&mut s, &c).unwrap();
    assert_eq!(&s.memory().lut()[16..48], &(0..32).collect::<Vec<u8>>()[..]);
    assert_eq!(r.traffic.lut_written, 32);
    let mut c = dma(0, 8, 32, DmaStrideMode::D1, true);
    c.push(Command::OpDmaStart(OpDmaStart {}));
    assert!(matches!(
        run(&mut s, &c).unwrap_err().fault(),
        Some(Fault::Assert {
            section: "3.6.3",
            ..
        })
    ));
    let mut c = dma(0, 2048 - 16, 32, DmaStrideMode::D1, true);
    c.push(Command::OpDmaStart(OpDmaStart {}));
    assert!(matches!(
        run(&mut s, &c).unwrap_err().fault(),
        Some(Fault::OutOfRegion { region: -1, .. })
    ));
}
