"""Hand-built TOSA 1.0 graphs covering the operator modes of PRO-INT + EXT-INT16 +
EXT-INT4 + EXT-DOUBLEROUND (imported by make_tosa.py; tosa-tools' Python serializer).

Each entry of OPS is `name -> (build, inputs)`: `build()` returns the flatbuffer bytes,
`inputs` one generator per graph input, `gen(rng, shape) -> ndarray` (graph inputs must keep
every operator inside its TOSA REQUIRE conditions: no overflow, shifts in range, nonzero
divisors, indices inside the table).

To keep the corpus small (files count in 4 KB blocks), a graph tests several operators or
modes at once: results of one element type are reshaped to `[1, n]` and concatenated into
one graph output (`Graph.collect`). Everything is seeded by the model name.
"""
import numpy as np

from common import quantize_full_range, rng_for, structured_sample

# --------------------------------------------------------------------------
# input generators


def full(dtype):
    """The whole range of an integer type (structured sample, exact extremes)."""
    return lambda rng, shape: quantize_full_range(structured_sample(rng, shape), dtype)


def uniform(lo, hi, dtype, nonzero=False):
    """Uniform integers in [lo, hi], both ends present (at least two elements)."""

    def gen(rng, shape):
        x = rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64)
        f = x.reshape(-1)
        if f.size >= 2:
            f[0], f[-1] = lo, hi
        if nonzero:
            f[f == 0] = 1 if hi >= 1 else -1
        return x.astype(dtype)

    return gen


def boolean(rng, shape):
    return rng.integers(0, 2, size=shape).astype(np.bool_)


def index(k, w_max=None):
    """Indices into a table of k rows."""
    return lambda rng, shape: rng.integers(0, k, size=shape).astype(np.int32)


def distinct_index(k):
    """SCATTER indices: distinct per batch (TOSA requires each output row written once)."""

    def gen(rng, shape):
        n, w = shape
        return np.stack([rng.permutation(k)[:w] for _ in range(n)]).astype(np.int32)

    return gen


# --------------------------------------------------------------------------
# graph builder


class Graph:
    def __init__(self, name):
        import warnings

        warnings.filterwarnings("ignore", category=DeprecationWarning)
        from serializer import tosa_serializer as ts
        from tosa.Op import Op
        from tosa.RoundingMode import RoundingMode

        self.ts = ts
        self.Op = Op
        self.RM = RoundingMode
        self.D = ts.DType
        self.s = ts.TosaSerializer("", tosa_version_major=1, tosa_version_minor=0,
                                   tosa_version_patch=0, tosa_version_draft=False)
        self.rng = rng_for(name, "graph")
        self.shapes = {}
        self.dtypes = {}
        self.pending = {}  # dtype -> list of [1, n] tensors to concatenate into one output

    # tensors
    def input(self, shape, dt):
        t = self.s.addPlaceholder(list(shape), dt, None).name
        self.shapes[t], self.dtypes[t] = list(shape), dt
        return t

    def const(self, dt, vals, shape=None):
        vals = np.asarray(vals)
        shape = list(vals.shape) if shape is None else list(shape)
        t = self.s.addConst(shape, dt, vals.reshape(-1)).name
        self.shapes[t], self.dtypes[t] = shape, dt
        return t

    def scalar(self, dt, v):
        return self.const(dt, np.array([v]), [1])

    def shape(self, vals):
        return self.s.addConst([len(vals)], self.D.SHAPE, np.array(vals, np.int64)).name

    def attr(self, kind, *args):
        a = self.ts.TosaSerializerAttribute()
        getattr(a, kind)(*args)
        return a

    def op(self, op, ins, shape, dt, attr=None, output=False):
        t = (self.s.addOutput if output else self.s.addIntermediate)(list(shape), dt).name
        if attr is None:
            attr = self.ts.TosaSerializerAttribute()
            # MAXIMUM / MINIMUM take nan_mode (1 = PROPAGATE), the others nothing
            args = (1,) if op in ("MAXIMUM", "MINIMUM") else ()
            attr.setAttribute(getattr(self.Op, op), *args)
        self.s.addOperator(getattr(self.Op, op), ins, [t], attr)
        self.shapes[t], self.dtypes[t] = list(shape), dt
        return t

    # composite helpers
    def rescale(self, x, out_dt, mult, shift, in_zp=0, out_zp=0, scale32=True, rounding="SINGLE_ROUND",
                per_channel=False, in_unsigned=False, out_unsigned=False, output=False):
        D = self.D
        in_dt = self.dtypes[x]
        m = self.const(D.INT32 if scale32 else D.INT16, np.array(mult).reshape(-1))
        sh = self.const(D.INT8, np.array(shift).reshape(-1))
        izp = self.scalar(in_dt, in_zp)
        ozp = self.scalar(out_dt, out_zp)
        a = self.ts.TosaSerializerAttribute()
        a.RescaleAttribute(scale32, getattr(self.RM, rounding), per_channel, in_unsigned, out_unsigned)
        return self.op("RESCALE", [x, m, sh, izp, ozp], self.shapes[x], out_dt, a, output)

    def reshape(self, x, shape, output=False):
        return self.op("RESHAPE", [x, self.shape(shape)], shape, self.dtypes[x], None, output)

    def collect(self, x):
        """Queue `x` for the graph output of its element type."""
        n = int(np.prod(self.shapes[x]))
        self.pending.setdefault(self.dtypes[x], []).append(self.reshape(x, [1, n]))

    def serialize(self):
        for dt, ts in self.pending.items():
            total = sum(self.shapes[t][1] for t in ts)
            if len(ts) == 1:
                self.op("IDENTITY", ts, [1, total], dt, None, True)
            else:
                a = self.attr("ConcatAttribute", 1)
                self.op("CONCAT", ts, [1, total], dt, a, True)
        return bytes(self.s.serialize())


def clamp_attr(g, dt, lo, hi):
    np_t = {g.D.INT8: np.int8, g.D.INT16: np.int16}[dt]
    a = g.ts.TosaSerializerAttribute()
    a.ClampAttribute(g.s.builder, np.array([lo], np_t).tobytes(), np.array([hi], np_t).tobytes(), 1)
    return a


