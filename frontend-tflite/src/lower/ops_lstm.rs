//! UNIDIRECTIONAL_SEQUENCE_LSTM with TFLite's fully integer kernel (int8 input, output and
//! weights, int32 gate biases, int16 cell state: the "8x8_16" LSTM), unrolled over the time
//! steps.
//!
//! TFLite's arithmetic, per time step and batch row (gates `i`, `f`, `c` (the cell gate
//! `g`), `o`; no peephole, layer norm or CIFG):
//!
//! * every gate's pre-activation is Q3.12 `i16`: first `a = sat16(MBQM(bias + W_x (x - x_zp),
//!   s_x))`, then `sat16(MBQM(W_h (h - h_zp), s_h) + a)`, where `MBQM` is TFLite's
//!   `MultiplyByQuantizedMultiplier` (gemmlowp double rounding), `s_x = w_scale * x_scale /
//!   2^-12` and `s_h = w_scale * h_scale / 2^-12`, computed in `f32`;
//! * `i, f, o = logistic(Q3.12)`, `g = tanh(Q3.12)` in gemmlowp's 16-bit fixed point, Q0.15;
//! * `c = sat16(rdbpot(f * c, 15) + rdbpot(i * g, 30 + cell_log2))` with `rdbpot` rounding
//!   half away from zero, then clipped to `±cell_clip / cell_scale` when `cell_clip > 0`;
//! * `h = sat8(MBQM(o * tanh(c), 2^-30 / hidden_scale) + hidden_zp)` with `tanh` on
//!   Q(15 + cell_log2) and the hidden scale and zero point of intermediate 4; without
//!   projection `h` is both the step's output and the next step's state;
//! * with projection, `y = sat8(MBQM(bias + W_p (h - hidden_zp), w_scale * hidden_scale /
//!   state_scale) + state_zp)`, then clipped to `±proj_clip / output_scale` on the raw values
//!   when `proj_clip > 0`; `y` is the output and the next state.
//!
//! The activations are tabulated for all 65536 inputs here (gemmlowp's functions are not
//! piecewise linear, so not a TOSA TABLE) and looked up with a GATHER: one per step for the
//! four gates (logistic and tanh side by side in one table, the index offset per column),
//! one for the cell state. The input half of
//! every gate does not depend on the state, so it is one FULLY_CONNECTED over all time steps;
//! the recurrent half is one FULLY_CONNECTED per step with the four gates' weights stacked.
//! The state starts from the values TFLite resets variable tensors to (the zero point for the
//! int8 output state, 0 for the cell state) unless the operator is lowered on its own, where
//! the state tensors are graph inputs (`docs/decisions.md` F4).

use super::ctx::{IrT, OpCx, R};
use super::fixed_ir::rdbpot_k;
use super::gemmlowp16;
use super::ops_lut16::checked_log2;
use crate::schema::BuiltinOptionsT;
use crate::Tensor;
use npuc_ir::{
    AxisAttrs, DType, FullyConnectedAttrs, MulAttrs, Op, RescaleRounding, SliceAttrs, TensorData,
};

// TFLite's input indices (lstm_shared.h).
const INPUT: usize = 0;
const INPUT_WEIGHTS: [usize; 4] = [1, 2, 3, 4]; // to input, forget, cell, output gates
const RECURRENT_WEIGHTS: [usize; 4] = [5, 6, 7, 8];
const PEEPHOLE: [usize; 3] = [9, 10, 11];
const BIASES: [usize; 4] = [12, 13, 14, 15];
const PROJECTION: [usize; 2] = [16, 17];
const OUTPUT_STATE: usize = 18;
const CELL_STATE: usize = 19;
const LAYER_NORM: [usize; 4] = [20, 21, 22, 23];

/// Gate order inside the stacked weights: the three sigmoid gates, then the cell gate.
const ORDER: [usize; 4] = [0, 1, 3, 2];

