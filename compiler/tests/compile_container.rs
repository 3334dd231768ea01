//! The npuc container round trip, compile errors, and register values against Vela's listing.

mod compile_common;

use compile_common::*;
use npuc::compile::lower::LowerError;
use npuc::compile::{compile, CompileError, Options};
use npuc::container;
use npuc_backend::isa::{decode_stream, Command};
use npuc_ir::*;

#[test]
fn container_round_trip() {
    let g = conv3x3_relu(&mut Rng(1));
    let m = compile(&g, &Options::default()).unwrap();
    let bytes = container::to_bytes(&m);
    assert_eq!(&bytes[..4], b"NPUC");
    assert_eq!(bytes.len() % 16, 0);
    let c = container::from_bytes(&bytes).unwrap();
    assert_eq!(c.version, container::VERSION);
    assert_eq!(c.config_word, m.config_word);
    assert_eq!(c.payload, m.payload);
    assert_eq!(c.read_only, m.read_only);
    assert_eq!(c.arena_size, m.arena_size);
    assert_eq!(c.fast_size, m.fast_size);
    assert_eq!(c.manifest, container::manifest(&m));
    let x = &c.manifest.inputs[0];
    assert_eq!(
        (x.name.as_str(), x.dtype.as_str(), x.region),
        ("x", "i8", 1)
    );
    assert_eq!(x.shape, vec![1, 8, 8, 3]);
    let cfg = c.manifest.configuration.as_ref().unwrap();
    assert_eq!(
        (cfg.accelerator.as_str(), cfg.optimise.as_str()),
        ("ethos-u85-256", "performance")
    );
    assert_eq!(cfg.system_config, m.system_config);
    assert_eq!(cfg.memory_mode, m.memory_mode);
    assert_eq!(x.quantization.as_ref().unwrap().zero_points, vec![-3]);
    assert_eq!(
        c.manifest.operators[0].fused,
        vec!["conv", "rescale", "relu"]
    );
    assert!(matches!(
        container::from_bytes(b"XXXX0000000000000000000000000000000000000000000000000000"),
        Err(container::ContainerError::Magic)
    ));
    assert!(container::from_bytes(&bytes[..20]).is_err());
    // Version 1 (JSON manifest) is rejected with an error saying so.
    let mut v1 = bytes.clone();
    v1[4..8].copy_from_slice(&1u32.to_le_bytes());
    let e = container::from_bytes(&v1).unwrap_err();
    assert!(matches!(e, container::ContainerError::Version1));
    assert!(e.to_string().contains("recompile"), "{e}");
    // So is version 2 (no region 2 in the header).
    let mut v2 = bytes.clone();
    v2[4..8].copy_from_slice(&2u32.to_le_bytes());
    let e = container::from_bytes(&v2).unwrap_err();
    assert!(matches!(e, container::ContainerError::Version2));
    assert!(e.to_string().contains("recompile"), "{e}");
}

#[test]
fn unsupported_operators_are_errors_naming_the_operator() {
    // ARGMAX over more than 256 elements (the argmax pool's window limit).
    let mut b = GraphBuilder::new("argmax");
    let x = b.input("x", DType::Int8, [1, 1, 1, 300]);
    let y = b.op("the_argmax", Op::ArgMax(AxisAttrs { axis: 3 }), &[x]);
    b.output(y);
    let g = b.finish().unwrap();
    let e = compile(&g, &Options::default()).unwrap_err();
    assert!(
        matches!(&e, CompileError::Lower(LowerError::Unsupported { name, .. }) if name == "the_argmax"),
        "{e}"
    );

    // A 16-bit MATMUL whose contraction dimension exceeds 65536: one NPU operation
    // accumulates over at most 65536 IFM channels, and the parts of a longer contraction are
    // summed by i32 adds, which do not hold a 48-bit accumulator (decision L47: the 8-bit form
    // compiles, compile_contraction.rs; a feature-map side above 65536 is split, L46; a padded
    // AVG_POOL2D above 8x8 is decomposed, L39).
    let mut b = GraphBuilder::new("matmul_long");
    let x = b.input("a", DType::Int16, [1, 1, 65538]);
    let y = b.input("b", DType::Int16, [1, 65538, 2]);
    let z = b.op(
        "long_matmul",
        Op::MatMul(MatMulAttrs { a_zp: 0, b_zp: 0 }),
        &[x, y],
    );
    b.output(z);
    let g = b.finish().unwrap();
    let e = compile(&g, &Options::default()).unwrap_err();
    assert!(e.to_string().contains("long_matmul"), "{e}");
    assert!(e.to_string().contains("above 65536"), "{e}");
}

