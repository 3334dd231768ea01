//! The reference simulator: executes an Ethos-U85 command stream as the TRM pseudocode
//! defines it (chapter 3.6 and each instruction in 3.10/3.11).
//!
//! Memory is given as byte buffers mapped to the eight regions ([`Memory`]); the register
//! state is the ISA's [`RegisterFile`]. Commands run strictly in stream order (a DMA or kernel
//! operation completes before the next command), so KERNEL_WAIT and DMA_WAIT are no-ops.
//! Anything the TRM calls UNPREDICTABLE that the simulator can detect (a failed `assert()`,
//! an access outside a region, a branch outside the stream) stops the run with a [`SimError`]
//! naming the command and the rule.
//!
//! ```
//! use npuc_backend::arch::Accelerator;
//! use npuc_backend::sim::Simulator;
//! // NPU_OP_STOP only.
//! let mut sim = Simulator::new(Accelerator::U85_256);
//! let report = sim.run(&[0xffff_0000]).unwrap();
//! assert_eq!(report.commands, 1);
//! ```

pub mod arith;
mod conv;
mod dma;
mod elementwise;
pub mod error;
pub mod fm;
mod geometry;
mod input;
pub mod memory;
mod output;
mod pool;
mod resize;
pub mod state;
pub mod validate;
pub mod weights;
pub mod work;

pub use error::{Fault, SimError};
pub use memory::{BufferId, Memory, Traffic, LUT_BYTES, NUM_REGIONS};

use crate::arch::{Accelerator, ArchConfig};
use crate::isa::stream::decode_at;
use crate::isa::{
    AccFormat, AccInput, ActivationPrecision, ActivationStorage, ActivationType, BranchCond,
    Command, Opcode, RegisterFile,
};
use error::check;
use fm::Fm;
use output::Output;
use state::State;

/// Default step budget: commands executed before a run is stopped as an endless loop.
pub const DEFAULT_STEP_BUDGET: u64 = 100_000_000;

/// Default work budget of a run ([`work`]; decision H2): 2^34 units, about 17 G MACs and
/// elements, well above the largest network of the corpus (MobileNetV2 1.0 224: 0.3 G MACs).
pub const DEFAULT_WORK_BUDGET: u64 = 1 << 34;

/// What one kernel operation or DMA did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpReport {
    /// Byte offset of the NPU_OP_* command.
    pub offset: usize,
    /// TRM name of the command.
    pub instruction: &'static str,
    /// Multiply-accumulates (CONV/DEPTHWISE: OFM elements x kernel taps x IFM depth).
    pub macs: u64,
    /// Bytes of the encoded weight streams read (sum of WEIGHT*_LENGTH used).
    pub weight_bytes: u64,
    /// Bytes of the scale/bias stream read (SCALE_LENGTH).
    pub scale_bytes: u64,
    /// Memory traffic of the operation.
    pub traffic: Traffic,
}

/// Counters of one kernel operation.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpCounts {
    /// MACs.
    pub macs: u64,
    /// Weight stream bytes.
    pub weight_bytes: u64,
    /// Scale stream bytes.
    pub scale_bytes: u64,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// NPU_OP_STOP with its IRQ mask.
    Stop(u16),
    /// QREAD reached QSIZE (STATUS.cmd_end_reached).
    EndOfStream,
}

/// The result of a successful run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    /// How the run ended.
    pub stop: StopReason,
    /// Commands executed (including repeats through branches).
    pub commands: u64,
    /// Kernel operations and DMAs in execution order.
    pub ops: Vec<OpReport>,
    /// Total MACs.
    pub macs: u64,
    /// Total traffic.
    pub traffic: Traffic,
    /// OR of the IRQ masks of NPU_OP_IRQ and NPU_OP_STOP (STATUS.irq_history_mask).
    pub irq_history_mask: u16,
}

/// An Ethos-U85 of one configuration with its memory.
#[derive(Debug, Clone)]
pub struct Simulator {
    arch: ArchConfig,
    regs: RegisterFile,
    state: State,
    step_budget: u64,
    work_budget: u64,
}

impl Simulator {
    /// A simulator with no memory mapped.
    pub fn new(accelerator: Accelerator) -> Simulator {
        Simulator {
            arch: accelerator.config(),
            regs: RegisterFile::default(),
            state: State::default(),
            step_budget: DEFAULT_STEP_BUDGET,
            work_budget: DEFAULT_WORK_BUDGET,
        }
    }

