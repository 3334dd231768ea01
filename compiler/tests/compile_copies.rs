//! Copies into the fast memory (docs/decisions.md S9): a feature map read from DRAM by narrow
//! positions, and the constant feature maps, copied by DMA when the cost model says it pays.

mod compile_common;

use compile_common::*;
use npuc::compile::{compile, Optimise, Options};
use npuc_backend::arch::Accelerator;
use npuc_backend::isa::{decode_stream, Command as C, RegisterFile};
use npuc_ir::*;

#[test]
fn a_narrow_input_image_is_copied_into_the_fast_memory_before_its_convolution() {
    // A 3x3 stride-2 convolution of a 96x96x3 input image (in the arena, DRAM) on
    // ethos-u85-256 in DRAM_Mid / Dedicated_Sram_384KB: each 3-byte position would be its own
    // DRAM transfer (latency-bound, P14/P15); a DMA copies the image into region 2 in long
    // bursts first (source region 1, destination region 2, the whole image), a DMA_WAIT
    // precedes the convolution, which reads region 2, and the result is bit-exact and faster
    // than without the copy (optimising for size copies nothing).
    let mut rng = Rng(7);
    let mut b = GraphBuilder::new("image");
    let x = b.input("x", DType::Int8, [1, 96, 96, 3]);
    let wt = b.const_i8("w", [16, 3, 3, 3], &rng.i8s(16 * 27));
    let bt = b.const_i32("b", [16], &[50; 16]);
    let attrs = ConvAttrs {
        pad: [0, 1, 0, 1],
        stride: [2, 2],
        ..ConvAttrs::default()
    };
    let acc = b.op("conv", Op::Conv2d(attrs), &[x, wt, bt]);
    let r = out_rescale(&mut rng, 16, 38, RescaleRounding::DoubleRound, 0);
    let y = b.op("rescale", Op::Rescale(r), &[acc]);
    b.output(y);
    let g = b.finish().unwrap();
    let fast = Options::new(Accelerator::U85_256);
    let small = Options {
        optimise: Optimise::Size,
        ..fast.clone()
    };
    let m = compile(&g, &fast).unwrap();
    let s = compile(&g, &small).unwrap();
    let decoded = decode_stream(&m.payload.command_words().unwrap()).unwrap();
    let mut regs = RegisterFile::default();
    let mut copy = None;
    let mut conv_ifm = None;
    for (i, d) in decoded.iter().enumerate() {
        regs.apply(&d.command);
        match d.command {
            C::OpDmaStart(_) if regs.dma0_src_region.region == 1 => {
                copy = Some((i, regs.dma0_dst_region.region, regs.dma0_len.addr_lo));
            }
            C::OpConv(_) => {
                conv_ifm = Some(regs.ifm_region.region);
                assert!(matches!(decoded[i - 1].command, C::OpDmaWait(_)));
            }
            _ => {}
        }
    }
    let (_, dst, len) = copy.expect("a DMA from the arena");
    assert_eq!((dst, len), (2, 96 * 96 * 3));
    assert_eq!(conv_ifm, Some(2));
    assert!(m.estimated_cycles() < s.estimated_cycles());
    let inputs = random_inputs(&g, &mut Rng(5));
    let want = npuc_ir::run_outputs(&g, inputs.clone()).unwrap();
    let bytes: Vec<Vec<u8>> = inputs.iter().map(|v| v.to_le_bytes()).collect();
    assert_eq!(simulate(&m, &bytes)[0], want[0].to_le_bytes());
    assert_eq!(simulate(&s, &bytes)[0], want[0].to_le_bytes());
}

