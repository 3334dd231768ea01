//! The global choice of every operation's streams and staging (decision S13): a mixed integer
//! program, built with `good_lp` and solved by its pure-Rust `microlp` solver.
//!
//! Each operation (outside cascades) gets its options: the planned block, or the cheapest SWD
//! candidate where an FWD one was planned ([`OpPlan::alt`]); its IFM read in place or copied
//! into the staging memory (S9); its streams read from region 0, staged whole (S2) or (the
//! planned block only) in OFM-depth slices (S7). Every option is costed once by the cost model, independently of
//! the other operations: the cycles of its kernels (a sliced one's inner DMA exposure
//! included), its first DMA's cycles (the IFM copy's and the streams'), which the previous
//! operation's last kernel hides, and its off-chip bytes. The program takes one option per
//! operation (binary variables) minimising the S11 objective, cycles plus priced off-chip
//! bytes, where the exposed part of an operation's first DMA is a variable bounded below by
//! its DMA cycles minus the previous operation's last kernel's; the staging buffers' bytes
//! live at each step of the operation timeline, with the feature maps (and the constant
//! copy) the allocator placed in the staging memory, stay within its capacity.
//!
//! The solver runs with a fixed node limit (never a clock), so its answer depends on the
//! program alone; a program larger than [`MAX_BINARIES`] is not built. The buffers are then
//! placed in order as the greedy places them (lowest fitting offset, S2's waits); an option
//! whose buffers do not fit where the program counted bytes only falls back to the cheapest
//! option that fits. `emit` keeps this schedule only when its whole stream's estimate beats
//! the greedy's.

use super::plan::{estimate_traffic, OpPlan};
use super::regs::locs;
use super::staging::{self, ConstCopy, IfmCopy, SliceCands, Staged, Staging, StagingSpan};
use super::{cascade, chain, weights};
use good_lp::{variable, Expression, ProblemVariables, SolverModel, Variable};
use npuc_backend::writer::CommandWriter;
use npuc_backend_lower::{Kernel, Lowered};
use npuc_target::alloc::{self, Item, Placement};
use npuc_target::arch_interface::{Target, WeightStreams};
use npuc_target::arch_interface::{REGION_FAST, REGION_READ_ONLY};
use npuc_target::objective;
use npuc_target::parallel;
use std::collections::BTreeMap;

/// Branch-and-bound nodes the solver may explore: the deterministic time budget.
const NODE_LIMIT: u64 = 2_000;

/// Programs with more binary variables than this are not built (the greedy stays).
const MAX_BINARIES: usize = 4_000;

/// How an option reads its streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Read {
    Direct,
    Whole,
    /// Slice candidate `i` of the plan's [`SliceCands`].
    Sliced(usize),
}

/// One option of one operation.
#[derive(Clone, Debug)]
pub(super) struct Opt {
    /// 0: the plan; 1: its SWD alternative ([`OpPlan::alt`]); 2: its staged block
    /// ([`OpPlan::staged`]); `3 + i`: its microblock candidate `i` ([`OpPlan::micro`],
    /// encoded when taken).
    pub alt: usize,
    /// The IFM is copied into the staging memory.
    pub copy: bool,
    pub read: Read,
    /// Kernel cycles (a sliced option: with its later slices' DMA exposure).
    run: u64,
    /// Cycles of the DMAs issued before the first kernel (IFM copy, first stream block).
    dma: u64,
    /// Off-chip bytes of the kernels and the DMAs.
    bytes: u64,
    /// Cycles of the last kernel (what hides the next operation's first DMA).
    last: u64,
    /// Bytes of the IFM copy's buffer and of the (first) stream buffer, live from the
    /// operation before to the operation; a sliced option's second buffer lives at the
    /// operation only.
    copy_size: u64,
    buf: u64,
    second: bool,
    /// Short description (`swd`/`fwd`, `direct`/`whole`/`N slices`, `+ifm copy`).
    pub label: String,
}

impl Opt {
    /// The objective of this option after an operation whose last kernel runs `hide` cycles.
    pub fn cost(&self, hide: u64) -> u64 {
        objective::cost((self.run + self.dma.saturating_sub(hide), self.bytes))
    }

    /// Aligned bytes live from the operation before, and at the operation.
    fn memory(&self) -> (u64, u64) {
        let a = |s: u64| s.next_multiple_of(alloc::ALIGN);
        let before = a(self.copy_size) + a(self.buf);
        (before, before + if self.second { a(self.buf) } else { 0 })
    }
}

/// The options of every operation (empty: a cascade's, whose staging is decided with it),
/// with the plans' slice candidates ([`staging::slice_all`]) their sliced options refer to.
pub(super) struct Options<'s> {
    pub ops: Vec<Vec<Opt>>,
    slices: &'s [SliceCands],
}

/// The per-operation choice of the optimiser, with the next-best option, for `explain`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Choice {
    /// The chosen option's description and objective (cycles + priced off-chip bytes).
    pub chosen: (String, u64),
    /// The cheapest other option, if any.
    pub next: Option<(String, u64)>,
}

