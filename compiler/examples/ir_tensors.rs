//! Debugging aid: runs the reference interpreter on a `.tflite` / `.tosa` and writes every
//! tensor it computes as `.npy` into a directory (`<k>.npy`, with `index.txt` listing
//! `k name`), for comparison with TFLite's interpreter (`experimental_preserve_all_tensors`).
//!
//! `cargo run -p npuc --example ir_tensors -- MODEL OUT_DIR in0.npy ...`

use npuc::run::npy;
use npuc_ir::TensorValue;
use std::fmt::Write as _;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: ir_tensors MODEL OUT_DIR in0.npy ...");
        std::process::exit(2);
    }
    let bytes = std::fs::read(&args[0]).unwrap();
    let out = std::path::Path::new(&args[1]);
    std::fs::create_dir_all(out).unwrap();
    let g = npuc::reference::lower_file(&bytes).unwrap();
    let values: Vec<TensorValue> = g
        .inputs()
        .iter()
        .zip(&args[2..])
        .map(|(&t, p)| {
            let a = npy::read(&std::fs::read(p).unwrap()).unwrap();
            let ty = &g.tensor(t).unwrap().ty;
            TensorValue::from_le_bytes(ty.dtype, ty.shape.clone(), &a.data).unwrap()
        })
        .collect();
    let all = npuc_ir::run(&g, values).unwrap();
    let mut index = String::new();
    for (k, (t, v)) in all.iter().enumerate() {
        let name = g.tensor(*t).map(|x| x.name.clone()).unwrap_or_default();
        let a = npy::Array {
            dtype: npy::Dtype::I64,
            shape: vec![v.to_i64_vec().len()],
            data: v
                .to_i64_vec()
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        };
        std::fs::write(out.join(format!("{k}.npy")), npy::write(&a)).unwrap();
        writeln!(index, "{k} {name}").unwrap();
    }
    std::fs::write(out.join("index.txt"), index).unwrap();
}
