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
use npuc_backend::isa::stream::StreamDecoder;
use npuc_backend::isa::Command;
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
    /// The commands of a stream (decoded through the ISA table; counting stops at the first
    /// word that does not decode) with `npu_operations` 0.
    pub fn of_stream(words: &[u32]) -> Counts {
        let mut c = Counts::default();
        for d in StreamDecoder::new(words).map_while(Result::ok) {
            match d.command {
                Command::OpConv(_)
                | Command::OpDepthwise(_)
                | Command::OpPool(_)
                | Command::OpElementwise(_)
                | Command::OpResize(_) => c.kernel_commands += 1,
                Command::OpDmaStart(_) => c.dma_commands += 1,
                _ => {}
            }
        }
        c
    }

    /// The counts of a compiled model.
    pub fn of(m: &CompiledModel) -> Counts {
        Counts {
            npu_operations: m.operators.len(),
            ..Counts::of_stream(&m.command_stream)
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