/// The options of each operation of `l`, planned as `plans`, with the feature maps at `p`;
/// `sliced`: the slice candidates of the plans ([`staging::slice_all`]).
pub(super) fn options<'s>(
    target: &dyn Target,
    l: &Lowered,
    plans: &[OpPlan],
    p: &Placement,
    chains: &[Option<chain::Operand>],
    cascades: &[cascade::Cascade],
    sliced: &'s [SliceCands],
) -> Option<Options<'s>> {
    let (region, _) = target.staging()?;
    let in_cascade: Vec<bool> = cascade::members(cascades, l.ops.len());
    let none = BTreeMap::new();
    let dma_traffic = |size: u64| {
        let mut w = CommandWriter::default();
        weights::dma_commands(&mut w, 0, region, 0, size);
        target.estimate_traffic(&w.commands)
    };
    let copy_traffic = staging::copy_traffic(target, region);
    let ops: Vec<Vec<Opt>> = parallel::map(&l.ops, |k, op| {
        if in_cascade[k] {
            return Vec::new();
        }
        let chained = chains[k].is_some() || (k > 0 && chains[k - 1].is_some());
        // (The SWD alternative is offered read in place or staged whole: its slices are not
        // encoded, which would cost a second encoding of every slice candidate.)
        let alt = plans[k].alt.as_deref().filter(|_| !chained);
        let staged = plans[k].staged.as_deref().filter(|_| !chained);
        let mut opts = Vec::new();
        let buf = op.ifm.buffer;
        let copyable = matches!(
            op.kernel,
            Kernel::Conv | Kernel::Depthwise | Kernel::Pool(_)
        ) && !chained
            && !l.constants.contains_key(&buf)
            && p.regions[buf] != region
            && p.regions[buf] != alloc::CHAINED;
        let plan_alts = [(0, Some(&plans[k])), (1, alt), (2, staged)];
        for (a, plan) in plan_alts {
            let Some(plan) = plan else {
                continue;
            };
            let cands: &[_] = if a == 0 { &sliced[k] } else { &[] };
            let format = if plan.enc.is_some() || plan.block.weight_streams == WeightStreams::Single
            {
                format!("{} ", target.block_names(&plan.block).weight_format)
            } else {
                String::new()
            };
            let ublock = {
                let (h, w, d) = plan.block.microblock;
                format!("ublock {h}x{w}x{d}")
            };
            let at = locs(op, p, l, &none);
            let mut variants = vec![(false, at, (plan.cycles, plan.offchip), (0, 0))];
            if copyable {
                let mut moved = locs(op, p, l, &none);
                moved.ifm = (region, op.ifm.view.offset);
                let layout = plan.enc.as_ref().map(weights::Encoded::layout);
                let direct = estimate_traffic(
                    target,
                    op,
                    &plan.block,
                    layout.as_ref(),
                    REGION_READ_ONLY,
                    &moved,
                );
                let copied = copy_traffic(p.regions[buf], l.buffers[buf].size);
                variants.push((true, moved, direct, copied));
            }
            for (copy, at, (dc, db), copied) in variants {
                let copy_size = if copy { l.buffers[buf].size } else { 0 };
                let suffix = if copy { " +ifm copy" } else { "" };
                let opt = |read, run, dma, bytes, last, buf, second, what: &str| Opt {
                    alt: a,
                    copy,
                    read,
                    run,
                    dma,
                    bytes,
                    last,
                    copy_size,
                    buf,
                    second,
                    label: if a == 2 {
                        // The staged block (S14): named by its OFM block, as the plan's is
                        // in the operation's `block` line.
                        let (h, w, d) = plan.block.ofm_block;
                        format!("{format}{what}{suffix}, ofm block {h}x{w}x{d}, {ublock}")
                    } else {
                        format!("{format}{what}{suffix}, {ublock}")
                    },
                };
                opts.push(opt(
                    Read::Direct,
                    dc,
                    copied.0,
                    db + copied.1,
                    dc,
                    0,
                    false,
                    "direct",
                ));
                let Some(enc) = &plan.enc else {
                    continue;
                };
                let (s, sb) =
                    estimate_traffic(target, op, &plan.block, Some(&enc.layout()), region, &at);
                let (d, db) = dma_traffic(enc.size());
                opts.push(opt(
                    Read::Whole,
                    s,
                    copied.0 + d,
                    sb + db + copied.1,
                    s,
                    enc.size(),
                    false,
                    "whole",
                ));
                for (i, (block, slices)) in cands.iter().enumerate() {
                    let Some(slices) = slices else {
                        continue;
                    };
                    let (mut run, mut bytes, mut first, mut last) = (0u64, copied.1, 0u64, None);
                    for s in slices {
                        let mut sat = locs(&s.op, p, l, &none);
                        let (c, cb) = if copy {
                            sat.ifm = (region, s.op.ifm.view.offset);
                            let layout = s.enc.layout();
                            estimate_traffic(target, &s.op, block, Some(&layout), region, &sat)
                        } else {
                            s.staged_traffic(target, block, region, &sat)
                        };
                        let (d, db) = dma_traffic(s.enc.size());
                        match last {
                            None => first = d,
                            Some(prev) => run += d.saturating_sub(prev),
                        }
                        run += c;
                        bytes += cb + db;
                        last = Some(c);
                    }
                    let size = slices.iter().map(|s| s.enc.size()).max().unwrap_or(0);
                    opts.push(opt(
                        Read::Sliced(i),
                        run,
                        copied.0 + first,
                        bytes,
                        last.unwrap_or(0),
                        size,
                        true,
                        &format!("{} slices", slices.len()),
                    ));
                }
            }
        }
        // The best candidate of every other microblock (S20): read in place or staged whole,
        // costed with the preferred candidate's stream lengths.
        if !chained {
            let (d, db) = dma_traffic(plans[k].micro.first().map_or(0, |m| m.bytes));
            for (i, m) in plans[k].micro.iter().enumerate() {
                let format = target.block_names(&m.block).weight_format;
                let ((h, w, dd), (uh, uw, ud)) = (m.block.ofm_block, m.block.microblock);
                let label = |what: &str| {
                    format!("{format} {what}, ofm block {h}x{w}x{dd}, ublock {uh}x{uw}x{ud}")
                };
                let opt = |read, (run, bytes): (u64, u64), dma, buf, what: &str| Opt {
                    alt: 3 + i,
                    copy: false,
                    read,
                    run,
                    dma,
                    bytes,
                    last: run,
                    copy_size: 0,
                    buf,
                    second: false,
                    label: label(what),
                };
                opts.push(opt(Read::Direct, m.direct, 0, 0, "direct"));
                let staged = (m.staged.0, m.staged.1 + db);
                opts.push(opt(Read::Whole, staged, d, m.bytes, "whole"));
            }
        }
        opts
    });
    Some(Options {
        ops,
        slices: sliced,
    })
}

