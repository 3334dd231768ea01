//! The one set of operation counts every command prints (`compile`'s summary, `verify`,
//! `report`):
//!
//! * **operators**: the source model's operators (TFLite or TOSA), split into those on the NPU
//!   and those left on the CPU;
//! * **NPU operations**: what the compiler schedules ([`CompiledModel::operators`]): one per
//!   group of fused IR operators;
//! * **commands**: the kernel commands (`NPU_OP_CONV`, `_DEPTHWISE`, `_POOL`, `_ELEMENTWISE`,
//!   `_RESIZE`) and DMA commands (`NPU_OP_DMA_START`) of the command stream, the rows of
//!   `npuc report`. An NPU operation is one or more commands (OFM-depth slices, cascade
//!   bands, weight staging DMAs).
//!
//! ```
//! let c = npuc::counts::Counts { npu_operations: 2, kernel_commands: 3, dma_commands: 1 };
//! assert_eq!(c.to_string(), "2 NPU operations (3 kernel commands, 1 DMA command)");
//! ```

use crate::compile::CompiledModel;
use std::fmt;

/// NPU operations and commands of one or more compiled streams.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Scheduled NPU operations.
    pub npu_operations: usize,
    /// Kernel commands in the stream.
    pub kernel_commands: usize,
    /// DMA commands in the stream.
    pub dma_commands: usize,
}

impl Counts {
    /// The counts of a compiled model (its commands as its target counted them,
    /// `Target::count_commands`).
    pub fn of(m: &CompiledModel) -> Counts {
        Counts {
            npu_operations: m.operators.len(),
            kernel_commands: m.commands.kernel,
            dma_commands: m.commands.dma,
        }
    }

    /// The sum over several compiled models (the segments of a partitioned model).
    pub fn sum<'a>(models: impl IntoIterator<Item = &'a CompiledModel>) -> Counts {
        models
            .into_iter()
            .map(Counts::of)
            .fold(Counts::default(), |a, b| Counts {
                npu_operations: a.npu_operations + b.npu_operations,
                kernel_commands: a.kernel_commands + b.kernel_commands,
                dma_commands: a.dma_commands + b.dma_commands,
            })
    }

    /// `k kernel commands, d DMA commands`.
    pub fn commands(&self) -> String {
        format!(
            "{} kernel command{}, {} DMA command{}",
            self.kernel_commands,
            plural(self.kernel_commands),
            self.dma_commands,
            plural(self.dma_commands)
        )
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} NPU operation{} ({})",
            self.npu_operations,
            plural(self.npu_operations),
            self.commands()
        )
    }
}
