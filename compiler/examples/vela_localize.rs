//! Debugging aid: runs a single-NPU-operator Vela `.tflite` one kernel operation at a time
//! and reports, for every kernel operation, whether its OFM equals some tensor the reference
//! interpreter computes for the source `.tflite` on the same inputs.
//!
//! `cargo run --release -p npuc --example vela_localize -- VELA.tflite PLAIN.tflite in0.npy ...`

use npuc::run::npy;
use npuc_backend::cop::parse_payload;
use npuc_backend::isa::stream::decode_stream;
use npuc_backend::isa::{ActivationStorage, Command};
use npuc_backend::sim::fm::Fm;
use npuc_backend::sim::Simulator;
use npuc_frontend_tflite::vela::VelaOp;
use npuc_frontend_tflite::TfliteModel;
use npuc_ir::TensorValue;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let vela_bytes = std::fs::read(&args[0]).unwrap();
    let plain_bytes = std::fs::read(&args[1]).unwrap();
    let inputs: Vec<npy::Array> = args[2..]
        .iter()
        .map(|p| npy::read(&std::fs::read(p).unwrap()).unwrap())
        .collect();

    // Reference: every tensor of the plain model.
    let g = npuc::reference::lower_file(&plain_bytes).unwrap();
    let values: Vec<TensorValue> = g
        .inputs()
        .iter()
        .zip(&inputs)
        .map(|(&t, a)| {
            let ty = &g.tensor(t).unwrap().ty;
            TensorValue::from_le_bytes(ty.dtype, ty.shape.clone(), &a.data).unwrap()
        })
        .collect();
    let all = npuc_ir::run(&g, values).unwrap();
    let reference: Vec<(String, Vec<i64>)> = all
        .iter()
        .map(|(t, v)| {
            (
                g.tensor(*t).map(|x| x.name.clone()).unwrap_or_default(),
                v.to_i64_vec(),
            )
        })
        .collect();

    let m = TfliteModel::parse(&vela_bytes).unwrap();
    let v = m.vela().unwrap();
    let vsg = &v.subgraphs[0];
    let sg = m.main_subgraph();
    let oma = v.offline_memory_allocation.as_ref().unwrap();
    let VelaOp::Npu(op) = &vsg.ops[0] else {
        panic!("first operator is not an ethos-u operator")
    };
    let payload = parse_payload(&op.payload).unwrap();
    let mut words = payload.words.clone();
    if std::env::var_os("NATURAL_CONV").is_some() {
        // Experiment: per-channel CONVs round once (natural), as TFLite's fully connected does.
        // Per-tensor CONVs (BATCH_MATMUL) keep their rounding: TFLite rounds them twice.
        let mut out = Vec::new();
        let mut last_scale = None;
        let mut per_channel = false;
        for d in decode_stream(&words).unwrap() {
            match d.command {
                Command::SetOfmScale(s) => last_scale = Some(s),
                Command::SetOfmPrecision(p) => {
                    per_channel = p.scale_mode == npuc_backend::isa::OfmScaleMode::PerChannel
                }
                Command::OpConv(_) if per_channel => {
                    if let Some(s) = last_scale {
                        let natural = npuc_backend::isa::SetOfmScale {
                            round_mode: npuc_backend::isa::RoundModeOfm::Natural,
                            ..s
                        };
                        out.push(Command::SetOfmScale(natural));
                        out.push(d.command);
                        out.push(Command::SetOfmScale(s));
                        continue;
                    }
                }
                _ => {}
            }
            out.push(d.command);
        }
        words = npuc_backend::isa::stream::encode_stream(&out).unwrap();
    }
    let decoded = decode_stream(&words).unwrap();
    let kernel_ends: Vec<usize> = decoded
        .iter()
        .filter(|d| {
            matches!(
                d.command,
                Command::OpConv(_)
                    | Command::OpDepthwise(_)
                    | Command::OpPool(_)
                    | Command::OpElementwise(_)
                    | Command::OpResize(_)
            )
        })
        .map(|d| d.offset / 4 + 1)
        .collect();
    let scratch_base = oma.offset(sg.id, op.scratch_tensor).unwrap() as usize;
    let mut arena_size = scratch_base + op.scratch_size;
    for fm in vsg.inputs.iter().chain(&vsg.outputs) {
        let t = sg.tensor(fm.tensor).unwrap();
        arena_size =
            arena_size.max(oma.offset(sg.id, fm.tensor).unwrap() as usize + t.byte_size().unwrap());
    }
    for t in sg.tensors.iter().filter(|t| t.is_variable) {
        if let Some(at) = oma.offset(sg.id, t.id) {
            arena_size = arena_size.max(at as usize + t.byte_size().unwrap());
        }
    }
    for (k, &end) in kernel_ends.iter().enumerate() {
        let mut sim = Simulator::new(payload.accelerator);
        let mem = sim.memory_mut();
        let arena = mem.add_buffer(vec![0u8; arena_size]);
        for (fm, a) in vsg.inputs.iter().zip(&inputs) {
            let at = oma.offset(sg.id, fm.tensor).unwrap() as usize;
            mem.buffer_mut(arena)[at..at + a.data.len()].copy_from_slice(&a.data);
        }
        // Variable tensors start from TFLite's reset value (as `npuc run` does).
        for t in sg.tensors.iter().filter(|t| t.is_variable) {
            let Some(at) = oma.offset(sg.id, t.id) else {
                continue;
            };
            let zp = t.quantization.as_ref().and_then(|q| q.zero_point.first());
            let fill = match (t.dtype, zp) {
                (npuc_frontend_tflite::TensorType::Int8, Some(&zp)) => zp as i8 as u8,
                _ => 0,
            };
            let (at, n) = (at as usize, t.byte_size().unwrap());
            mem.buffer_mut(arena)[at..at + n].fill(fill);
        }
        let ro = mem.add_buffer(op.read_only.clone());
        mem.map_region(0, ro, 0);
        mem.map_region(1, arena, scratch_base as u64);
        let region2 = if op.scratch_fast_tensor == op.scratch_tensor {
            mem.map_region(2, arena, scratch_base as u64);
            None
        } else {
            let fast = mem.add_buffer(vec![0u8; op.scratch_fast_size]);
            mem.map_region(2, fast, 0);
            Some(fast)
        };
        let mut prefix = words[..end].to_vec();
        prefix.push(0xffff_0000);
        if let Err(e) = sim.run(&prefix) {
            if e.to_string().contains("outside a chain") {
                println!("op {k}: chained OFM");
                continue;
            }
            println!("op {k}: simulator stopped: {e}");
            return;
        }
        if let Some(dir) = std::env::var_os("DUMP_DIR") {
            // The arena (region 1 from the scratch tensor's offset) and a separate region 2
            // after kernel operation k, for offline comparisons.
            let path = std::path::Path::new(&dir).join(format!("op{k}_arena.bin"));
            std::fs::write(path, sim.memory_mut().buffer(arena)).unwrap();
            if let Some(fast) = region2 {
                let path = std::path::Path::new(&dir).join(format!("op{k}_region2.bin"));
                std::fs::write(path, sim.memory_mut().buffer(fast)).unwrap();
            }
        }
        let r = sim.registers().clone();
        let ofm = Fm::ofm(&r);
        let d = decoded.iter().find(|d| d.offset / 4 + 1 == end);
        let name = d.map(|d| format!("{:?}", d.command)).unwrap_or_default();
        if ofm.storage == ActivationStorage::Chained || ofm.storage == ActivationStorage::None {
            println!("op {k} {name}: chained/none OFM");
            continue;
        }
        let (h, w, c) = (
            u64::from(r.ofm_height_m1.height_m1) + 1,
            u64::from(r.ofm_width_m1.width_m1) + 1,
            u64::from(r.ofm_depth_m1.depth_m1) + 1,
        );
        let mut got = Vec::new();
        let mem = sim.memory_mut();
        let mut unreadable = None;
        'read: for y in 0..h {
            for x in 0..w {
                for ch in 0..c {
                    match ofm.read(mem, y, x, ch) {
                        Ok(v) => got.push(v),
                        Err(e) => {
                            unreadable = Some(e);
                            break 'read;
                        }
                    }
                }
            }
        }
        if let Some(e) = unreadable {
            // e.g. an OFM written transposed: its registers do not describe it as NHWC.
            println!("op {k} {name} ofm {h}x{w}x{c}: not readable as an NHWC OFM ({e:?})");
            continue;
        }
        let matches: Vec<&str> = reference
            .iter()
            .filter(|(_, v)| *v == got)
            .map(|(n, _)| n.as_str())
            .collect();
        let close = reference
            .iter()
            .filter(|(_, v)| v.len() == got.len())
            .map(|(n, v)| {
                let diff = v.iter().zip(&got).filter(|(a, b)| a != b).count();
                (diff, n.as_str())
            })
            .min();
        if std::env::var_os("PRINT_OFM").is_some() {
            println!("op {k} ofm values {got:?}");
        }
        println!(
            "op {k} {name} ofm {h}x{w}x{c}: {}",
            if matches.is_empty() {
                format!("NO MATCH (closest: {close:?})")
            } else {
                format!("matches {:?}", &matches[..matches.len().min(2)])
            }
        );
    }
}