/// Whether option `b` is never worse than `a` (earlier options win ties): no dearer at any
/// hiding, hides as much for the next operation, and no more staging memory.
fn dominates(b: &Opt, a: &Opt) -> bool {
    let (bm, am) = (b.memory(), a.memory());
    b.run + b.bytes <= a.run + a.bytes
        && b.run + b.bytes + b.dma <= a.run + a.bytes + a.dma
        && b.last >= a.last
        && bm.0 <= am.0
        && bm.1 <= am.1
}

/// The indices of `opts` no earlier or cheaper option dominates, in order.
fn undominated(opts: &[Opt]) -> Vec<usize> {
    (0..opts.len())
        .filter(|&i| {
            !opts.iter().enumerate().any(|(j, b)| {
                j != i && dominates(b, &opts[i]) && (j < i || !dominates(&opts[i], b))
            })
        })
        .collect()
}

/// A 0/1 option that runs operations `first..=last` together (a candidate cascade, decision
/// S20), exclusive with their own options.
#[derive(Clone, Debug)]
pub(super) struct Group {
    pub first: usize,
    pub last: usize,
    /// Its objective without its DMAs: cycles plus priced off-chip bytes.
    pub cost: u64,
    /// Cycles of its DMAs before its first operation (the operation before hides them).
    pub dma: u64,
    /// Bytes it adds to (negative: frees from) the staging memory at each step of its span.
    pub memory: Vec<i64>,
}

/// The option the program takes for each operation (`None` per cascade operation), or `None`
/// when the program is too large or the solver finds no solution within its node limit.
/// `occupied`: the feature maps (and the constant copy) in the staging memory; `cap`: what
/// the staging buffers may use; `after_chain[k]`: operation `k`'s buffers live from `k - 2`.
pub(super) fn solve(
    opts: &Options,
    occupied: &[(Item, u64)],
    cap: u64,
    after_chain: &[bool],
    solved: &Solved,
) -> Option<Vec<Option<usize>>> {
    solve_program(&opts.ops, &[], occupied, cap, after_chain, solved).map(|(pick, _)| pick)
}

/// What a program's solution takes: each operation's option (`None`: in a group, or no
/// options) and each group.
type Taken = (Vec<Option<usize>>, Vec<bool>);

/// The programs solved so far, each with its answer: the same program (the same numbers in
/// its objective and constraints, the same variables) is solved once. The probe and the
/// final choice, and the schedules with and without the constant copy, often build the
/// same program (the copy leaves the capacity constraints slack, the counted slices leave
/// the options as they were); the solver's answer is a function of the program alone
/// (a node limit, never a clock).
#[derive(Debug, Default)]
pub(super) struct Solved(std::sync::Mutex<Vec<(Vec<u64>, Option<Taken>)>>);

impl Solved {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Vec<u64>, Option<Taken>)>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Every number [`solve_program`] builds its program from, in the order it reads them: the
/// options kept per operation (their indices and figures, whether they are variables), the
/// groups, which operations' buffers live from two operations before, and the steps whose
/// capacity is a constraint with the room left there. Equal keys build equal programs.
fn program_key(
    ops: &[Vec<Opt>],
    keep: &[Vec<usize>],
    free: &dyn Fn(usize) -> bool,
    groups: &[Group],
    after_chain: &[bool],
    rows: &[(usize, f64)],
) -> Vec<u64> {
    let mut key = vec![ops.len() as u64];
    for (k, kk) in keep.iter().enumerate() {
        key.extend([kk.len() as u64, u64::from(free(k))]);
        for &o in kk {
            let opt = &ops[k][o];
            let (before, at) = opt.memory();
            key.extend([
                o as u64,
                opt.alt as u64,
                opt.run,
                opt.bytes,
                opt.dma,
                opt.last,
            ]);
            key.extend([before, at]);
        }
    }
    key.push(groups.len() as u64);
    for g in groups {
        key.extend([g.first as u64, g.last as u64, g.cost, g.dma]);
        key.extend(g.memory.iter().map(|&m| m as u64));
    }
    key.extend(after_chain.iter().map(|&a| u64::from(a)));
    key.push(rows.len() as u64);
    for &(t, room) in rows {
        key.extend([t as u64, room.to_bits()]);
    }
    key
}