pub(crate) fn unidirectional_sequence_lstm(cx: &mut OpCx<'_, '_>) -> R<()> {
    let BuiltinOptionsT::UnidirectionalSequenceLSTMOptions(o) = cx.opts() else {
        return Err("missing UnidirectionalSequenceLSTMOptions".into());
    };
    let n_inputs = cx.op.inputs.len();
    if n_inputs != 20 && n_inputs != 24 {
        // As TFLite's Prepare; Vela writes CPU LSTMs with absent inputs dropped (17 inputs).
        return Err(format!("expects 20 or 24 inputs, has {n_inputs}"));
    }
    let xt = cx.tin(INPUT)?;
    if OpCx::dtype(xt)? != DType::Int8 {
        return Err(format!(
            "only the integer kernel (int8 input) is supported; input is {:?}",
            xt.dtype
        ));
    }
    for (what, ids) in [
        ("peephole", &PEEPHOLE[..]),
        ("layer normalisation", &LAYER_NORM[..]),
    ] {
        if ids.iter().any(|&i| cx.has_input(i)) {
            return Err(format!("{what} LSTMs are not supported"));
        }
    }
    if !cx.has_input(INPUT_WEIGHTS[0]) {
        return Err("CIFG LSTMs (no input gate) are not supported".into());
    }
    if o.diagonal_recurrent_tensors {
        return Err("diagonal recurrent weights are not supported".into());
    }
    if o.cell_clip < 0.0 || o.proj_clip < 0.0 {
        return Err("negative clip values".into());
    }
    if cx.op.intermediates.len() != 5 {
        return Err(format!(
            "the integer kernel needs 5 intermediate tensors, has {}",
            cx.op.intermediates.len()
        ));
    }

    // Shapes: input [B, T, F] (time-major [T, B, F]), weights [H, F] and [H, H].
    let xs = OpCx::shape(xt)?;
    if xs.len() != 3 {
        return Err(format!("input must be 3-D, is {xs:?}"));
    }
    let (steps, batch, n_in) = if o.time_major {
        (xs[0], xs[1], xs[2])
    } else {
        (xs[1], xs[0], xs[2])
    };
    let n_cell = OpCx::shape(cx.tin(INPUT_WEIGHTS[3])?)?[0];
    let projection = cx.has_input(PROJECTION[0]);
    let n_out = if projection {
        OpCx::shape(cx.tin(PROJECTION[0])?)?[0]
    } else {
        n_cell
    };
    if cx.has_input(PROJECTION[1]) && !projection {
        return Err("a projection bias without projection weights".into());
    }
    for g in 0..4 {
        want_shape(cx.tin(INPUT_WEIGHTS[g])?, &[n_cell, n_in])?;
        want_shape(cx.tin(RECURRENT_WEIGHTS[g])?, &[n_cell, n_out])?;
        want_shape(cx.tin(BIASES[g])?, &[n_cell])?;
        if OpCx::dtype(cx.tin(BIASES[g])?)? != DType::Int32 {
            return Err("gate biases must be int32".into());
        }
    }
    let (ht, ct, ot) = (cx.tin(OUTPUT_STATE)?, cx.tin(CELL_STATE)?, cx.tout(0)?);
    if OpCx::dtype(ht)? != DType::Int8
        || OpCx::dtype(ct)? != DType::Int16
        || OpCx::dtype(ot)? != DType::Int8
    {
        return Err("the output and output state must be int8, the cell state int16".into());
    }
    let numel = |t: &Tensor| OpCx::shape(t).map(|s| s.iter().product::<usize>());
    if numel(ht)? != batch * n_out || numel(ct)? != batch * n_cell {
        return Err("state tensor sizes do not match batch x units".into());
    }

    // Scales (TFLite's Prepare, in f32 where TFLite computes in float).
    let (sx, zx) = OpCx::qparams(xt)?;
    let (sh, zh) = OpCx::qparams(ht)?;
    let (sc, _) = OpCx::qparams(ct)?;
    let (cell_log2, pot) = checked_log2(sc);
    if !pot {
        return Err(format!("cell state scale {sc} is not a power of two"));
    }
    if !(-15..=-9).contains(&cell_log2) {
        return Err(format!(
            "cell state scale 2^{cell_log2} is outside 2^-15..2^-9"
        ));
    }
    let hidden = &cx.l.sg.tensors[cx.op.intermediates[4].index()];
    let (s_hidden, z_hidden) = OpCx::qparams(hidden)?;
    let gate_scale = 2f32.powi(-12);
    let mut s_in = Vec::with_capacity(4 * n_cell);
    let mut s_rec = Vec::with_capacity(4 * n_cell);
    for &g in &ORDER {
        let (wi, _) = OpCx::qparams(cx.tin(INPUT_WEIGHTS[g])?)?;
        let (wr, _) = OpCx::qparams(cx.tin(RECURRENT_WEIGHTS[g])?)?;
        s_in.extend(std::iter::repeat_n(f64::from(wi * sx / gate_scale), n_cell));
        s_rec.extend(std::iter::repeat_n(f64::from(wr * sh / gate_scale), n_cell));
    }
    let s_out = f64::from((2f64.powi(-15) / f64::from(s_hidden) * 2f64.powi(-15)) as f32);
    let proj = if projection {
        Some(Projection::new(
            cx,
            n_cell,
            n_out,
            s_hidden,
            z_hidden,
            sh,
            zh,
            o.proj_clip,
        )?)
    } else {
        None
    };
    let cell_clip = if o.cell_clip > 0.0 {
        (o.cell_clip / sc).clamp(-32768.0, 32767.0) as i64
    } else {
        0
    };

    // Stacked weights [4H, F] and [4H, H] and biases [4H], in ORDER.
    let mut w_in = Vec::with_capacity(4 * n_cell * n_in);
    let mut w_rec = Vec::with_capacity(4 * n_cell * n_out);
    let mut bias = Vec::with_capacity(4 * n_cell);
    for &g in &ORDER {
        w_in.extend(cx.const_input(INPUT_WEIGHTS[g])?);
        w_rec.extend(cx.const_input(RECURRENT_WEIGHTS[g])?);
        bias.extend(cx.const_input(BIASES[g])?);
    }
    let i8s = |v: Vec<i64>| TensorData::I8(v.into_iter().map(|x| x as i8).collect());
    let w_in = cx.constant("input_weights", vec![4 * n_cell, n_in], i8s(w_in))?;
    let w_rec = cx.constant("recurrent_weights", vec![4 * n_cell, n_out], i8s(w_rec))?;
    let bias = TensorData::I32(bias.into_iter().map(|x| x as i32).collect());
    let bias = cx.constant("gate_bias", vec![4 * n_cell], bias)?;
    let no_bias = cx.constant("no_bias", vec![1], TensorData::I32(vec![0]))?;

    // Activation tables, shared by every step: the gates' logistic and tanh as one table
    // (`[logistic; tanh]`, so the four gates are one lookup), and the cell state's tanh.
    let table = |f: &dyn Fn(i16) -> i16| (i16::MIN..=i16::MAX).map(f).collect::<Vec<i16>>();
    let mut gate_fns = table(&|x| gemmlowp16::logistic(x, 3));
    gate_fns.extend(table(&|x| gemmlowp16::tanh(x, 3)));
    let gate_table = cx.constant(
        "logistic_tanh_q3",
        vec![1, 2 * 65536, 1],
        TensorData::I16(gate_fns),
    )?;
    // Index of each gate column: x + 32768 into the logistic, + 65536 more into the tanh.
    let offsets: Vec<i32> = (0..4 * n_cell)
        .map(|j| if j < 3 * n_cell { 32768 } else { 98304 })
        .collect();
    let gate_offsets = cx.constant(
        "gate_offsets",
        vec![1, 4 * n_cell],
        TensorData::I32(offsets),
    )?;
    let cell_bits = 15 + cell_log2;
    let (tanh_cell, cell_offset) = if cell_bits == 3 {
        (gate_table, 98304)
    } else {
        let t = table(&|x| gemmlowp16::tanh(x, cell_bits));
        let t = cx.constant("tanh_cell", vec![1, 65536, 1], TensorData::I16(t))?;
        (t, 32768)
    };

    // The input half of every gate for all steps: [B*T or T*B, 4H] as i32.
    let x = cx.input(INPUT)?;
    let x = cx.reshape(x, vec![steps * batch, n_in])?;
    let acc = fc(cx, x, w_in, bias, zx)?;
    let gates_in = cx.requant_double(acc, DType::Int16, &s_in, 0)?;
    let gates_in = cx.widen_i32(gates_in, 0)?;
    let gates_in = if o.time_major {
        cx.reshape(gates_in, vec![steps, batch, 4 * n_cell])?
    } else {
        cx.reshape(gates_in, vec![batch, steps, 4 * n_cell])?
    };

    let mut h = state(cx, OUTPUT_STATE, vec![batch, n_out], zh)?;
    let mut c = state(cx, CELL_STATE, vec![batch, n_cell], 0)?;
    let mut outs = Vec::with_capacity(steps);
    for t in 0..steps {
        let (start, size) = if o.time_major {
            (vec![t, 0, 0], vec![1, batch, 4 * n_cell])
        } else {
            (vec![0, t, 0], vec![batch, 1, 4 * n_cell])
        };
        let g_in = cx.emit("step", Op::Slice(SliceAttrs { start, size }), &[gates_in])?;
        let g_in = cx.reshape(g_in, vec![batch, 4 * n_cell])?;
        let acc = fc(cx, h, w_rec, no_bias, zh)?;
        let g_rec = cx.requant_double(acc, DType::Int32, &s_rec, 0)?;
        let pre = cx.emit("gates", Op::Add, &[g_in, g_rec])?;
        let pre = saturate(cx, pre, DType::Int16)?;
        let act = lookup(cx, pre, gate_table, gate_offsets)?;
        let gate = |cx: &mut OpCx<'_, '_>, k: usize| slice_cols(cx, act, k * n_cell, n_cell);
        let (ig, fg, og, cg) = (gate(cx, 0)?, gate(cx, 1)?, gate(cx, 2)?, gate(cx, 3)?);

        // c = sat16(rdbpot(f * c, 15) + rdbpot(i * g, 30 + cell_log2)), clipped.
        let fc_ = mul(cx, fg, c)?;
        let fc_ = rdbpot_k(cx, fc_, 15)?;
        let ic = mul(cx, ig, cg)?;
        let ic = rdbpot_k(cx, ic, 30 + cell_log2)?;
        let sum = cx.emit("cell", Op::Add, &[fc_, ic])?;
        c = saturate(cx, sum, DType::Int16)?;
        if cell_clip > 0 {
            c = cx.clamp(c, -cell_clip, cell_clip)?;
        }

        // h = sat8(MBQM(o * tanh(c), 2^-30 / hidden_scale) + hidden_zp).
        let off = cx.constant("offset", vec![1, 1], TensorData::I32(vec![cell_offset]))?;
        let tc = lookup(cx, c, tanh_cell, off)?;
        let oc = mul(cx, og, tc)?;
        h = cx.requant_double(oc, DType::Int8, &[s_out], z_hidden)?;
        if let Some(p) = &proj {
            h = p.apply(cx, h)?;
        }
        let shape = if o.time_major {
            vec![1, batch, n_out]
        } else {
            vec![batch, 1, n_out]
        };
        outs.push(cx.reshape(h, shape)?);
    }
    let axis = if o.time_major { 0 } else { 1 };
    let y = cx.emit("sequence", Op::Concat(AxisAttrs { axis }), &outs)?;
    cx.bind_output(0, y)
}

