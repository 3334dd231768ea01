//! A stable, line-oriented text form of a graph, for debugging and snapshot tests.
//!
//! ```text
//! graph "name"
//! input  %0 "x": i8[1,4,4,2] q(s=0.5, zp=-1)
//! const  %1 "w": i8[2,1,1,2] = [1, -2, 3, 4]
//! #3 "conv" CONV2D(%0, %1, %2) {pad=[0,0,0,0], ...} -> %4 "conv": i32[1,4,4,2]
//! output %5 "y"
//! ```
//!
//! Lines: the header, graph inputs (in order), constants (by id), operators (in
//! [`Graph::topo_order`], or by id if the graph has a cycle), tensors that nothing defines,
//! and graph outputs. Constant data longer than 16 elements is shown as its first 8 values,
//! its length and an FNV-1a hash of its little-endian bytes.

use crate::data::TensorData;
use crate::graph::{Graph, Tensor, TensorId};
use crate::ops::*;
use crate::quant::Quantization;
use std::fmt::Write;

/// Renders `g` as text (one line per input, constant, operator and output).
pub fn dump(g: &Graph) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "graph {:?}", g.name());
    for &t in g.inputs() {
        let _ = writeln!(s, "input  {}", decl(g, t));
    }
    for t in g.tensor_ids() {
        if let Some(x) = g.tensor(t) {
            if let Some(d) = &x.data {
                let _ = writeln!(s, "const  {} = {}", decl(g, t), data(d));
            }
        }
    }
    let order = g.topo_order().unwrap_or_else(|_| g.op_ids().collect());
    for o in order {
        let Some(n) = g.op(o) else { continue };
        let ins: Vec<String> = n.inputs().iter().map(|t| t.to_string()).collect();
        let outs: Vec<String> = n.outputs().iter().map(|&t| decl(g, t)).collect();
        let a = attrs(&n.op);
        let a = if a.is_empty() {
            String::new()
        } else {
            format!(" {{{a}}}")
        };
        let _ = writeln!(
            s,
            "{o} {:?} {}({}){a} -> {}",
            n.name,
            n.op.kind(),
            ins.join(", "),
            outs.join(", ")
        );
    }
    for t in g.tensor_ids() {
        let defined = g.tensor(t).is_some_and(Tensor::is_const)
            || g.inputs().contains(&t)
            || g.producer(t).is_some();
        if !defined {
            let _ = writeln!(s, "undef  {}", decl(g, t));
        }
    }
    for &t in g.outputs() {
        let name = g.tensor(t).map(|x| x.name.as_str()).unwrap_or("");
        let _ = writeln!(s, "output {t} {name:?}");
    }
    s
}

impl std::fmt::Display for Graph {
    /// The [`dump`] text.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&dump(self))
    }
}

/// `%N "name": type q(...)`.
fn decl(g: &Graph, t: TensorId) -> String {
    let Some(x) = g.tensor(t) else {
        return format!("{t} <missing>");
    };
    let q = x
        .quant
        .as_ref()
        .map(|q| format!(" {}", quant(q)))
        .unwrap_or_default();
    format!("{t} {:?}: {}{q}", x.name, x.ty)
}

fn quant(q: &Quantization) -> String {
    match q {
        Quantization::PerTensor { scale, zero_point } => format!("q(s={scale}, zp={zero_point})"),
        Quantization::PerAxis {
            axis,
            scales,
            zero_points,
        } => format!(
            "q(axis={axis}, s={}, zp={})",
            list(scales),
            list(zero_points)
        ),
    }
}