/// [`solve`] with `groups`: each operation takes one of its options or one group covering
/// it. Returns the options taken (`None`: in a group, or no options) and the groups taken.
fn solve_program(
    ops: &[Vec<Opt>],
    groups: &[Group],
    occupied: &[(Item, u64)],
    cap: u64,
    after_chain: &[bool],
    solved: &Solved,
) -> Option<Taken> {
    let n = ops.len();
    let keep: Vec<Vec<usize>> = ops.iter().map(|o| undominated(o)).collect();
    let mut covered = vec![false; n];
    for g in groups {
        for c in &mut covered[g.first..=g.last] {
            *c = true;
        }
    }
    let free = |k: usize| keep[k].len() > 1 || (covered[k] && !keep[k].is_empty());
    let binaries: usize = (0..n)
        .filter(|&k| free(k))
        .map(|k| keep[k].len())
        .sum::<usize>()
        + groups.len();
    if binaries == 0 || binaries > MAX_BINARIES {
        return None;
    }
    let mut vars = ProblemVariables::new();
    // x[k][j]: option keep[k][j] of operation k (`None`: the only option, fixed); y[g]: group
    // g. (Variables are numbered in creation order, as the solution lists their values.)
    let mut x: Vec<Vec<Option<Variable>>> = Vec::with_capacity(n);
    let mut index: Vec<Vec<usize>> = Vec::with_capacity(n);
    let mut count = 0usize;
    for (k, kk) in keep.iter().enumerate() {
        let mut row = Vec::new();
        let mut at = Vec::new();
        for _ in kk {
            if free(k) {
                row.push(Some(vars.add(variable().binary())));
                at.push(count);
                count += 1;
            } else {
                row.push(None);
                at.push(usize::MAX);
            }
        }
        x.push(row);
        index.push(at);
    }
    let y: Vec<Variable> = groups
        .iter()
        .map(|_| vars.add(variable().binary()))
        .collect();
    let y_at: Vec<usize> = (count..count + groups.len()).collect();
    // The value of a per-option quantity of operation k: an expression and a constant.
    let linear = |k: usize, f: &dyn Fn(&Opt) -> f64| {
        let mut e = Expression::from(0.0);
        for (j, &o) in keep[k].iter().enumerate() {
            match x[k][j] {
                Some(v) => e += f(&ops[k][o]) * v,
                None => e += f(&ops[k][o]),
            }
        }
        e
    };
    // The objective counts every cost twice and a microblock candidate (S21) one more, so
    // that it never wins a tie against the plan's own options.
    let mut objective = Expression::from(0.0);
    let mut constraints = Vec::new();
    for (g, v) in groups.iter().zip(&y) {
        objective += 2.0 * g.cost as f64 * *v;
        if g.dma > 0 {
            // Its DMAs' cycles beyond what the operation before hides.
            let e = vars.add(variable().min(0.0));
            objective += 2.0 * e;
            let mut rhs = g.dma as f64 * *v;
            if g.first > 0 {
                rhs -= linear(g.first - 1, &|o| o.last as f64);
            }
            constraints.push(Expression::from(e).geq(rhs));
        }
    }
    for k in 0..n {
        if keep[k].is_empty() {
            continue;
        }
        for j in 0..keep[k].len() {
            if let Some(v) = x[k][j] {
                let o = &ops[k][keep[k][j]];
                let tie = u64::from(o.alt >= 3);
                objective += (2 * (o.run + o.bytes) + tie) as f64 * v;
            }
        }
        if free(k) {
            let mut one: Expression = x[k].iter().flatten().copied().sum();
            for (g, v) in groups.iter().zip(&y) {
                if (g.first..=g.last).contains(&k) {
                    one += *v;
                }
            }
            constraints.push(one.eq(1.0));
        }
        let any_dma = keep[k].iter().any(|&o| ops[k][o].dma > 0);
        if !any_dma {
            continue;
        }
        // The first DMA's cycles beyond what the previous operation's last kernel hides (a
        // cascade before it, or none: nothing hidden).
        let e = vars.add(variable().min(0.0));
        objective += 2.0 * e;
        let mut rhs = linear(k, &|o| o.dma as f64);
        if k > 0 {
            rhs -= linear(k - 1, &|o| o.last as f64);
        }
        constraints.push(Expression::from(e).geq(rhs));
    }
    // The staging buffers and the groups at each step, beside what the allocator placed.
    let mut rows = Vec::new();
    for t in 0..n {
        let used: u64 = occupied
            .iter()
            .filter(|(it, _)| it.start <= t && t <= it.end)
            .map(|(it, _)| it.size.next_multiple_of(alloc::ALIGN))
            .sum();
        let room = cap.saturating_sub(used) as f64;
        let mut e = Expression::from(0.0);
        let mut worst = 0f64;
        for k in [t, t + 1, t + 2] {
            if k >= n || keep[k].is_empty() {
                continue;
            }
            if t < StagingSpan::new(k, after_chain[k]).item(0).start {
                continue;
            }
            let at = |o: &Opt| {
                let (before, at_k) = o.memory();
                if t == k {
                    at_k
                } else {
                    before
                }
            };
            worst += keep[k].iter().map(|&o| at(&ops[k][o])).max().unwrap_or(0) as f64;
            e += linear(k, &|o| at(o) as f64);
        }
        let mut grouped = 0f64;
        for (g, v) in groups.iter().zip(&y) {
            if (g.first..=g.last).contains(&t) {
                let m = g.memory[t - g.first] as f64;
                grouped = grouped.max(m);
                e += m * *v;
            }
        }
        if worst + grouped > room {
            constraints.push(e.leq(room));
            rows.push((t, room));
        }
    }
    let key = program_key(ops, &keep, &free, groups, after_chain, &rows);
    if let Some((_, taken)) = solved.lock().iter().find(|(k, _)| *k == key) {
        return taken.clone();
    }
    let taken = (|| {
        let mut model = vars.minimise(objective).using(good_lp::microlp);
        for c in constraints {
            model = model.with(c);
        }
        let mut solve = microlp::SolveOptions::default();
        solve.node_limit = Some(NODE_LIMIT);
        let solution = model
            .as_inner()
            .solve_with(solve)
            .ok()?
            .into_solution()
            .ok()?;
        let values: Vec<f64> = solution.iter().map(|(_, v)| v).collect();
        let on = |i: usize| values.get(i).is_some_and(|&a| a > 0.5);
        let taken: Vec<bool> = y_at.iter().map(|&i| on(i)).collect();
        let mut out = Vec::with_capacity(n);
        for k in 0..n {
            let grouped = groups
                .iter()
                .zip(&taken)
                .any(|(g, &t)| t && (g.first..=g.last).contains(&k));
            if keep[k].is_empty() || grouped {
                out.push(None);
                continue;
            }
            let j = (0..keep[k].len()).find(|&j| x[k][j].is_none() || on(index[k][j]))?;
            out.push(Some(keep[k][j]));
        }
        Some((out, taken))
    })();
    solved.lock().push((key, taken.clone()));
    taken
}