fn want_shape(t: &Tensor, want: &[usize]) -> R<()> {
    let s = OpCx::shape(t)?;
    if s != want {
        return Err(format!("tensor {:?} is {s:?}, expected {want:?}", t.name));
    }
    Ok(())
}

/// The initial value of a state tensor: the graph input it is bound to (the operator lowered
/// on its own), else TFLite's reset value of a variable tensor.
fn state(cx: &mut OpCx<'_, '_>, i: usize, shape: Vec<usize>, zp: i64) -> R<IrT> {
    let t = cx.tin(i)?;
    if let Some(ir) = cx.l.map[t.id.index()] {
        return cx.reshape(ir, shape);
    }
    if !t.is_variable || cx.l.model.tensor_data(t).is_some() {
        return Err(format!(
            "state tensor {:?} must be a variable tensor without data",
            t.name
        ));
    }
    let n = shape.iter().product();
    let data = match OpCx::dtype(t)? {
        DType::Int8 => TensorData::I8(vec![zp as i8; n]),
        _ => TensorData::I16(vec![0; n]),
    };
    cx.constant(&format!("initial_state{i}"), shape, data)
}

/// `bias + W (x - zp)` as an `i32` accumulator `[N, rows]`.
fn fc(cx: &mut OpCx<'_, '_>, x: IrT, w: IrT, bias: IrT, zp: i64) -> R<IrT> {
    let attrs = FullyConnectedAttrs {
        input_zp: zp,
        weight_zp: 0,
    };
    cx.emit("fc", Op::FullyConnected(attrs), &[x, w, bias])
}

