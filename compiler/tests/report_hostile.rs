//! `npuc report` validates every stream as `npuc run` and `npuc compile` do (issue 16 C3,
//! decision H3) before it estimates anything, and never wraps a figure silently.

use npuc::artifact::Artifact;
use npuc::report::report;
use npuc::targets::ArtifactReaders;
use npuc_backend::isa::*;
use std::path::PathBuf;

fn raw(cmds: &[Command]) -> Artifact {
    let mut c = cmds.to_vec();
    c.push(Command::OpStop(OpStop { mask: 0xffff }));
    let bytes: Vec<u8> = encode_stream(&c)
        .unwrap()
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    Artifact::from_bytes(&bytes).unwrap()
}

fn report_err(cmds: &[Command]) -> String {
    match report(&raw(cmds), &ArtifactReaders::default_u85()) {
        Ok(r) => panic!("accepted, {} MACs", r.total.macs),
        Err(e) => e.to_string(),
    }
}

fn add() -> Command {
    Command::OpElementwise(OpElementwise {
        elementwise_mode: ElementwiseMode::Add,
    })
}

/// A global OFM scale (the reset value selects per-channel scales, which ELEMENTWISE may not
/// use).
fn global_scale() -> Command {
    Command::SetOfmPrecision(SetOfmPrecision {
        scale_mode: OfmScaleMode::Global,
        ..SetOfmPrecision::default()
    })
}

#[test]
fn a_plain_raw_stream_is_reported() {
    let r = report(
        &raw(&[global_scale(), add()]),
        &ArtifactReaders::default_u85(),
    )
    .unwrap();
    assert_eq!(r.ops.len(), 1);
}

#[test]
fn streams_using_regions_nothing_maps_are_refused() {
    for region in [3, 7] {
        let e = report_err(&[
            global_scale(),
            Command::SetIfmRegion(SetIfmRegion { region }),
            add(),
        ]);
        assert!(e.contains("not a valid stream"), "{e}");
        assert!(
            e.contains(&format!("region {region} has no memory mapped")),
            "{e}"
        );
    }
}

#[test]
fn a_65536x65536_kernel_is_refused() {
    let e = report_err(&[
        Command::SetKernelHeightM1(SetKernelHeightM1 { height_m1: 0xffff }),
        Command::SetKernelWidthM1(SetKernelWidthM1 { width_m1: 0xffff }),
        Command::OpPool(OpPool {
            pooling_mode: PoolingMode::Max,
        }),
    ]);
    assert!(e.contains("NPU_OP_POOL"), "{e}");
}

#[test]
fn a_dma_of_2_pow_40_bytes_is_refused() {
    let e = report_err(&[
        Command::SetDma0Len(SetDma0Len {
            addr_hi: 0xff,
            addr_lo: 0xffff_ffff,
        }),
        Command::OpDmaStart(OpDmaStart {}),
    ]);
    assert!(e.contains("NPU_OP_DMA_START"), "{e}");
}

/// A stream of about 2^96 MACs used to report 0 MACs: refused now (the work budget), and a
/// figure past 64 bits could never be added silently.
#[test]
fn a_stream_of_2_pow_96_macs_is_refused() {
    let mut c = vec![
        Command::SetOfmHeightM1(SetOfmHeightM1 { height_m1: 0xffff }),
        Command::SetOfmWidthM1(SetOfmWidthM1 { width_m1: 0xffff }),
        Command::SetOfmDepthM1(SetOfmDepthM1 { depth_m1: 0xffff }),
        Command::SetIfmDepthM1(SetIfmDepthM1 { depth_m1: 0xffff }),
        Command::SetKernelHeightM1(SetKernelHeightM1 { height_m1: 63 }),
        Command::SetKernelWidthM1(SetKernelWidthM1 { width_m1: 63 }),
    ];
    for _ in 0..16 {
        c.push(Command::OpConv(OpConv { weights_ifm2: 0 }));
    }
    let e = report_err(&c);
    assert!(e.contains("NPU_OP_CONV"), "{e}");
}

/// Vela's own streams (with their read-only data and scratch sizes) pass the validation.
#[test]
fn velas_streams_pass() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/vela/u85_256");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if !p.to_string_lossy().ends_with("_vela.tflite") {
            continue;
        }
        let a = match Artifact::read(&p) {
            Ok(a) => a,
            // Models Vela left entirely on the CPU.
            Err(npuc::artifact::ArtifactError::NoNpuOperators) => continue,
            Err(e) => panic!("{}: {e}", p.display()),
        };
        if let Err(e) = report(&a, &ArtifactReaders::default_u85()) {
            panic!("{}: {e}", p.display());
        }
        n += 1;
    }
    assert!(n > 50, "{n}");
}
