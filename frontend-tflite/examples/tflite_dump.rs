//! Prints what the reader sees in a `.tflite` file.
//!
//! `cargo run -p npuc-frontend-tflite --example tflite_dump -- model.tflite`

use npuc_frontend_tflite::{TfliteModel, VelaOp};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: tflite_dump FILE.tflite");
        std::process::exit(2);
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let model = match TfliteModel::parse(&bytes) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "version {} description {:?}, {} buffers",
        model.version(),
        model.description(),
        model.buffers().len()
    );
    for m in model.metadata() {
        let len = model.buffer(m.buffer).map_or(0, |b| b.data.len());
        println!("metadata {:?}: buffer {} ({len} bytes)", m.name, m.buffer);
    }
    for sg in model.subgraphs() {
        println!(
            "subgraph {} {:?}: inputs {:?} outputs {:?}",
            sg.id, sg.name, sg.inputs, sg.outputs
        );
        for t in &sg.tensors {
            let data = model.tensor_data(t).map_or(0, <[u8]>::len);
            println!(
                "  tensor {} {:?} {} {:?} sig {:?} buffer {} ({data} bytes) quant {:?}",
                t.id, t.name, t.dtype, t.shape, t.shape_signature, t.buffer, t.quantization
            );
        }
        for op in &sg.operators {
            println!(
                "  op {} {} inputs {:?} outputs {:?} options {:?} custom {} bytes",
                op.id,
                op.opcode.name(),
                op.inputs,
                op.outputs,
                op.builtin_options_type(),
                op.custom_options.len()
            );
        }
    }
    match model.vela() {
        Ok(vela) => {
            for sg in &vela.subgraphs {
                for fm in &sg.inputs {
                    println!("graph input {fm:?}");
                }
                for fm in &sg.outputs {
                    println!("graph output {fm:?}");
                }
                for op in &sg.ops {
                    match op {
                        VelaOp::Npu(npu) => println!(
                            "npu op {}: payload {} bytes ({:?}), read_only {} bytes, scratch {} \
                             scratch_fast {}, ifms {:?}, ofms {:?}",
                            npu.op,
                            npu.payload.len(),
                            String::from_utf8_lossy(npu.payload.get(..4).unwrap_or_default()),
                            npu.read_only.len(),
                            npu.scratch_size,
                            npu.scratch_fast_size,
                            npu.ifms,
                            npu.ofms
                        ),
                        VelaOp::Cpu(cpu) => println!("cpu op {}: {}", cpu.op, cpu.name),
                    }
                }
            }
        }
        Err(e) => println!("not readable as Vela output: {e}"),
    }
}