/// What [`place`] starts from: the staging region, the high-water mark its buffers may fill,
/// what is placed there already (the feature maps and the constant copy) and that copy.
struct Start {
    region: u8,
    hwm: u64,
    occupied: Vec<(Item, u64)>,
    consts: Option<ConstCopy>,
}

/// The staging of `l` with the options `pick` takes ([`solve`]), placed in order as the
/// greedy places its buffers; an option whose buffers do not fit gives way to the cheapest
/// one that does, starting from `start`. Returns the staging, each operation's alternative
/// (0: the plan), its [`Choice`] and its plan (a microblock candidate's encoded here).
#[allow(clippy::too_many_arguments)]
fn place(
    target: &dyn Target,
    l: &Lowered,
    plans: &[OpPlan],
    p: &Placement,
    chains: &[Option<chain::Operand>],
    cascades: &[cascade::Cascade],
    opts: &Options,
    pick: &[Option<usize>],
    start: Start,
) -> Placed {
    let n = l.ops.len();
    let mut taken_plans: Vec<OpPlan> = plans.iter().map(|plan| plan_for(plan, 0)).collect();
    let mut how: Vec<Staged> = (0..n).map(|_| Staged::Direct).collect();
    let mut copies: Vec<Option<IfmCopy>> = vec![None; n];
    let mut alts = vec![0usize; n];
    let mut choices: Vec<Option<Choice>> = vec![None; n];
    let Start {
        region,
        hwm,
        mut occupied,
        consts,
    } = start;
    let mut prev = 0u64;
    for k in 0..n {
        if let Some(c) = cascades.iter().find(|c| (c.first..=c.last).contains(&k)) {
            if k == c.first && c.staged {
                if let Some(s) = staging::stage_cascade(
                    target,
                    l,
                    p,
                    plans,
                    c,
                    chains,
                    &mut occupied,
                    hwm,
                    region,
                ) {
                    how[k] = s;
                }
            }
            prev = 0;
            continue;
        }
        let os = &opts.ops[k];
        if os.is_empty() {
            prev = plans[k].cycles;
            continue;
        }
        let span = StagingSpan::new(k, k >= 2 && chains[k - 2].is_some());
        let item = |size: u64| span.item(size);
        let waits = |occupied: &[(Item, u64)], off: u64, size: u64| span.waits(occupied, off, size);
        // The program's option first, then the others by their objective after `prev`.
        let mut order: Vec<usize> = (0..os.len()).collect();
        order.sort_by_key(|&i| (Some(i) != pick[k], os[i].cost(prev), i));
        let mut taken = None;
        for i in order {
            let o = &os[i];
            // A microblock candidate is counted when it is to be placed (its streams are made
            // once the schedule is chosen, `decide::encode_chosen`).
            let mut micro = None;
            if o.alt >= 3 {
                let m = &plans[k].micro[o.alt - 3];
                let op = &l.ops[k];
                let Ok(Some(enc)) = weights::count(target, op, &super::geometry(op), &m.block)
                else {
                    continue;
                };
                micro = Some(OpPlan {
                    block: m.block,
                    enc: Some(enc),
                    cycles: m.direct.0,
                    offchip: m.direct.1,
                    alt: None,
                    staged: None,
                    micro: Vec::new(),
                });
            }
            let size = match micro.as_ref().and_then(|m| m.enc.as_ref()) {
                Some(e) => e.size(),
                None => o.buf,
            };
            let mut trial = occupied.clone();
            let mut copy = None;
            if o.copy {
                let Some(off) = alloc::fit(&trial, item(o.copy_size), hwm) else {
                    continue;
                };
                let b = l.ops[k].ifm.buffer;
                copy = Some(IfmCopy {
                    src: (p.regions[b], p.offsets[b]),
                    dst: (region, off),
                    size: o.copy_size,
                    wait: waits(&trial, off, o.copy_size),
                });
                trial.push((item(o.copy_size), off));
            }
            let s = match o.read {
                Read::Direct => Staged::Direct,
                Read::Whole => {
                    let Some(off) = alloc::fit(&trial, item(size), hwm) else {
                        continue;
                    };
                    let wait = waits(&trial, off, size);
                    trial.push((item(size), off));
                    Staged::Whole {
                        region,
                        at: off,
                        wait,
                    }
                }
                Read::Sliced(j) => {
                    let (block, Some(slices)) = &opts.slices[k][j] else {
                        continue;
                    };
                    let Some(a) = alloc::fit(&trial, item(o.buf), hwm) else {
                        continue;
                    };
                    let wait = waits(&trial, a, o.buf);
                    trial.push((item(o.buf), a));
                    let second = Item {
                        size: o.buf,
                        start: k,
                        end: k,
                    };
                    let Some(b) = alloc::fit(&trial, second, hwm) else {
                        continue;
                    };
                    trial.push((second, b));
                    Staged::Sliced {
                        region,
                        bufs: [a, b],
                        slices: slices.clone(),
                        block: *block,
                        wait,
                    }
                }
            };
            occupied = trial;
            copies[k] = copy;
            how[k] = s;
            taken = Some(i);
            taken_plans[k] = micro.unwrap_or_else(|| plan_for(&plans[k], o.alt));
            break;
        }
        // (The first option, direct without a copy, needs no buffer: always taken.)
        let i = taken.unwrap_or(0);
        alts[k] = os[i].alt;
        choices[k] = Some(choice(os, i, prev));
        prev = os[i].last;
    }
    let end = occupied
        .iter()
        .map(|(it, off)| off + it.size.next_multiple_of(alloc::ALIGN))
        .max()
        .unwrap_or(0);
    (
        Staging {
            how,
            copies,
            consts,
            end,
        },
        alts,
        choices,
        taken_plans,
    )
}