def ars_attr(g, rnd):
    # the serializer's ArithmeticRightShiftAttribute() drops `round`
    from tosa import ArithmeticRightShiftAttribute as a

    attr = g.ts.TosaSerializerAttribute()
    attr.ArithmeticRightShiftAttribute(rnd)
    attr.bools.append((a.AddRound, rnd))
    return attr


OPS = {}


def op_model(*gens):
    def deco(f):
        OPS["tosa_" + f.__name__] = (lambda: f(Graph("tosa_" + f.__name__)), list(gens))
        return f

    return deco


# --------------------------------------------------------------------------
# elementwise i32


@op_model(uniform(-(1 << 30), (1 << 30) - 1, np.int32), uniform(-(1 << 30), (1 << 30) - 1, np.int32))
def ew_i32_arith(g):
    """ADD / SUB / MAXIMUM / MINIMUM i32, rank 5 with broadcast in two axes; ABS, NEGATE, CLZ."""
    D = g.D
    a = g.input([2, 3, 1, 4, 5], D.INT32)
    b = g.input([1, 3, 2, 1, 5], D.INT32)
    s = [2, 3, 2, 4, 5]
    for op in ("ADD", "SUB", "MAXIMUM", "MINIMUM"):
        g.collect(g.op(op, [a, b], s, D.INT32))
    g.collect(g.op("ABS", [a], g.shapes[a], D.INT32))
    g.collect(g.op("CLZ", [b], g.shapes[b], D.INT32))
    z = g.scalar(D.INT32, 0)
    g.collect(g.op("NEGATE", [a, z, z], g.shapes[a], D.INT32))
    return g.serialize()


@op_model(uniform(-40000, 40000, np.int32), uniform(-50000, 50000, np.int32, nonzero=True))
def ew_i32_muldiv(g):
    """MUL i32 (shift 0: low 32 bits; shift 1, 13, 31: rounded), INTDIV, comparisons."""
    D = g.D
    a = g.input([1, 6, 7], D.INT32)
    b = g.input([1, 6, 7], D.INT32)
    for sh in (0, 1, 13, 31):
        g.collect(g.op("MUL", [a, b, g.scalar(D.INT8, sh)], [1, 6, 7], D.INT32))
    g.collect(g.op("INTDIV", [a, b], [1, 6, 7], D.INT32))
    for op in ("EQUAL", "GREATER", "GREATER_EQUAL"):
        g.collect(g.op(op, [a, b], [1, 6, 7], D.BOOL))
    # equal values must show up: compare a with a broadcast slice of itself
    a0 = g.op("SLICE", [a, g.shape([0, 0, 0]), g.shape([1, 1, 7])], [1, 1, 7], D.INT32)
    g.collect(g.op("EQUAL", [a, a0], [1, 6, 7], D.BOOL))
    g.collect(g.op("GREATER_EQUAL", [a0, a], [1, 6, 7], D.BOOL))
    return g.serialize()


@op_model(uniform(-(1 << 31) + 1, (1 << 31) - 1, np.int32), uniform(-(1 << 31) + 1, (1 << 31) - 1, np.int32),
          uniform(-3000, 3000, np.int32), full(np.int32))
def ew_i32_mul_range(g):
    """MUL i32 over the whole range: shift 0 keeps the low 32 bits of the product (wraps),
    shift 31 rounds; a small operand times a full-range one with shift 12."""
    D = g.D
    a = g.input([1, 5, 8], D.INT32)
    b = g.input([1, 5, 8], D.INT32)
    c = g.input([1, 1, 8], D.INT32)
    d = g.input([1, 5, 8], D.INT32)
    g.collect(g.op("MUL", [a, b, g.scalar(D.INT8, 0)], [1, 5, 8], D.INT32))
    g.collect(g.op("MUL", [a, b, g.scalar(D.INT8, 31)], [1, 5, 8], D.INT32))
    g.collect(g.op("MUL", [c, d, g.scalar(D.INT8, 12)], [1, 5, 8], D.INT32))
    return g.serialize()


@op_model(full(np.int8), full(np.int8), full(np.int16), full(np.int16))
def ew_mul_narrow(g):
    """MUL i8 x i8 -> i32 and i16 x i16 -> i32 (shift 0), with broadcast."""
    D = g.D
    a = g.input([1, 4, 5, 6], D.INT8)
    b = g.input([1, 1, 5, 6], D.INT8)
    c = g.input([2, 3, 7], D.INT16)
    d = g.input([2, 3, 1], D.INT16)
    z = g.scalar(D.INT8, 0)
    g.collect(g.op("MUL", [a, b, z], [1, 4, 5, 6], D.INT32))
    g.collect(g.op("MUL", [c, d, z], [2, 3, 7], D.INT32))
    return g.serialize()


def _shifts(g, dt, bits, name):
    D = g.D
    a = g.input([1, 3, 4, 5], dt)
    s = g.input([1, 3, 4, 5], dt)
    s1 = g.input([1, 1, 1, 5], dt)
    for rnd in (False, True):
        g.collect(g.op("ARITHMETIC_RIGHT_SHIFT", [a, s], [1, 3, 4, 5], dt, ars_attr(g, rnd)))
    g.collect(g.op("ARITHMETIC_RIGHT_SHIFT", [a, s1], [1, 3, 4, 5], dt, ars_attr(g, True)))
    g.collect(g.op("LOGICAL_LEFT_SHIFT", [a, s], [1, 3, 4, 5], dt))
    g.collect(g.op("LOGICAL_RIGHT_SHIFT", [a, s], [1, 3, 4, 5], dt))
    g.collect(g.op("LOGICAL_RIGHT_SHIFT", [a, s1], [1, 3, 4, 5], dt))
    return g.serialize()


def _bitwise(g, dt):
    a = g.input([2, 3, 4, 5], dt)
    b = g.input([2, 1, 4, 5], dt)
    for op in ("BITWISE_AND", "BITWISE_OR", "BITWISE_XOR"):
        g.collect(g.op(op, [a, b], [2, 3, 4, 5], dt))
    g.collect(g.op("BITWISE_NOT", [a], [2, 3, 4, 5], dt))
    return g.serialize()


@op_model(full(np.int8), uniform(0, 7, np.int8), uniform(0, 7, np.int8))
def shift_i8(g):
    """ARITHMETIC_RIGHT_SHIFT (round off/on, broadcast), LOGICAL_LEFT/RIGHT_SHIFT on i8."""
    return _shifts(g, g.D.INT8, 8, "i8")