#[test]
fn constant_operands_are_copied_into_the_fast_memory_once() {
    // Six elementwise operations on 8x8x16 each read a per-channel constant (16 values,
    // broadcast over height and width) from DRAM (region 0). Copying them into the fast
    // memory by one DMA at the start (region 0 -> region 2) is taken only when the cost model
    // says it pays: with the model calibrated to Vela's estimate (P17, P18: an elementwise
    // operand's DRAM latency counts once per block at a quarter, its bytes at the IFM-stream
    // channel's rate, as fast as the DMA's) it does not here. Either way at most one copy is
    // made, every operation reads its constant from one region, the result is bit-exact and
    // no slower than without copies (optimising for size copies nothing).
    let mut rng = Rng(9);
    let mut b = GraphBuilder::new("consts");
    let x8 = b.input("x", DType::Int8, [1, 8, 8, 16]);
    let wide = RescaleAttrs::per_tensor(DType::Int32, 1 << 30, 20, RescaleRounding::DoubleRound);
    let mut x = b.op("widen", Op::Rescale(wide), &[x8]);
    for i in 0..6 {
        let v: Vec<i32> = (0..16).map(|_| rng.range(-1000, 1000) as i32).collect();
        let c = b.const_i32(&format!("c{i}"), [1, 1, 1, 16], &v);
        let op = if i % 2 == 0 { Op::Add } else { Op::Sub };
        x = b.op(&format!("op{i}"), op, &[x, c]);
    }
    let narrow = RescaleAttrs::per_tensor(DType::Int8, 1 << 30, 36, RescaleRounding::DoubleRound);
    let y = b.op("narrow", Op::Rescale(narrow), &[x]);
    b.output(y);
    let g = b.finish().unwrap();
    let fast = Options::new(Accelerator::U85_256);
    let small = Options {
        optimise: Optimise::Size,
        ..fast.clone()
    };
    let m = compile(&g, &fast).unwrap();
    let s = compile(&g, &small).unwrap();
    let decoded = decode_stream(&m.payload.command_words().unwrap()).unwrap();
    let mut regs = RegisterFile::default();
    let mut copies = 0;
    let mut ifm2_regions = Vec::new();
    for d in &decoded {
        regs.apply(&d.command);
        match d.command {
            C::OpDmaStart(_)
                if regs.dma0_src_region.region == 0 && regs.dma0_dst_region.region == 2 =>
            {
                copies += 1;
            }
            C::OpElementwise(_) => ifm2_regions.push(regs.ifm2_region.region),
            _ => {}
        }
    }
    assert!(copies <= 1, "{copies} copies");
    assert!(ifm2_regions.len() >= 6, "{ifm2_regions:?}");
    let region = if copies == 1 { 2 } else { 0 };
    assert!(
        ifm2_regions.iter().all(|&r| r == region),
        "{ifm2_regions:?}"
    );
    assert!(m.estimated_cycles() <= s.estimated_cycles());
    let inputs = random_inputs(&g, &mut Rng(5));
    let want = npuc_ir::run_outputs(&g, inputs.clone()).unwrap();
    let bytes: Vec<Vec<u8>> = inputs.iter().map(|v| v.to_le_bytes()).collect();
    assert_eq!(simulate(&m, &bytes)[0], want[0].to_le_bytes());
    assert_eq!(simulate(&s, &bytes)[0], want[0].to_le_bytes());
}

#[test]
fn lookup_tables_are_loaded_from_their_copy_in_the_fast_memory() {
    // Four TABLE operations on 4x4x16 with distinct tables, each small enough that its
    // table's load from DRAM (region 0, with its latency) would not be hidden by the kernel
    // before it: one DMA at the start copies the tables (region 0 -> region 2), every LUT
    // load reads region 2, and the result is bit-exact and faster than without the copy.
    let mut rng = Rng(11);
    let mut b = GraphBuilder::new("tables");
    let mut x = b.input("x", DType::Int8, [1, 4, 4, 16]);
    for i in 0..4 {
        let t = Op::Table(TableAttrs {
            table: TableData::I8(rng.i8s(256)),
        });
        x = b.op(&format!("t{i}"), t, &[x]);
    }
    b.output(x);
    let g = b.finish().unwrap();
    let fast = Options::new(Accelerator::U85_256);
    let small = Options {
        optimise: Optimise::Size,
        ..fast.clone()
    };
    let m = compile(&g, &fast).unwrap();
    let s = compile(&g, &small).unwrap();
    let decoded = decode_stream(&m.payload.command_words().unwrap()).unwrap();
    let mut regs = RegisterFile::default();
    let (mut copies, mut loads) = (0, Vec::new());
    for d in &decoded {
        regs.apply(&d.command);
        if let C::OpDmaStart(_) = d.command {
            if regs.dma0_dst_region.region_mode == npuc_backend::isa::DmaRegionMode::Internal {
                loads.push(regs.dma0_src_region.region);
            } else if regs.dma0_src_region.region == 0 && regs.dma0_dst_region.region == 2 {
                copies += 1;
            }
        }
    }
    assert_eq!(copies, 1);
    assert_eq!(loads, [2, 2, 2, 2]);
    assert!(m.estimated_cycles() < s.estimated_cycles());
    let inputs = random_inputs(&g, &mut Rng(5));
    let want = npuc_ir::run_outputs(&g, inputs.clone()).unwrap();
    let bytes: Vec<Vec<u8>> = inputs.iter().map(|v| v.to_le_bytes()).collect();
    assert_eq!(simulate(&m, &bytes)[0], want[0].to_le_bytes());
    assert_eq!(simulate(&s, &bytes)[0], want[0].to_le_bytes());
}