/// What [`optimise`] returns: the staging, each operation's alternative (0: the plan), its
/// [`Choice`] and its plan.
pub(super) type Placed = (Staging, Vec<usize>, Vec<Option<Choice>>, Vec<OpPlan>);

/// Option `i` of `os` taken after a kernel of `prev` cycles, and the cheapest other one.
fn choice(os: &[Opt], i: usize, prev: u64) -> Choice {
    let next = (0..os.len())
        .filter(|&j| j != i)
        .min_by_key(|&j| (os[j].cost(prev), j))
        .map(|j| (os[j].label.clone(), os[j].cost(prev)));
    Choice {
        chosen: (os[i].label.clone(), os[i].cost(prev)),
        next,
    }
}

/// Per operation, its slice candidate (index in its [`SliceCands`]) whose option is cheapest
/// with its first DMA exposed, when that is within `1 / margin` of the operation's cheapest
/// option: the slice candidates close enough to win that estimated stream lengths should
/// not decide against them (decision S24).
pub(super) fn close_slices(opts: &Options, margin: u64) -> Vec<(usize, usize)> {
    opts.ops
        .iter()
        .enumerate()
        .filter_map(|(k, os)| {
            let best = os.iter().map(|o| o.cost(0)).min()?;
            let (cost, i) = os
                .iter()
                .filter_map(|o| match o.read {
                    Read::Sliced(i) => Some((o.cost(0), i)),
                    _ => None,
                })
                .min()?;
            (cost <= best + best / margin.max(1)).then_some((k, i))
        })
        .collect()
}

/// The [`Choice`]s of the greedy's staging (`s`, every operation on its plan): each
/// operation's option matched by its IFM copy and how its streams are read.
pub(super) fn greedy_choices(opts: &Options, s: &Staging) -> Vec<Option<Choice>> {
    let mut prev = 0u64;
    let mut out = Vec::with_capacity(opts.ops.len());
    for (k, os) in opts.ops.iter().enumerate() {
        let read = match &s.how[k] {
            Staged::Direct => Some(Read::Direct),
            Staged::Whole { .. } => Some(Read::Whole),
            Staged::Sliced { slices, .. } => opts.slices[k]
                .iter()
                .position(|(_, c)| c.as_ref().is_some_and(|c| c.len() == slices.len()))
                .map(Read::Sliced),
            Staged::Cascade { .. } => None,
        };
        let i = os
            .iter()
            .position(|o| o.alt == 0 && o.copy == s.copies[k].is_some() && Some(o.read) == read);
        match i {
            Some(i) => {
                out.push(Some(choice(os, i, prev)));
                prev = os[i].last;
            }
            None => {
                out.push(None);
                prev = 0;
            }
        }
    }
    out
}

/// An operation's plan for alternative `alt` (0: the plan itself).
pub(super) fn plan_for(plan: &OpPlan, alt: usize) -> OpPlan {
    match (alt, &plan.alt, &plan.staged) {
        (1, Some(a), _) | (2, _, Some(a)) => (**a).clone(),
        _ => OpPlan {
            alt: None,
            staged: None,
            micro: Vec::new(),
            ..plan.clone()
        },
    }
}

/// The staging the program chooses ([`options`], [`solve`], [`place`]), with each
/// operation's alternative and [`Choice`]; `None` when there is no staging memory, no
/// choice to make, or no solution within the node limit. `consts`: whether the constant
/// copy ([`staging::stage_consts`]) may take its bytes first (without it, they are left to
/// the streams: decision S14).
#[allow(clippy::too_many_arguments)]
pub(super) fn optimise(
    target: &dyn Target,
    l: &Lowered,
    plans: &[OpPlan],
    p: &Placement,
    chains: &[Option<chain::Operand>],
    cascades: &[cascade::Cascade],
    opts: &Options,
    consts: bool,
    solved: &Solved,
) -> Option<Placed> {
    let (region, capacity) = target.staging()?;
    let (mut occupied, hwm) = staging::occupancy(l, p, region, capacity);
    let copy_traffic = staging::copy_traffic(target, region);
    // The constant copy (decided from the plans alone) takes its bytes first.
    let consts = if consts {
        staging::stage_consts(
            target,
            l,
            plans,
            p,
            region,
            hwm,
            &mut occupied,
            &copy_traffic,
        )
    } else {
        None
    };
    let n = l.ops.len();
    let after_chain: Vec<bool> = (0..n).map(|k| k >= 2 && chains[k - 2].is_some()).collect();
    let pick = solve(opts, &occupied, hwm, &after_chain, solved)?;
    let start = Start {
        region,
        hwm,
        occupied,
        consts,
    };
    Some(place(
        target, l, plans, p, chains, cascades, opts, &pick, start,
    ))
}