@op_model(full(np.int16), uniform(0, 15, np.int16), uniform(0, 15, np.int16))
def shift_i16(g):
    """The shifts on i16."""
    return _shifts(g, g.D.INT16, 16, "i16")


@op_model(full(np.int32), uniform(0, 31, np.int32), uniform(0, 31, np.int32))
def shift_i32(g):
    """The shifts on i32."""
    return _shifts(g, g.D.INT32, 32, "i32")


@op_model(full(np.int8), full(np.int8))
def bitwise_i8(g):
    """BITWISE_AND/OR/XOR (broadcast) and BITWISE_NOT on i8."""
    return _bitwise(g, g.D.INT8)


@op_model(full(np.int16), full(np.int16))
def bitwise_i16(g):
    """BITWISE_* on i16."""
    return _bitwise(g, g.D.INT16)


@op_model(full(np.int32), full(np.int32))
def bitwise_i32(g):
    """BITWISE_* on i32."""
    return _bitwise(g, g.D.INT32)


@op_model(boolean, boolean, boolean)
def logical(g):
    """LOGICAL_AND/OR/XOR (broadcast), LOGICAL_NOT, SELECT of bool."""
    D = g.D
    a = g.input([2, 3, 4, 5], D.BOOL)
    b = g.input([1, 3, 1, 5], D.BOOL)
    c = g.input([2, 3, 4, 5], D.BOOL)
    s = [2, 3, 4, 5]
    for op in ("LOGICAL_AND", "LOGICAL_OR", "LOGICAL_XOR"):
        g.collect(g.op(op, [a, b], s, D.BOOL))
    g.collect(g.op("LOGICAL_NOT", [a], s, D.BOOL))
    g.collect(g.op("SELECT", [c, a, b], s, D.BOOL))
    return g.serialize()


@op_model(boolean, full(np.int8), full(np.int8), full(np.int16), full(np.int16), full(np.int32), full(np.int32))
def select(g):
    """SELECT i8 / i16 / i32 with broadcast condition and operands."""
    D = g.D
    c = g.input([1, 4, 1, 6], D.BOOL)
    s = [2, 4, 5, 6]
    for dt in (D.INT8, D.INT16, D.INT32):
        x = g.input([2, 4, 5, 6], dt)
        y = g.input([1, 1, 5, 1], dt)
        g.collect(g.op("SELECT", [c, x, y], s, dt))
    return g.serialize()


@op_model(full(np.int8), full(np.int16), full(np.int32))
def negate(g):
    """NEGATE i8 with input/output zero points (saturating), i16 and i32 (zero points 0)."""
    D = g.D
    a = g.input([1, 4, 5, 7], D.INT8)
    b = g.input([3, 11], D.INT16)
    c = g.input([2, 2, 2, 2, 3], D.INT32)
    for izp, ozp in ((0, 0), (-128, 0), (17, -100), (-5, 127)):
        g.collect(g.op("NEGATE", [a, g.scalar(D.INT8, izp), g.scalar(D.INT8, ozp)], g.shapes[a], D.INT8))
    z = g.scalar(D.INT16, 0)
    g.collect(g.op("NEGATE", [b, z, z], g.shapes[b], D.INT16))
    z = g.scalar(D.INT32, 0)
    # -(-2^31) is not representable (REQUIRE), so negate c + 1... as max(c, -2^31+1)
    lo = g.const(D.INT32, np.array([-(1 << 31) + 1], np.int32).reshape(1, 1, 1, 1, 1))
    c1 = g.op("MAXIMUM", [c, lo], g.shapes[c], D.INT32)
    g.collect(g.op("NEGATE", [c1, z, z], g.shapes[c], D.INT32))
    return g.serialize()


# --------------------------------------------------------------------------
# convolutions, matrix multiply, pooling


def _scale(x):
    """(multiplier, shift) of a positive real scale for apply_scale_32 (shift 2..62)."""
    m, e = np.frexp(x)
    mult = int(round(m * (1 << 31)))
    shift = 31 - int(e)
    if mult == 1 << 31:
        mult, shift = 1 << 30, shift - 1
    return min(mult, (1 << 31) - 1), max(2, min(62, shift))


def _scale16(x):
    m, e = np.frexp(x)
    mult = int(round(m * (1 << 15)))
    shift = 15 - int(e)
    if mult == 1 << 15:
        mult, shift = 1 << 14, shift - 1
    return min(mult, 32767), max(2, min(62, shift))


def requant(g, acc, out_dt, w, in_range, output=False, rounding="DOUBLE_ROUND", out_zp=0):
    """RESCALE an accumulator to out_dt with per-channel scales from the weights (w: [OC, ...]),
    so the output spans most of its range. i48 accumulators use scale16 (TOSA requires it)."""
    D = g.D
    oc = w.shape[0]
    norms = np.sqrt((w.reshape(oc, -1).astype(np.float64) ** 2).sum(axis=1)) + 1.0
    out_max = 127.0 if out_dt == D.INT8 else 32767.0
    scales = out_max / (norms * in_range * 1.2)
    scale32 = g.dtypes[acc] != D.INT48
    ms = [(_scale if scale32 else _scale16)(s) for s in scales]
    rounding = rounding if scale32 else "SINGLE_ROUND"
    return g.rescale(acc, out_dt, [m for m, _ in ms], [s for _, s in ms], 0, out_zp, scale32, rounding,
                     per_channel=True, output=output)


def weights(g, shape, int4=False):
    lim = 7 if int4 else 127
    # int4_t is -7..7 (TOSA 1.0: the reference model refuses -8)
    return np.clip(np.round(g.rng.laplace(0, lim / 3, size=shape)), -lim, lim).astype(np.int8)


@op_model(full(np.int8))
def conv2d_i8(g):
    """CONV2D i8x8: input zero point -128, weight zero point 5, stride (3,1), dilation (2,3),
    asymmetric padding, batch 2, per-channel DOUBLE_ROUND rescale with output zero point."""
    D = g.D
    x = g.input([2, 11, 10, 3], D.INT8)
    w = weights(g, (5, 3, 2, 3))
    acc = g.op("CONV2D", [x, g.const(D.INT8, w), g.const(D.INT32, g.rng.integers(-3000, 3000, 5)),
                          g.scalar(D.INT8, -128), g.scalar(D.INT8, 5)],
               [2, 4, 10, 5], D.INT32, g.attr("Conv2dAttribute", [2, 1, 0, 3], [3, 1], [2, 3], False, D.INT32))
    requant(g, acc, D.INT8, w.astype(np.int32) - 5, 255, output=True, out_zp=-3)
    return g.serialize()