/// Saturates an `i32` tensor to `dt` (an exact identity RESCALE).
fn saturate(cx: &mut OpCx<'_, '_>, x: IrT, dt: DType) -> R<IrT> {
    cx.rescale(
        x,
        dt,
        vec![1 << 30],
        vec![30],
        true,
        RescaleRounding::SingleRound,
        0,
        0,
    )
}

/// Columns `start..start + n` of a 2-D tensor.
fn slice_cols(cx: &mut OpCx<'_, '_>, x: IrT, start: usize, n: usize) -> R<IrT> {
    let rows = cx.ty(x).shape.0[0];
    cx.emit(
        "gate",
        Op::Slice(SliceAttrs {
            start: vec![0, start],
            size: vec![rows, n],
        }),
        &[x],
    )
}

/// The `i32` product of two `i16` tensors.
fn mul(cx: &mut OpCx<'_, '_>, a: IrT, b: IrT) -> R<IrT> {
    cx.emit("mul", Op::Mul(MulAttrs { shift: 0 }), &[a, b])
}

/// `table[x + offset]` for a 2-D `i16` tensor `x` and an `i32` offset broadcast along its
/// rows (a GATHER from a `[1, K, 1]` table).
fn lookup(cx: &mut OpCx<'_, '_>, x: IrT, table: IrT, offset: IrT) -> R<IrT> {
    let shape = cx.ty(x).shape.0.clone();
    let n: usize = shape.iter().product();
    let w = cx.widen_i32(x, 0)?;
    let idx = cx.emit("index", Op::Add, &[w, offset])?;
    let idx = cx.reshape(idx, vec![1, n])?;
    let y = cx.emit("activation", Op::Gather, &[table, idx])?;
    cx.reshape(y, shape)
}