/// The cascades the program takes (decision S20), `None` when there is no staging memory in
/// the fast memory, no candidate, or no solution within the node limit (the greedy's,
/// [`cascade::choose`], stay).
///
/// Every band height of every window [`cascade::windows`] offers ([`cascade::bands`]: those
/// whose rings fit) becomes a 0/1 option ([`Group`]) with its objective (its pieces' cycles
/// and off-chip bytes, its stream copies' off-chip bytes; the copies' cycles as a DMA the
/// operation before hides) and its fast-memory use at each step of its span (its rings and
/// staged streams, the other feature maps it keeps live longer, less its intermediates the
/// allocator had placed there), exclusive with its operations' own options ([`options`] on
/// the placement without cascades, the streams read in place or staged whole, the IFM read
/// in place or copied); one program takes the cascades and those options together, the
/// staging memory's capacity a constraint at every step. Each window offers its cheapest band
/// and its band of fewest bytes.
pub(super) fn cascades(
    target: &dyn Target,
    l: &Lowered,
    plans: &[OpPlan],
    p: &Placement,
    chains: &[Option<chain::Operand>],
) -> Option<Vec<cascade::Cascade>> {
    let (region, capacity) = target.staging()?;
    let fast = target.fast_storage()?;
    if region != REGION_FAST {
        return None;
    }
    let windows = cascade::windows(target, l, p, chains);
    if windows.is_empty() {
        return None;
    }
    let n = l.ops.len();
    let unsliced: Vec<SliceCands> = vec![Vec::new(); n];
    let opts = options(target, l, plans, p, chains, &[], &unsliced)?;
    let (occupied, hwm) = staging::occupancy(l, p, region, capacity);
    // The longest windows first (a window's bands cost about its operations' rows).
    let rows = |&(a, b): &(usize, usize)| {
        (a..=b)
            .map(|j| u64::from(l.ops[j].ofm.shape.0))
            .sum::<u64>()
    };
    let per_window: Vec<Vec<cascade::Band>> =
        parallel::map_heaviest_first(&windows, rows, |_, &w| {
            let bands = cascade::bands(target, l, p, plans, w, fast);
            let cheapest = (0..bands.len()).min_by_key(|&i| {
                let b = &bands[i];
                (objective::cost((b.cycles + b.dma, b.offchip)), b.bytes, i)
            });
            let smallest = (0..bands.len()).min_by_key(|&i| (bands[i].bytes, i));
            let mut keep: Vec<usize> = cheapest.into_iter().chain(smallest).collect();
            keep.sort_unstable();
            keep.dedup();
            keep.into_iter()
                .map(|i| bands[i].clone())
                .collect::<Vec<_>>()
        });
    let bands: Vec<cascade::Band> = per_window.into_iter().flatten().collect();
    if bands.is_empty() {
        return None;
    }
    let groups: Vec<Group> = bands.iter().map(|b| group(l, p, b)).collect();
    let after_chain: Vec<bool> = (0..n).map(|k| k >= 2 && chains[k - 2].is_some()).collect();
    let (_, taken) = solve_program(
        &opts.ops,
        &groups,
        &occupied,
        hwm,
        &after_chain,
        &Solved::default(),
    )?;
    // For `explain`: per taken cascade, the cheapest other way to run its operations (another
    // band, or each operation on its own cheapest option, after nothing hidden).
    let label = |b: &cascade::Band| {
        let c = &b.cascade;
        let rows = c
            .pieces
            .iter()
            .filter(|piece| piece.0 == c.last)
            .map(|piece| piece.2 - piece.1)
            .max()
            .unwrap_or(0);
        let streams = if c.staged { ", streams staged" } else { "" };
        format!(
            "cascade ops {}..={}, {rows}-row bands{streams}",
            c.first, c.last
        )
    };
    let mut out = Vec::new();
    for (i, b) in bands.iter().enumerate() {
        if !taken[i] {
            continue;
        }
        let c = &b.cascade;
        let cost = groups[i].cost + groups[i].dma;
        let alone: u64 = (c.first..=c.last)
            .map(|k| opts.ops[k].iter().map(|o| o.cost(0)).min().unwrap_or(0))
            .sum();
        let mut next = Some((format!("ops {}..={} uncascaded", c.first, c.last), alone));
        for (j, o) in bands.iter().enumerate() {
            let other = groups[j].cost + groups[j].dma;
            if j != i
                && (o.cascade.first, o.cascade.last) == (c.first, c.last)
                && next.as_ref().is_none_or(|n| other < n.1)
            {
                next = Some((label(o), other));
            }
        }
        let mut c = c.clone();
        c.choice = Some(Choice {
            chosen: (label(b), cost),
            next,
        });
        out.push(c);
    }
    Some(out)
}