@op_model(full(np.int8))
def conv2d_i8x4(g):
    """CONV2D i8x4 (EXT-INT4 weights), stride 2, SINGLE_ROUND rescale, one bias for all channels."""
    D = g.D
    x = g.input([1, 9, 9, 6], D.INT8)
    w = weights(g, (7, 3, 3, 6), int4=True)
    acc = g.op("CONV2D", [x, g.const(D.INT4, w), g.const(D.INT32, [123]),
                          g.scalar(D.INT8, 9), g.scalar(D.INT4, 0)],
               [1, 5, 5, 7], D.INT32, g.attr("Conv2dAttribute", [1, 1, 1, 1], [2, 2], [1, 1], False, D.INT32))
    requant(g, acc, D.INT8, w, 137, output=True, rounding="SINGLE_ROUND")
    return g.serialize()


@op_model(full(np.int16))
def conv2d_i16(g):
    """CONV2D i16x8 -> i48 (48-bit bias), scale16 rescale to i16."""
    D = g.D
    x = g.input([1, 7, 8, 4], D.INT16)
    w = weights(g, (6, 3, 3, 4))
    acc = g.op("CONV2D", [x, g.const(D.INT8, w), g.const(D.INT48, g.rng.integers(-(1 << 20), 1 << 20, 6)),
                          g.scalar(D.INT16, 0), g.scalar(D.INT8, 0)],
               [1, 7, 4, 6], D.INT48, g.attr("Conv2dAttribute", [1, 1, 1, 0], [1, 2], [1, 1], False, D.INT48))
    requant(g, acc, D.INT16, w, 32768, output=True)
    return g.serialize()


@op_model(full(np.int8), full(np.int8))
def conv2d_dynamic(g):
    """CONV2D whose weights are a graph input (not a constant)."""
    D = g.D
    x = g.input([1, 6, 6, 4], D.INT8)
    w = g.input([5, 3, 3, 4], D.INT8)
    acc = g.op("CONV2D", [x, w, g.const(D.INT32, g.rng.integers(-3000, 3000, 5)),
                          g.scalar(D.INT8, 3), g.scalar(D.INT8, -2)],
               [1, 4, 4, 5], D.INT32, g.attr("Conv2dAttribute", [0, 0, 0, 0], [1, 1], [1, 1], False, D.INT32))
    g.rescale(acc, D.INT8, [1 << 30], [39], 0, 0, True, "DOUBLE_ROUND", output=True)
    return g.serialize()


@op_model(full(np.int8), full(np.int16))
def depthwise(g):
    """DEPTHWISE_CONV2D i8x8 (multiplier 2, weight zero point, dilation 2), i8x4 and i16x8."""
    D = g.D
    x = g.input([1, 8, 9, 3], D.INT8)
    w = weights(g, (3, 3, 3, 2))
    acc = g.op("DEPTHWISE_CONV2D", [x, g.const(D.INT8, w), g.const(D.INT32, g.rng.integers(-900, 900, 6)),
                                    g.scalar(D.INT8, -7), g.scalar(D.INT8, -3)],
               [1, 4, 9, 6], D.INT32,
               g.attr("DepthwiseConv2dAttribute", [0, 0, 1, 1], [1, 1], [2, 1], False, D.INT32))
    wt = (w.astype(np.int32) + 3).reshape(9, 6).T
    g.collect(requant(g, acc, D.INT8, wt, 255))
    w4 = weights(g, (2, 2, 3, 1), int4=True)
    acc = g.op("DEPTHWISE_CONV2D", [x, g.const(D.INT4, w4), g.const(D.INT32, [0, 0, 0]),
                                    g.scalar(D.INT8, 0), g.scalar(D.INT4, 0)],
               [1, 4, 8, 3], D.INT32,
               g.attr("DepthwiseConv2dAttribute", [0, 0, 0, 0], [2, 1], [1, 1], False, D.INT32))
    g.collect(requant(g, acc, D.INT8, w4.reshape(4, 3).T, 128))
    y = g.input([1, 5, 5, 4], D.INT16)
    w16 = weights(g, (3, 3, 4, 1))
    acc = g.op("DEPTHWISE_CONV2D", [y, g.const(D.INT8, w16), g.const(D.INT48, g.rng.integers(-(1 << 16), 1 << 16, 4)),
                                    g.scalar(D.INT16, 0), g.scalar(D.INT8, 0)],
               [1, 5, 5, 4], D.INT48,
               g.attr("DepthwiseConv2dAttribute", [1, 1, 1, 1], [1, 1], [1, 1], False, D.INT48))
    requant(g, acc, D.INT16, w16.reshape(9, 4).T, 32768, output=True)
    return g.serialize()


@op_model(full(np.int8), full(np.int16))
def transpose_conv(g):
    """TRANSPOSE_CONV2D i8x4 (stride 2, negative out_pad crops) and i16x8 (stride 1x3, padding)."""
    D = g.D
    x = g.input([1, 4, 5, 3], D.INT8)
    w = weights(g, (4, 3, 3, 3), int4=True)
    acc = g.op("TRANSPOSE_CONV2D", [x, g.const(D.INT4, w), g.const(D.INT32, g.rng.integers(-100, 100, 4)),
                                    g.scalar(D.INT8, 4), g.scalar(D.INT4, 0)],
               [1, 8, 10, 4], D.INT32,
               g.attr("TransposeConv2dAttribute", [-1, 0, 0, -1], [2, 2], False, D.INT32))
    requant(g, acc, D.INT8, w, 100, output=True)
    y = g.input([1, 3, 3, 2], D.INT16)
    w16 = weights(g, (3, 2, 4, 2))
    acc = g.op("TRANSPOSE_CONV2D", [y, g.const(D.INT8, w16), g.const(D.INT48, [7, -9, 11]),
                                    g.scalar(D.INT16, 0), g.scalar(D.INT8, 0)],
               [1, 5, 10, 3], D.INT48,
               g.attr("TransposeConv2dAttribute", [1, 0, 1, -1], [1, 3], False, D.INT48))
    requant(g, acc, D.INT16, w16, 16384, output=True)
    return g.serialize()