/// `[a, b, c]`, or the first 8 items and `... (n)` for long lists.
fn list<T: std::fmt::Display>(v: &[T]) -> String {
    let shown = if v.len() > 16 { &v[..8] } else { v };
    let items: Vec<String> = shown.iter().map(|x| x.to_string()).collect();
    if v.len() > 16 {
        format!("[{}, ... ({} values)]", items.join(", "), v.len())
    } else {
        format!("[{}]", items.join(", "))
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn data(d: &TensorData) -> String {
    let v = d.to_i64_vec();
    if v.len() > 16 {
        format!("{} fnv={:016x}", list(&v), fnv1a(&d.to_le_bytes()))
    } else {
        list(&v)
    }
}

fn p4(p: &[usize; 4]) -> String {
    format!("[{},{},{},{}]", p[0], p[1], p[2], p[3])
}

fn p2(p: &[usize; 2]) -> String {
    format!("[{},{}]", p[0], p[1])
}

/// Attributes as `key=value` pairs in a fixed order.
fn attrs(op: &Op) -> String {
    let kv: Vec<String> = match op {
        Op::ArgMax(a)
        | Op::ReduceAll(a)
        | Op::ReduceAny(a)
        | Op::ReduceMax(a)
        | Op::ReduceMin(a)
        | Op::ReduceSum(a)
        | Op::Concat(a)
        | Op::Reverse(a) => vec![format!("axis={}", a.axis)],
        Op::AvgPool2d(a) => vec![
            format!("kernel={}", p2(&a.kernel)),
            format!("stride={}", p2(&a.stride)),
            format!("pad={}", p4(&a.pad)),
            format!("input_zp={}", a.input_zp),
            format!("output_zp={}", a.output_zp),
            format!(
                "rounding={}",
                match a.rounding {
                    AvgPoolRounding::Tosa => "tosa",
                    AvgPoolRounding::Tflite => "tflite",
                }
            ),
        ],
        Op::MaxPool2d(a) => vec![
            format!("kernel={}", p2(&a.kernel)),
            format!("stride={}", p2(&a.stride)),
            format!("pad={}", p4(&a.pad)),
        ],
        Op::Conv2d(a) | Op::DepthwiseConv2d(a) => vec![
            format!("pad={}", p4(&a.pad)),
            format!("stride={}", p2(&a.stride)),
            format!("dilation={}", p2(&a.dilation)),
            format!("input_zp={}", a.input_zp),
            format!("weight_zp={}", a.weight_zp),
        ],
        Op::Conv3d(a) => vec![
            format!("pad={:?}", a.pad),
            format!("stride={:?}", a.stride),
            format!("dilation={:?}", a.dilation),
            format!("input_zp={}", a.input_zp),
            format!("weight_zp={}", a.weight_zp),
        ],
        Op::TransposeConv2d(a) => vec![
            format!("out_pad={:?}", a.out_pad),
            format!("stride={}", p2(&a.stride)),
            format!("input_zp={}", a.input_zp),
            format!("weight_zp={}", a.weight_zp),
        ],
        Op::FullyConnected(a) => vec![
            format!("input_zp={}", a.input_zp),
            format!("weight_zp={}", a.weight_zp),
        ],
        Op::MatMul(a) => vec![format!("a_zp={}", a.a_zp), format!("b_zp={}", a.b_zp)],
        Op::Clamp(a) => vec![format!("min={}", a.min), format!("max={}", a.max)],
        Op::Mul(a) => vec![format!("shift={}", a.shift)],
        Op::ArithmeticRightShift(a) => vec![format!("round={}", a.round)],
        Op::Negate(a) => vec![
            format!("input_zp={}", a.input_zp),
            format!("output_zp={}", a.output_zp),
        ],
        Op::Table(a) => {
            let d = match &a.table {
                TableData::I8(t) => TensorData::I8(t.clone()),
                TableData::I16(t) => TensorData::I16(t.clone()),
            };
            vec![format!("table={}{}", d.dtype(), data(&d))]
        }
        Op::Pad(a) => vec![
            format!(
                "padding=[{}]",
                a.padding
                    .iter()
                    .map(|p| format!("[{},{}]", p[0], p[1]))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            format!("pad_const={}", a.pad_const),
        ],
        Op::Reshape(a) => vec![format!("shape={}", a.shape)],
        Op::Slice(a) => vec![format!("start={:?}", a.start), format!("size={:?}", a.size)],
        Op::Tile(a) => vec![format!("multiples={:?}", a.multiples)],
        Op::Transpose(a) => vec![format!("perms={:?}", a.perms)],
        Op::Resize(a) => vec![
            format!(
                "mode={}",
                match a.mode {
                    ResizeMode::NearestNeighbor => "nearest",
                    ResizeMode::Bilinear => "bilinear",
                }
            ),
            format!("scale={:?}", a.scale),
            format!("offset={:?}", a.offset),
            format!("border={:?}", a.border),
        ],
        Op::Cast(a) => vec![format!("to={}", a.to)],
        Op::Rescale(a) => vec![
            format!("out={}", a.output_dtype),
            format!("multiplier={}", list(&a.multiplier)),
            format!("shift={}", list(&a.shift)),
            format!("scale32={}", a.scale32),
            format!("rounding={}", a.rounding.name()),
            format!("per_channel={}", a.per_channel),
            format!("input_zp={}", a.input_zp),
            format!("output_zp={}", a.output_zp),
            format!("input_unsigned={}", a.input_unsigned),
            format!("output_unsigned={}", a.output_unsigned),
        ],
        Op::Float(f) => crate::ops::float::dump_attrs(f),
        _ => vec![],
    };
    kv.join(", ")
}