/// The [`Group`] of a cascade's band: its objective, and the fast-memory bytes it changes at
/// each step of its span against the placement `p` without it.
fn group(l: &Lowered, p: &Placement, b: &cascade::Band) -> Group {
    let (a, z) = (b.cascade.first, b.cascade.last);
    let mut memory = vec![b.bytes as i64; z - a + 1];
    let inner: Vec<usize> = (a..z).map(|j| l.ops[j].ofm.buffer).collect();
    let mut touched: Vec<usize> = Vec::new();
    for op in &l.ops[a..=z] {
        for f in std::iter::once(&op.ifm)
            .chain(op.ifm2.as_ref())
            .chain([&op.ofm])
        {
            if !touched.contains(&f.buffer) {
                touched.push(f.buffer);
            }
        }
    }
    for i in touched {
        if p.regions[i] != REGION_FAST {
            continue;
        }
        let it = alloc::buffer_item(l, i);
        let size = it.size.next_multiple_of(alloc::ALIGN) as i64;
        for (t, m) in (a..=z).zip(memory.iter_mut()) {
            let live = it.start <= t && t <= it.end;
            if inner.contains(&i) {
                // Its ring replaces it.
                if live {
                    *m -= size;
                }
            } else if !live {
                // The cascade keeps what it reads and writes live over its whole span.
                *m += size;
            }
        }
    }
    Group {
        first: a,
        last: z,
        cost: objective::cost((b.cycles, b.offchip)),
        dma: b.dma,
        memory,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{decide, write};
    use super::{dominates, solve_program, undominated, Group, Opt, Read, Solved};
    use npuc_backend::arch::Accelerator;
    use npuc_backend_lower as lower;
    use npuc_target::objective::stream_cost;

    fn opt(run: u64, dma: u64, bytes: u64, last: u64, buf: u64) -> Opt {
        Opt {
            alt: 0,
            copy: false,
            read: if buf == 0 { Read::Direct } else { Read::Whole },
            run,
            dma,
            bytes,
            last,
            copy_size: 0,
            buf,
            second: false,
            label: String::new(),
        }
    }

    #[test]
    fn an_option_no_cheaper_and_using_more_memory_is_dropped() {
        let direct = opt(100, 0, 50, 100, 0);
        let staged = opt(80, 40, 50, 80, 64);
        // Cheaper when the DMA is hidden, dearer when not, less to hide the next DMA with.
        assert!(!dominates(&direct, &staged) && !dominates(&staged, &direct));
        let worse = opt(100, 10, 60, 100, 64);
        assert!(dominates(&direct, &worse));
        assert_eq!(undominated(&[direct.clone(), staged, worse]), vec![0, 1]);
        // Equal options: the earlier stays.
        assert_eq!(undominated(&[direct.clone(), direct]), vec![0]);
    }

    /// Operation `k`'s options all for itself: `alt` and `read` as given.
    fn with(mut o: Opt, alt: usize) -> Opt {
        o.alt = alt;
        o
    }

    #[test]
    fn the_program_declines_a_cascade_whose_rings_would_take_the_next_streams_bytes() {
        // Operations 0 and 1 run 100 cycles and move 1,000 off-chip bytes each; cascaded
        // (a group over 0..=1) they cost 1,900 and hold 512 bytes of rings. Operation 2 runs
        // 500 cycles reading its streams in place, or 100 with them staged whole (608 bytes,
        // live from operation 1).
        let ops = vec![
            vec![opt(100, 0, 1_000, 100, 0)],
            vec![opt(100, 0, 1_000, 100, 0)],
            vec![opt(500, 0, 0, 500, 0), opt(100, 0, 0, 100, 608)],
        ];
        let group = Group {
            first: 0,
            last: 1,
            cost: 1_900,
            dma: 0,
            memory: vec![512, 512],
        };
        let solve = |cap| {
            solve_program(
                &ops,
                std::slice::from_ref(&group),
                &[],
                cap,
                &[false; 3],
                &Solved::default(),
            )
            .unwrap()
        };
        // Room for both: the cascade (saves 300) and the staged streams (save 400).
        assert_eq!(solve(2_048), (vec![None, None, Some(1)], vec![true]));
        // 1,024 bytes: one or the other; the streams save more.
        assert_eq!(solve(1_024), (vec![Some(0), Some(0), Some(1)], vec![false]));
        // 512 bytes: the streams never fit; the cascade does.
        assert_eq!(solve(512), (vec![None, None, Some(0)], vec![true]));
    }

    #[test]
    fn the_program_takes_another_microblock_when_the_plans_streams_do_not_fit() {
        // The plan: 500 cycles in place, 100 staged (1,024 bytes); another microblock's best
        // candidate (alternative 3): 300 cycles in place, 90 staged (also 1,024 bytes).
        let ops = vec![vec![
            opt(500, 0, 0, 500, 0),
            opt(100, 0, 0, 100, 1_024),
            with(opt(300, 0, 0, 300, 0), 3),
            with(opt(90, 0, 0, 90, 1_024), 3),
        ]];
        let solve = |cap| {
            solve_program(&ops, &[], &[], cap, &[false], &Solved::default())
                .unwrap()
                .0
        };
        assert_eq!(solve(4_096), vec![Some(3)]);
        // Under a 512-byte cap neither stages: the other microblock, read in place.
        assert_eq!(solve(512), vec![Some(2)]);
    }

    #[test]
    fn a_program_built_again_is_answered_from_the_first_solve() {
        // As above: the plan, 500 cycles in place or 100 staged in 1,024 bytes.
        let ops = vec![vec![opt(500, 0, 0, 500, 0), opt(100, 0, 0, 100, 1_024)]];
        let solved = Solved::default();
        let solve = |cap| {
            solve_program(&ops, &[], &[], cap, &[false], &solved)
                .unwrap()
                .0
        };
        assert_eq!(solve(4_096), vec![Some(1)]);
        assert_eq!(solved.lock().len(), 1);
        // A larger capacity constrains nothing either: the same program, not solved again.
        assert_eq!(solve(8_192), vec![Some(1)]);
        assert_eq!(solved.lock().len(), 1);
        // A capacity the staged streams exceed is a constraint: another program.
        assert_eq!(solve(512), vec![Some(0)]);
        assert_eq!(solved.lock().len(), 2);
        // Each answer is the one a solve without the others gives.
        for cap in [512, 4_096, 8_192] {
            let alone = solve_program(&ops, &[], &[], cap, &[false], &Solved::default());
            assert_eq!(alone.unwrap().0, solve(cap), "{cap}");
        }
        assert_eq!(solved.lock().len(), 2);
    }

    #[test]
    fn the_program_beats_the_greedy_on_the_fc_autoencoder() {
        // On U85-2048 the greedy plans an operation's weights as FWD (cheapest read in place)
        // and then stages them, moving more DRAM bytes than reading the SWD streams in place
        // would; the program weighs both together.
        let g = crate::test_models::graph("tflite/dense_autoencoder");
        let target = crate::test_models::target(Accelerator::U85_2048);
        let l = lower::lower(&g).unwrap();
        let npuc_target::arch_interface::Decided {
            decisions: mut d,
            mut alternatives,
        } = decide::decide(target.as_ref(), &l).unwrap();
        let objective = |d: &npuc_target::arch_interface::Decisions| {
            let w = write::write(&l, d).unwrap();
            stream_cost(&target.estimate_stream(&w.payload).unwrap())
        };
        let greedy = objective(&d);
        let alt = alternatives
            .pop()
            .expect("the program differs from the greedy");
        d.ops = alt.ops;
        d.placement = alt.placement;
        d.const_copy = alt.consts;
        let optimised = objective(&d);
        assert!(optimised < greedy, "{optimised} >= {greedy}");
    }
}