    /// Sets the step budget.
    pub fn set_step_budget(&mut self, budget: u64) {
        self.step_budget = budget;
    }

    /// Sets the work budget of each run ([`work`]).
    pub fn set_work_budget(&mut self, budget: u64) {
        self.work_budget = budget;
    }

    /// The configuration.
    pub fn arch(&self) -> &ArchConfig {
        &self.arch
    }

    /// The memory.
    pub fn memory(&self) -> &Memory {
        &self.state.mem
    }

    /// The memory, writable (to map regions and place inputs).
    pub fn memory_mut(&mut self) -> &mut Memory {
        &mut self.state.mem
    }

    /// The register file after the last run.
    pub fn registers(&self) -> &RegisterFile {
        &self.regs
    }

    /// COND_STATUS.result_flag (`None` if UNPREDICTABLE).
    pub fn result_flag(&self) -> Option<bool> {
        self.state.result_flag
    }

    /// Runs a command stream (u32 words, QBASE at word 0) from its first command. Registers
    /// persist from earlier runs, as on the hardware.
    pub fn run(&mut self, words: &[u32]) -> Result<RunReport, SimError> {
        let qsize = words.len() as u64 * 4;
        let start_traffic = self.state.mem.traffic();
        let mut report = RunReport {
            stop: StopReason::EndOfStream,
            commands: 0,
            ops: Vec::new(),
            macs: 0,
            traffic: Traffic::default(),
            irq_history_mask: 0,
        };
        let mut index = 0usize;
        let mut work_left = self.work_budget;
        while index < words.len() {
            if report.commands >= self.step_budget {
                return Err(SimError::StepBudget {
                    budget: self.step_budget,
                    offset: index * 4,
                });
            }
            report.commands += 1;
            let d = decode_at(words, index, 0)?;
            let opcode = d.opcode();
            let spec = opcode.spec();
            let next = index + spec.kind.words();
            if self.regs.apply(&d.command) {
                index = next;
                continue;
            }
            let fail = |fault: Fault| SimError::Command {
                offset: index * 4,
                instruction: spec.name,
                fault,
            };
            match d.command {
                Command::OpStop(s) => {
                    check(
                        self.state.chain_length == 0,
                        "3.5.5",
                        "NPU_OP_STOP outside a chain",
                        String::new,
                    )
                    .map_err(fail)?;
                    report.irq_history_mask |= s.mask;
                    report.stop = StopReason::Stop(s.mask);
                    break;
                }
                Command::OpIrq(s) => {
                    check(
                        self.state.chain_length == 0,
                        "3.5.5",
                        "NPU_OP_IRQ outside a chain",
                        String::new,
                    )
                    .map_err(fail)?;
                    report.irq_history_mask |= s.mask;
                }
                Command::OpBranch(b) => {
                    let target = u64::from(b.branch_target);
                    if target & 3 != 0 || target >= qsize {
                        return Err(fail(Fault::BranchFault { target, qsize }));
                    }
                    let taken =
                        match b.branch_cond {
                            BranchCond::Always => true,
                            BranchCond::RfTrue if self.state.result_flag_stale => {
                                // A check-only run's flag from stale values: proves nothing.
                                self.state.mem.set_inexact();
                                return Err(fail(Fault::Unsupported(
                                    "branch on a result_flag computed from stale values",
                                )));
                            }
                            BranchCond::RfTrue => match self.state.result_flag {
                                Some(f) => f,
                                None => return Err(fail(Fault::assert(
                                    "3.6.5",
                                    "COND_STATUS.result_flag defined (last OFM written was 1x1x1)",
                                    "result_flag is UNPREDICTABLE",
                                ))),
                            },
                        };
                    index = if taken { (target / 4) as usize } else { next };
                    continue;
                }
                Command::OpDmaWait(_) | Command::OpKernelWait(_) | Command::OpPmuMask(_) => {}
                _ => {
                    let work = work::operation_work(&self.regs, &d.command);
                    if work.elements > work::MAX_OPERATION_ELEMENTS {
                        return Err(fail(Fault::TooLarge {
                            elements: work.elements,
                            limit: work::MAX_OPERATION_ELEMENTS,
                        }));
                    }
                    let needed = work.total;
                    if needed > work_left {
                        return Err(fail(Fault::WorkBudget {
                            needed,
                            remaining: work_left,
                            budget: self.work_budget,
                        }));
                    }
                    work_left -= needed;
                    if !matches!(d.command, Command::OpDmaStart(_)) {
                        work::check_ofm_fits(&self.regs, &self.state.mem).map_err(fail)?;
                    }
                    let before = self.state.mem.traffic();
                    self.state.mem.start_operation();
                    let counts = self.kernel(&d.command, opcode).map_err(fail)?;
                    let stale = self.state.mem.op_read_stale();
                    if stale && validate::has_value_rules(&self.regs, &d.command) {
                        self.state.mem.set_inexact();
                    }
                    if !matches!(d.command, Command::OpDmaStart(_)) {
                        self.state.result_flag_stale = stale && self.state.result_flag.is_some();
                    }
                    report.macs += counts.macs;
                    report.ops.push(OpReport {
                        offset: index * 4,
                        instruction: spec.name,
                        macs: counts.macs,
                        weight_bytes: counts.weight_bytes,
                        scale_bytes: counts.scale_bytes,
                        traffic: self.state.mem.traffic().since(&before),
                    });
                }
            }
            index = next;
        }
        report.traffic = self.state.mem.traffic().since(&start_traffic);
        Ok(report)
    }