@op_model(full(np.int8))
def conv3d_i8(g):
    """CONV3D i8x8 -> i32: input zero point, weight zero point, padding in all three axes,
    strides (2,1,2), dilation (1,2,1), batch 2."""
    D = g.D
    x = g.input([2, 5, 7, 6, 3], D.INT8)
    w = weights(g, (4, 3, 2, 3, 3))
    acc = g.op("CONV3D", [x, g.const(D.INT8, w), g.const(D.INT32, g.rng.integers(-2000, 2000, 4)),
                          g.scalar(D.INT8, -11), g.scalar(D.INT8, 2)],
               [2, 3, 7, 3, 4], D.INT32,
               g.attr("Conv3dAttribute", [1, 1, 1, 1, 1, 0], [2, 1, 2], [1, 2, 1], False, D.INT32))
    requant(g, acc, D.INT8, w.astype(np.int32) - 2, 140, output=True, out_zp=6)
    return g.serialize()


@op_model(full(np.int8), full(np.int16))
def conv3d_i4_i16(g):
    """CONV3D i8x4 (EXT-INT4) and i16x8 -> i48 (EXT-INT16)."""
    D = g.D
    x = g.input([1, 4, 5, 5, 4], D.INT8)
    w = weights(g, (3, 2, 3, 3, 4), int4=True)
    acc = g.op("CONV3D", [x, g.const(D.INT4, w), g.const(D.INT32, [50, -50, 0]),
                          g.scalar(D.INT8, 0), g.scalar(D.INT4, 0)],
               [1, 3, 5, 5, 3], D.INT32,
               g.attr("Conv3dAttribute", [0, 0, 1, 1, 1, 1], [1, 1, 1], [1, 1, 1], False, D.INT32))
    requant(g, acc, D.INT8, w, 128, output=True)
    y = g.input([1, 3, 4, 4, 2], D.INT16)
    w16 = weights(g, (2, 2, 2, 2, 2))
    acc = g.op("CONV3D", [y, g.const(D.INT8, w16), g.const(D.INT48, [1 << 20, -(1 << 21)]),
                          g.scalar(D.INT16, 0), g.scalar(D.INT8, 0)],
               [1, 3, 2, 2, 2], D.INT48,
               g.attr("Conv3dAttribute", [1, 0, 0, 0, 0, 0], [1, 2, 2], [1, 1, 1], False, D.INT48))
    requant(g, acc, D.INT16, w16, 32768, output=True)
    return g.serialize()


@op_model(full(np.int8), full(np.int8), full(np.int16), full(np.int16))
def matmul_modes(g):
    """MATMUL i8 with both zero points (batch 2) and i16x16 -> i48 (scale16 rescale)."""
    D = g.D
    a = g.input([2, 5, 9], D.INT8)
    b = g.input([2, 9, 4], D.INT8)
    acc = g.op("MATMUL", [a, b, g.scalar(D.INT8, -20), g.scalar(D.INT8, 33)], [2, 5, 4], D.INT32)
    g.rescale(acc, D.INT8, [1 << 30], [38], 0, 1, True, "DOUBLE_ROUND", output=True)
    c = g.input([1, 3, 6], D.INT16)
    d = g.input([1, 6, 5], D.INT16)
    acc = g.op("MATMUL", [c, d, g.scalar(D.INT16, 0), g.scalar(D.INT16, 0)], [1, 3, 5], D.INT48)
    g.rescale(acc, D.INT16, [24000], [30], 0, 0, False, "SINGLE_ROUND", output=True)
    return g.serialize()


@op_model(full(np.int8), full(np.int16))
def pool(g):
    """AVG_POOL2D i8 (zero points, padding, stride 2) and i16; MAX_POOL2D i8 and i16 (padding)."""
    D = g.D
    x = g.input([1, 9, 10, 5], D.INT8)
    y = g.input([2, 6, 7, 3], D.INT16)
    g.collect(g.op("AVG_POOL2D", [x, g.scalar(D.INT8, -9), g.scalar(D.INT8, 4)], [1, 5, 5, 5], D.INT8,
                   g.attr("AvgPool2dAttribute", [3, 3], [2, 2], [1, 1, 1, 0], D.INT32)))
    g.collect(g.op("MAX_POOL2D", [x], [1, 4, 9, 5], D.INT8,
                   g.attr("MaxPool2dAttribute", [3, 2], [2, 1], [0, 0, 0, 0], 1)))
    z = g.scalar(D.INT16, 0)
    g.collect(g.op("AVG_POOL2D", [y, z, z], [2, 3, 7, 3], D.INT16,
                   g.attr("AvgPool2dAttribute", [2, 3], [2, 1], [0, 0, 1, 1], D.INT32)))
    g.collect(g.op("MAX_POOL2D", [y], [2, 6, 4, 3], D.INT16,
                   g.attr("MaxPool2dAttribute", [1, 3], [1, 2], [0, 0, 1, 1], 1)))
    return g.serialize()


@op_model(full(np.int8), full(np.int16))
def clamp_table(g):
    """CLAMP i8 / i16 (inside and at the type range), TABLE i8 and i16 on rank-2 / rank-5 inputs."""
    D = g.D
    x = g.input([3, 40], D.INT8)
    y = g.input([1, 2, 3, 4, 5], D.INT16)
    g.collect(g.op("CLAMP", [x], [3, 40], D.INT8, clamp_attr(g, D.INT8, -100, 27)))
    g.collect(g.op("CLAMP", [x], [3, 40], D.INT8, clamp_attr(g, D.INT8, -128, -1)))
    g.collect(g.op("CLAMP", [y], g.shapes[y], D.INT16, clamp_attr(g, D.INT16, -30000, 1000)))
    t8 = g.const(D.INT8, g.rng.integers(-128, 128, 256).astype(np.int8))
    g.collect(g.op("TABLE", [x, t8], [3, 40], D.INT8))
    t16 = g.const(D.INT16, np.cumsum(g.rng.integers(-200, 260, 513)).clip(-32768, 32767).astype(np.int16))
    g.collect(g.op("TABLE", [y, t16], g.shapes[y], D.INT32))
    return g.serialize()