/// Register values of the compiled conv2d_3x3_relu corpus model next to the ones in Vela's
/// listing (models/vela/u85_256/conv2d_3x3_relu.cmd.txt): shapes, kernel, stride, padding,
/// zero points, activation range and OFM scale round mode. A sanity check, not byte equality.
#[test]
fn conv2d_3x3_relu_registers_match_vela_where_comparable() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../models/tflite/conv2d_3x3_relu.tflite"
    );
    let bytes = std::fs::read(path).unwrap();
    let model = npuc_frontend_tflite::TfliteModel::parse(&bytes).unwrap();
    let g = npuc_frontend_tflite::lower::lower(&model).unwrap().graph;
    let m = compile(&g, &Options::default()).unwrap();
    let d = decode_stream(&m.payload.command_words().unwrap()).unwrap();
    let find = |f: &dyn Fn(&Command) -> Option<u64>| d.iter().find_map(|x| f(&x.command));
    use Command as C;
    // From Vela's listing: IFM 12x12x3, OFM 12x12x16 (split by Vela into 16 + 4 channels of a
    // 20-channel OFM; we compare the common fields), kernel 3x3 stride 1, pads 1, IFM zero
    // point -1 (0xffff), OFM zero point -128, activation -128..127, OFM round mode double
    // symmetric with dbl_rnd 0, 32-bit accumulators.
    assert_eq!(
        find(&|c| if let C::SetIfmHeight0M1(v) = c {
            Some(v.height_m1.into())
        } else {
            None
        }),
        Some(11)
    );
    assert_eq!(
        find(&|c| if let C::SetIfmWidth0M1(v) = c {
            Some(v.width_m1.into())
        } else {
            None
        }),
        Some(11)
    );
    assert_eq!(
        find(&|c| if let C::SetIfmDepthM1(v) = c {
            Some(v.depth_m1.into())
        } else {
            None
        }),
        Some(2)
    );
    assert_eq!(
        find(&|c| if let C::SetOfmHeightM1(v) = c {
            Some(v.height_m1.into())
        } else {
            None
        }),
        Some(11)
    );
    assert_eq!(
        find(&|c| if let C::SetKernelHeightM1(v) = c {
            Some(v.height_m1.into())
        } else {
            None
        }),
        Some(2)
    );
    assert_eq!(
        find(&|c| if let C::SetKernelWidthM1(v) = c {
            Some(v.width_m1.into())
        } else {
            None
        }),
        Some(2)
    );
    assert_eq!(
        find(&|c| if let C::SetIfmPadTop(v) = c {
            Some(v.pad.into())
        } else {
            None
        }),
        Some(1)
    );
    assert_eq!(
        find(&|c| if let C::SetIfmPadBottom(v) = c {
            Some(v.pad.into())
        } else {
            None
        }),
        Some(1)
    );
    assert_eq!(
        find(&|c| if let C::SetIfmPadLeft(v) = c {
            Some(v.pad.into())
        } else {
            None
        }),
        Some(1)
    );
    assert_eq!(
        find(&|c| if let C::SetIfmPadRight(v) = c {
            Some(v.pad.into())
        } else {
            None
        }),
        Some(1)
    );
    assert_eq!(
        find(&|c| if let C::SetIfmZeroPoint(v) = c {
            Some(v.zero_point.into())
        } else {
            None
        }),
        Some(0xffff)
    );
    assert_eq!(
        find(&|c| if let C::SetOfmZeroPoint(v) = c {
            Some(v.zero_point.into())
        } else {
            None
        }),
        Some(0xff80)
    );
    assert_eq!(
        find(&|c| if let C::SetActivationMin(v) = c {
            Some(v.clip_boundary.into())
        } else {
            None
        }),
        Some(0xff80)
    );
    assert_eq!(
        find(&|c| if let C::SetActivationMax(v) = c {
            Some(v.clip_boundary.into())
        } else {
            None
        }),
        Some(127)
    );
    let ks = d
        .iter()
        .find_map(|x| {
            if let C::SetKernelStride(v) = x.command {
                Some(v)
            } else {
                None
            }
        })
        .unwrap();
    assert_eq!(
        (
            ks.stride_x_lsb,
            ks.stride_x_msb,
            ks.stride_y_lsb,
            ks.stride_y_msb
        ),
        (0, 0, 0, 0)
    );
    let os = d
        .iter()
        .find_map(|x| {
            if let C::SetOfmScale(v) = x.command {
                Some(v)
            } else {
                None
            }
        })
        .unwrap();
    assert_eq!(
        os.round_mode,
        npuc_backend::isa::RoundModeOfm::DoubleSymmetric
    );
    assert_eq!(os.dbl_rnd, 0);
    let op = d
        .iter()
        .find_map(|x| {
            if let C::SetOfmPrecision(v) = x.command {
                Some(v)
            } else {
                None
            }
        })
        .unwrap();
    assert_eq!(op.scale_mode, npuc_backend::isa::OfmScaleMode::PerChannel);
    assert!(d.iter().any(|x| matches!(x.command, C::OpConv(_))));
}