/// The projection of the hidden state onto the output state.
struct Projection {
    weights: IrT,
    bias: IrT,
    hidden_zp: i64,
    scale: f64,
    state_zp: i64,
    clip: i64,
}

impl Projection {
    #[allow(clippy::too_many_arguments)]
    fn new(
        cx: &mut OpCx<'_, '_>,
        n_cell: usize,
        n_out: usize,
        s_hidden: f32,
        hidden_zp: i64,
        s_state: f32,
        state_zp: i64,
        proj_clip: f32,
    ) -> R<Projection> {
        let wt = cx.tin(PROJECTION[0])?;
        want_shape(wt, &[n_out, n_cell])?;
        if OpCx::dtype(wt)? != DType::Int8 {
            return Err("projection weights must be int8".into());
        }
        let (sw, _) = OpCx::qparams(wt)?;
        let scale = f64::from(sw * s_hidden / s_state);
        let weights = cx.input(PROJECTION[0])?;
        let bias = if cx.has_input(PROJECTION[1]) {
            let bt = cx.tin(PROJECTION[1])?;
            want_shape(bt, &[n_out])?;
            if OpCx::dtype(bt)? != DType::Int32 {
                return Err("the projection bias must be int32".into());
            }
            cx.input(PROJECTION[1])?
        } else {
            cx.constant("no_projection_bias", vec![1], TensorData::I32(vec![0]))?
        };
        // TFLite quantizes the clip with the output tensor's scale.
        let (s_out, _) = OpCx::qparams(cx.tout(0)?)?;
        let clip = if proj_clip > 0.0 {
            (proj_clip / s_out).clamp(-128.0, 127.0) as i64
        } else {
            0
        };
        Ok(Projection {
            weights,
            bias,
            hidden_zp,
            scale,
            state_zp,
            clip,
        })
    }

    fn apply(&self, cx: &mut OpCx<'_, '_>, h: IrT) -> R<IrT> {
        let acc = fc(cx, h, self.weights, self.bias, self.hidden_zp)?;
        let y = cx.requant_double(acc, DType::Int8, &[self.scale], self.state_zp)?;
        if self.clip > 0 {
            cx.clamp(y, -self.clip, self.clip)
        } else {
            Ok(y)
        }
    }
}