@op_model(full(np.int8), full(np.int16))
def argmax(g):
    """ARGMAX i8 on every axis of a rank-4 tensor (ties included), i16 on rank 1 and rank 3."""
    D = g.D
    x = g.input([2, 3, 4, 5], D.INT8)
    for ax in range(4):
        s = [d for i, d in enumerate([2, 3, 4, 5]) if i != ax]
        g.collect(g.op("ARGMAX", [x], s, D.INT32, g.attr("ArgMaxAttribute", ax, 1)))
    y = g.input([4, 6, 9], D.INT16)
    g.collect(g.op("ARGMAX", [y], [4, 6], D.INT32, g.attr("ArgMaxAttribute", 2, 1)))
    g.collect(g.op("ARGMAX", [y], [6, 9], D.INT32, g.attr("ArgMaxAttribute", 0, 1)))
    return g.serialize()


# --------------------------------------------------------------------------
# reductions


@op_model(uniform(-(1 << 26), 1 << 26, np.int32), full(np.int8), full(np.int16), full(np.int32), boolean)
def reduce(g):
    """REDUCE_SUM i32 on every axis of a rank-4 tensor; REDUCE_MAX / MIN i8, i16, i32 on
    several axes (rank 3, 5, 6); REDUCE_ALL / ANY of bool."""
    D = g.D
    a = g.input([2, 3, 4, 5], D.INT32)
    for ax in range(4):
        s = [1 if i == ax else d for i, d in enumerate([2, 3, 4, 5])]
        g.collect(g.op("REDUCE_SUM", [a], s, D.INT32, g.attr("ReduceSumAttribute", ax)))
    for dt, shp in ((D.INT8, [3, 4, 7]), (D.INT16, [2, 3, 2, 3, 4]), (D.INT32, [2, 2, 3, 2, 2, 3])):
        x = g.input(shp, dt)
        for ax in (0, len(shp) - 1, len(shp) // 2):
            s = [1 if i == ax else d for i, d in enumerate(shp)]
            g.collect(g.op("REDUCE_MAX", [x], s, dt, g.attr("ReduceMaxAttribute", ax, 1)))
            g.collect(g.op("REDUCE_MIN", [x], s, dt, g.attr("ReduceMinAttribute", ax, 1)))
    b = g.input([3, 2, 4, 2], D.BOOL)
    for ax in range(4):
        s = [1 if i == ax else d for i, d in enumerate([3, 2, 4, 2])]
        g.collect(g.op("REDUCE_ALL", [b], s, D.BOOL, g.attr("ReduceAllAttribute", ax)))
        g.collect(g.op("REDUCE_ANY", [b], s, D.BOOL, g.attr("ReduceAnyAttribute", ax)))
    return g.serialize()


# --------------------------------------------------------------------------
# data layout at ranks 1 to 6


def _movement(g, dt, shape, perms, pad_const):
    """TRANSPOSE, REVERSE (first and last axis), SLICE, TILE, PAD, CONCAT, IDENTITY of one input."""
    D = g.D
    r = len(shape)
    x = g.input(shape, dt)
    g.collect(g.op("TRANSPOSE", [x], [shape[p] for p in perms], dt, g.attr("TransposeAttribute", perms)))
    for ax in sorted({0, r - 1, r // 2}):
        g.collect(g.op("REVERSE", [x], shape, dt, g.attr("ReverseAttribute", ax)))
    start = [min(1, d - 1) for d in shape]
    size = [max(1, d - 2) if d > 2 else 1 for d in shape]
    g.collect(g.op("SLICE", [x, g.shape(start), g.shape(size)], size, dt))
    mult = [1 + (i % 3 == 0) for i in range(r)]
    mult[-1] = 2
    g.collect(g.op("TILE", [x, g.shape(mult)], [d * m for d, m in zip(shape, mult)], dt))
    pads = []
    for i in range(r):
        pads += [i % 2, (i + 1) % 3]
    out = [d + pads[2 * i] + pads[2 * i + 1] for i, d in enumerate(shape)]
    np_t = {D.BOOL: np.bool_, D.INT8: np.int8, D.INT16: np.int16, D.INT32: np.int32}[dt]
    pc = g.const(dt, np.array([pad_const], np_t), [1])
    g.collect(g.op("PAD", [x, g.shape(pads), pc], out, dt))
    for ax in sorted({0, r - 1}):
        s = list(shape)
        s[ax] *= 2
        g.collect(g.op("CONCAT", [x, x], s, dt, g.attr("ConcatAttribute", ax)))
    g.collect(g.op("IDENTITY", [x], shape, dt))
    return x


@op_model(full(np.int8), full(np.int8), full(np.int8))
def movement_i8(g):
    """Data layout on i8 at ranks 1, 5 and 6."""
    _movement(g, g.D.INT8, [37], [0], -128)
    _movement(g, g.D.INT8, [2, 3, 2, 4, 5], [4, 1, 3, 0, 2], 99)
    _movement(g, g.D.INT8, [2, 2, 3, 2, 3, 4], [5, 3, 1, 4, 0, 2], -1)
    return g.serialize()


@op_model(full(np.int16), full(np.int16))
def movement_i16(g):
    """Data layout on i16 at ranks 2 and 4 (batch 3)."""
    _movement(g, g.D.INT16, [6, 35], [1, 0], 32767)
    _movement(g, g.D.INT16, [3, 4, 5, 6], [2, 0, 3, 1], -32768)
    return g.serialize()


@op_model(full(np.int32), full(np.int32))
def movement_i32(g):
    """Data layout on i32 at ranks 3 and 6."""
    _movement(g, g.D.INT32, [4, 5, 6], [2, 1, 0], -(1 << 31))
    _movement(g, g.D.INT32, [1, 2, 3, 1, 2, 5], [0, 5, 4, 3, 2, 1], 123456789)
    return g.serialize()


@op_model(boolean, boolean)
def movement_bool(g):
    """Data layout on bool at ranks 2 and 4."""
    _movement(g, g.D.BOOL, [5, 9], [1, 0], True)
    _movement(g, g.D.BOOL, [2, 3, 4, 5], [0, 3, 1, 2], False)
    return g.serialize()


@op_model(full(np.int8), full(np.int16))
def reshape(g):
    """RESHAPE between ranks 1 and 6 (i8 and i16), and a CONCAT of three inputs."""
    D = g.D
    x = g.input([2, 3, 4, 5], D.INT8)
    for shp in ([120], [5, 24], [2, 2, 2, 15], [1, 2, 3, 2, 5, 2], [4, 30]):
        g.collect(g.op("TRANSPOSE", [g.reshape(x, shp)], shp[::-1], D.INT8,
                       g.attr("TransposeAttribute", list(range(len(shp)))[::-1])))
    y = g.input([3, 1, 10], D.INT16)
    y6 = g.reshape(y, [1, 3, 1, 2, 1, 5])
    g.collect(g.op("CONCAT", [y6, y6, y6], [1, 3, 1, 2, 3, 5], D.INT16, g.attr("ConcatAttribute", 4)))
    return g.serialize()


# --------------------------------------------------------------------------
# gather / scatter


@op_model(full(np.int8), index(9), full(np.int16), index(5), full(np.int32), index(7))
def gather(g):
    """GATHER i8 (batch 2), i16 (one channel) and i32 with computed indices."""
    D = g.D
    for dt, (n, k, c, w) in ((D.INT8, (2, 9, 6, 11)), (D.INT16, (1, 5, 1, 13)), (D.INT32, (3, 7, 4, 2))):
        v = g.input([n, k, c], dt)
        i = g.input([n, w], D.INT32)
        g.collect(g.op("GATHER", [v, i], [n, w, c], dt))
    return g.serialize()


@op_model(full(np.int8), distinct_index(9), full(np.int8), full(np.int16), distinct_index(6),
          full(np.int16), full(np.int32), distinct_index(4), full(np.int32))
def scatter(g):
    """SCATTER i8 (batch 2), i16 and i32 with computed, distinct indices."""
    D = g.D
    for dt, (n, k, c, w) in ((D.INT8, (2, 9, 5, 4)), (D.INT16, (1, 6, 3, 6)), (D.INT32, (2, 4, 2, 3))):
        vi = g.input([n, k, c], dt)
        i = g.input([n, w], D.INT32)
        x = g.input([n, w, c], dt)
        g.collect(g.op("SCATTER", [vi, i, x], [n, k, c], dt))
    return g.serialize()


# --------------------------------------------------------------------------
# resize


def _resize(g, x, mode, scale, offset, border):
    D = g.D
    n, ih, iw, c = g.shapes[x]
    yn, yd, xn, xd = scale
    # the border nearest the one given that makes the output size exact (idiv_check)
    border = list(border)
    for ax, (i, sn, sd) in enumerate(((ih, yn, yd), (iw, xn, xd))):
        h = (i - 1) * sn - offset[ax]
        border[ax] = min((bb for bb in range(-16 * sn, sn) if (h + bb) % sd == 0),
                         key=lambda bb: abs(bb - border[ax]))
    hy = (ih - 1) * yn - offset[0] + border[0]
    hx = (iw - 1) * xn - offset[1] + border[1]
    oh, ow = hy // yd + 1, hx // xd + 1
    in_dt = g.dtypes[x]
    out_dt = in_dt if mode == "NEAREST" else {D.INT8: D.INT32, D.INT16: D.INT48}[in_dt]
    from tosa.ResizeMode import ResizeMode

    return g.op("RESIZE", [x, g.shape(scale), g.shape(offset), g.shape(border)], [n, oh, ow, c], out_dt,
                g.attr("ResizeAttribute", getattr(ResizeMode, mode)))


RESIZE_CASES = [
    # scale [yn, yd, xn, xd], offset [y, x], border [y, x]
    ([2, 1, 2, 1], [0, 0], [0, 0]),        # x2, top-left aligned
    ([4, 2, 6, 2], [-1, -2], [1, 2]),      # x2 / x3 half-pixel centres
    ([10, 3, 5, 3], [1, 2], [-1, 0]),      # fractional up
    ([1, 3, 3, 7], [0, 1], [0, -3]),       # downscale, offset inside
    ([11, 2, 16, 1], [-5, 0], [0, 0]),     # large factors (x16 along width)
    ([3, 3, 5, 5], [2, -4], [0, 4]),       # unit scale with offsets and borders
]


@op_model(full(np.int8), full(np.int8))
def resize_i8(g):
    """RESIZE i8 nearest and bilinear (i32 sums) over scale/offset/border combinations."""
    D = g.D
    x = g.input([1, 4, 5, 3], D.INT8)
    x2 = g.input([2, 3, 3, 2], D.INT8)
    for i, (sc, off, b) in enumerate(RESIZE_CASES):
        src = x2 if i == 4 else x
        g.collect(_resize(g, src, "NEAREST", sc, off, b))
        g.collect(_resize(g, src, "BILINEAR", sc, off, b))
    return g.serialize()


@op_model(full(np.int16))
def resize_i16(g):
    """RESIZE i16 nearest and bilinear (i48 sums, rescaled to i16 with scale16)."""
    D = g.D
    x = g.input([1, 4, 5, 2], D.INT16)
    for sc, off, b in (RESIZE_CASES[1], RESIZE_CASES[3], RESIZE_CASES[5]):
        g.collect(_resize(g, x, "NEAREST", sc, off, b))
        acc = _resize(g, x, "BILINEAR", sc, off, b)
        # the sum is the value times scale_y_n * scale_x_n
        m, s = _scale16(1.0 / (sc[0] * sc[2]))
        g.collect(g.rescale(acc, D.INT16, [m], [s], scale32=False))
    return g.serialize()


# --------------------------------------------------------------------------
# type conversion


@op_model(boolean, full(np.int8), full(np.int16), full(np.int32))
def cast(g):
    """CAST between bool, i8, i16 and i32 (every PRO-INT mode): widening sign-extends,
    narrowing keeps the low bits, to bool tests != 0, from bool gives 0 / 1."""
    D = g.D
    b = g.input([2, 3, 7], D.BOOL)
    x8 = g.input([2, 3, 7], D.INT8)
    x16 = g.input([2, 3, 7], D.INT16)
    x32 = g.input([2, 3, 7], D.INT32)
    s = [2, 3, 7]
    for dt in (D.INT8, D.INT16, D.INT32):
        g.collect(g.op("CAST", [b], s, dt))
    for x in (x8, x16, x32):
        g.collect(g.op("CAST", [x], s, D.BOOL))
    # zeros must occur: cast x AND a sparse mask
    for x, dt in ((x8, D.INT8), (x16, D.INT16), (x32, D.INT32)):
        m = g.op("CAST", [b], s, dt)
        g.collect(g.op("CAST", [g.op("MUL", [x, m, g.scalar(D.INT8, 0)], s, D.INT32)], s, D.BOOL))
    for x, outs in ((x8, (D.INT16, D.INT32)), (x16, (D.INT8, D.INT32)), (x32, (D.INT8, D.INT16))):
        for dt in outs:
            g.collect(g.op("CAST", [x], s, dt))
    return g.serialize()


def _rescales(g, x, cases):
    """cases: (out_dt, scales, scale32, rounding, in_zp, out_zp, in_unsigned, out_unsigned)."""
    D = g.D
    for out_dt, scales, scale32, rnd, izp, ozp, iu, ou in cases:
        per_channel = len(scales) > 1
        ms = [(_scale if scale32 else _scale16)(s) for s in scales]
        g.collect(g.rescale(x, out_dt, [m for m, _ in ms], [s for _, s in ms], izp, ozp, scale32, rnd,
                            per_channel, iu, ou))


@op_model(full(np.int8))
def rescale_i8(g):
    """RESCALE from i8 (and u8) to i8 / u8 / i16 / u16 / i32: scale32 and scale16, both rounding
    modes, per channel, zero points."""
    D = g.D
    x = g.input([1, 3, 4, 8], D.INT8)
    ch = list(np.geomspace(0.3, 1.7, 8))
    _rescales(g, x, [
        (D.INT8, [0.73], True, "SINGLE_ROUND", -128, 127, False, False),
        (D.INT8, ch, False, "SINGLE_ROUND", 7, -9, False, False),
        (D.INT8, ch, True, "DOUBLE_ROUND", 100, 0, True, False),        # u8 in, zero point 100
        (D.INT8, [0.5], True, "DOUBLE_ROUND", -56, 3, True, False),     # u8 zero point 200
        (D.INT8, [0.9], True, "SINGLE_ROUND", 11, -128, False, True),   # u8 out, zero point 128
        (D.INT16, [v * 250 for v in ch], True, "DOUBLE_ROUND", -3, 0, False, False),
        (D.INT16, [255.0], False, "SINGLE_ROUND", 0, 0, True, False),
        (D.INT16, [200.0], True, "SINGLE_ROUND", 0, -32768, False, True),  # u16 out, zp 32768
        (D.INT16, [100.0], True, "DOUBLE_ROUND", 0, 0, False, True),       # u16 out, zp 0
        (D.INT32, [v * 1e6 for v in ch], True, "DOUBLE_ROUND", 5, 0, False, False),
        (D.INT32, [3e4], False, "SINGLE_ROUND", -128, 0, False, False),
    ])
    return g.serialize()


@op_model(full(np.int16))
def rescale_i16(g):
    """RESCALE from i16 (and u16) to i8 / u8 / i16 / u16 / i32."""
    D = g.D
    x = g.input([2, 3, 6], D.INT16)
    ch = list(np.geomspace(0.5, 2.0, 6))
    _rescales(g, x, [
        (D.INT8, [v / 300 for v in ch], True, "DOUBLE_ROUND", 0, -5, False, False),
        (D.INT8, [1 / 250], False, "SINGLE_ROUND", -32768, 0, True, False),  # u16 in, zp 32768
        (D.INT8, [1 / 256], True, "SINGLE_ROUND", 0, 100, False, True),       # u8 out, zp 100
        (D.INT16, [0.8], False, "SINGLE_ROUND", 0, 0, False, False),
        (D.INT16, ch, True, "DOUBLE_ROUND", 0, 0, False, False),
        (D.INT16, [0.5], True, "SINGLE_ROUND", -32768, 0, True, False),       # u16 in
        (D.INT16, [0.75], True, "DOUBLE_ROUND", 0, -32768, False, True),      # u16 out, zp 32768
        (D.INT32, [v * 5e3 for v in ch], True, "DOUBLE_ROUND", 0, 0, False, False),
        (D.INT32, [1.0], False, "SINGLE_ROUND", 0, 0, False, False),
    ])
    return g.serialize()


@op_model(full(np.int32))
def rescale_i32(g):
    """RESCALE from full-range i32 to i8 / i16 / i32 (scale32 with shifts above 31, scale16)."""
    D = g.D
    x = g.input([1, 2, 5, 4], D.INT32)
    ch = list(np.geomspace(0.12, 0.49, 4))  # scale32 needs shift >= 32 (scale < 0.5) for full-range i32
    _rescales(g, x, [
        (D.INT8, [v / 2 ** 24 for v in ch], True, "DOUBLE_ROUND", 0, 9, False, False),
        (D.INT8, [1 / 2 ** 25], True, "SINGLE_ROUND", 0, -128, False, False),
        (D.INT8, [1 / 2 ** 24], False, "SINGLE_ROUND", 0, 0, False, False),
        (D.INT16, [v / 2 ** 16 for v in ch], True, "DOUBLE_ROUND", 0, 0, False, False),
        (D.INT16, [1 / 40000], False, "SINGLE_ROUND", 0, 0, False, False),
        (D.INT32, [0.45], True, "DOUBLE_ROUND", 0, 0, False, False),
        (D.INT32, ch, True, "SINGLE_ROUND", 0, 0, False, False),
        (D.INT32, [0.99], False, "SINGLE_ROUND", 0, 0, False, False),
    ])
    return g.serialize()


@op_model(full(np.int16), full(np.int16))
def rescale_i48(g):
    """RESCALE from i48 to i8, i16 and i32 (scale16: TOSA forbids scale32 for i48): the i48
    values come from a MATMUL i16x16 with 64-long rows, beyond the i32 range."""
    D = g.D
    a = g.input([1, 4, 64], D.INT16)
    b = g.input([1, 64, 5], D.INT16)
    acc = g.op("MATMUL", [a, b, g.scalar(D.INT16, 0), g.scalar(D.INT16, 0)], [1, 4, 5], D.INT48)
    ch = list(np.geomspace(0.5, 2.0, 5))
    _rescales(g, acc, [
        (D.INT8, [v / 2 ** 26 for v in ch], False, "SINGLE_ROUND", 0, 0, False, False),
        (D.INT16, [1 / 2 ** 18], False, "SINGLE_ROUND", 0, 0, False, False),
        (D.INT32, [v / 2 ** 6 for v in ch], False, "SINGLE_ROUND", 0, 0, False, False),
    ])
    return g.serialize()
