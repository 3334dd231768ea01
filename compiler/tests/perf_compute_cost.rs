//! The cost model's compute-only path (`op_compute_cost`, `PerfModel::npu_cycles`), which the
//! compute bounds use, gives every kernel operation the NPU cycles the whole cost gives
//! (`op_cost`, `PerfModel::op`): on the streams npuc writes for corpus networks (CONV,
//! DEPTHWISE, POOL, elementwise, RESIZE, 8- and 16-bit, sparse, cascaded), on the fewest and
//! most MACs.

mod compile_common;

use compile_common::options;
use npuc::compile::compile;
use npuc_backend::arch::Accelerator;
use npuc_backend::isa::{decode_stream, RegisterFile};
use npuc_backend::perf::op::{op_compute_cost, op_cost};
use npuc_backend::perf::PerfModel;
use npuc_backend::system::{presets, MemoryMap};

fn perf(accelerator: Accelerator) -> PerfModel {
    let map = MemoryMap::new(
        &presets::system_config(presets::DEFAULT_SYSTEM_CONFIG).unwrap(),
        &presets::memory_mode(presets::DEFAULT_MEMORY_MODE).unwrap(),
    )
    .unwrap();
    PerfModel::new(accelerator.config(), map)
}

#[test]
fn the_compute_only_cost_gives_the_npu_cycles_of_the_whole_cost() {
    let models = [
        "resnet8",
        "ds_cnn_16x8",
        "mobilenet_tiny",
        "transformer_encoder",
        "unet_small",
        "efficientnet_se",
        "resize_bilinear",
        "conv2d_pruned_2_4",
        "mobilenet_v2_035_96",
    ];
    let mut compared = 0;
    for name in models {
        let path = format!(
            "{}/../models/tflite/{name}.tflite",
            env!("CARGO_MANIFEST_DIR")
        );
        let bytes = std::fs::read(&path).unwrap();
        let model = npuc_frontend_tflite::TfliteModel::parse(&bytes).unwrap();
        let g = npuc_frontend_tflite::lower::lower(&model).unwrap().graph;
        for accelerator in [Accelerator::U85_128, Accelerator::U85_2048] {
            let m = compile(&g, &options(accelerator)).unwrap();
            let p = perf(accelerator);
            let arch = accelerator.config();
            let mut regs = RegisterFile::default();
            for d in decode_stream(&m.payload.command_words().unwrap()).unwrap() {
                if regs.apply(&d.command) {
                    continue;
                }
                let Some(whole) = op_cost(&arch, &regs, &d.command) else {
                    continue;
                };
                let compute = op_compute_cost(&arch, &regs, &d.command).unwrap();
                let full = p.op(0, "", whole).npu_cycles;
                match p.npu_cycles(&compute) {
                    Some(npu) => {
                        assert_eq!(npu, full, "{name} {accelerator:?} {:?}", d.command);
                        compared += 1;
                    }
                    None => assert!(matches!(
                        d.command,
                        npuc_backend::isa::Command::OpDmaStart(_)
                    )),
                }
            }
        }
    }
    assert!(compared > 300, "{compared} operations compared");
}