    fn kernel(&mut self, command: &Command, opcode: Opcode) -> Result<OpCounts, Fault> {
        let (arch, regs, st) = (&self.arch, &self.regs, &mut self.state);
        match *command {
            Command::OpConv(c) => conv::conv(arch, regs, st, c.weights_ifm2 == 1),
            Command::OpDepthwise(_) => conv::depthwise(arch, regs, st),
            Command::OpPool(p) => pool::pool(arch, regs, st, p.pooling_mode),
            Command::OpElementwise(e) => {
                elementwise::elementwise(arch, regs, st, e.elementwise_mode)
            }
            Command::OpResize(r) => resize::resize(arch, regs, st, r.resize_mode),
            Command::OpDmaStart(_) => dma::dma(regs, st).map(|_| OpCounts::default()),
            _ => {
                let _ = opcode;
                Err(Fault::Unsupported("command"))
            }
        }
    }
}

/// (chained?, region) of an input tensor, for `add_operation_to_chain`.
pub(crate) fn chain_input(fm: &Fm) -> (bool, u8) {
    (fm.storage == ActivationStorage::Chained, fm.region)
}

/// `read_accumulator(oy, ox, oc, reset_value)` of TRM 3.6.5.
#[allow(clippy::too_many_arguments)]
pub(crate) fn acc_init(
    regs: &RegisterFile,
    st: &mut State,
    ifm2: &Fm,
    out: &Output,
    oy: usize,
    ox: usize,
    oc: usize,
    reset: i64,
) -> Result<i64, Fault> {
    let (y, x, c) = (oy as u64, ox as u64, oc as u64);
    match regs.acc_format.acc_input {
        AccInput::Reset => Ok(reset),
        AccInput::Keep => {
            let (bh, bw, bd) = out.blk;
            check(
                y < bh && x < bw && c < bd,
                "3.6.5",
                "oy < ofm_block_height && ox < ofm_block_width && oc < ofm_block_depth",
                || format!("accumulator ({y}, {x}, {c}) outside block {bh}x{bw}x{bd}"),
            )?;
            st.acc.read(y, x, c)
        }
        AccInput::Ifm2 => {
            let want = if regs.acc_format.acc_format == AccFormat::I48 {
                ActivationPrecision::B64
            } else {
                ActivationPrecision::B32
            };
            check(
                ifm2.precision == want
                    && regs.ifm2_precision.activation_type == ActivationType::Signed,
                "3.6.5",
                "read_ifm2(read_accumulator): IFM2 signed b32 (i32) or b64 (i48)",
                || {
                    format!(
                        "IFM2 {} {}",
                        ifm2.precision.name(),
                        regs.ifm2_precision.activation_type.name()
                    )
                },
            )?;
            let zp = ifm2.input_zero_point()?;
            let v = if ifm2.storage == ActivationStorage::Chained {
                st.fifo_pop(ifm2.region)?
            } else {
                ifm2.read(&mut st.mem, y, x, c)?
            };
            Ok(v - zp)
        }
    }
}
