//! The cmd0/cmd1 writer: register programming of the Ethos-U85 from register-level values.
//!
//! The driver decides *what* each operation needs (feature maps and their placement, kernel,
//! weight streams, DMAs); this module knows *how* the U85 is told: which registers, in which
//! order, with which fences.
//!
//! - [`CommandWriter`] collects commands and elides a register write whose value is already
//!   in the register (the last one written), so each operation can list its full register
//!   state.
//! - [`fm`]: one routine, driven by the ISA table, writes the IFM, IFM2 or OFM register group.
//! - [`kernel`], [`resize`]: kernel size/stride/dilation/padding, and the resize registers.
//! - [`output`]: activation clamp and table, OFM block and accumulator format.
//! - [`dma`]: DMA sequences (memory-to-memory copies, gathers and scatters, LUT loads).
//! - [`streams`]: the weight and scale stream registers.
//!
//! Invariant: nothing here reads the graph; every function takes register-level values, so
//! the writer's output depends only on them (the snapshot tests in
//! `compiler/tests/streams` and `tools/hash-corpus.sh` pin the bytes).

use crate::isa::{Command, OpDmaWait, OpKernelWait, OpStop, Opcode};

pub mod dma;
pub mod fm;
pub mod kernel;
pub mod output;
pub mod resize;
pub mod streams;

/// Collects commands, skipping register writes that do not change the value.
#[derive(Debug, Default)]
pub struct CommandWriter {
    /// The commands written so far, in order.
    pub commands: Vec<Command>,
    /// The last value of each register, indexed by its opcode (allocated at the first write).
    state: Vec<Option<Command>>,
    /// The operation the DMAs issued now are for.
    pub owner: Option<usize>,
    /// The owner of each DMA command issued, in order.
    pub dma_owners: Vec<Option<usize>>,
}

impl CommandWriter {
    /// Makes this writer what `CommandWriter { commands: commands.to_vec(), ..default }`
    /// would be (the commands, no register value remembered, so every write is kept; each
    /// DMA with no owner), keeping its allocations: for a cost model that writes many
    /// candidates after the same commands.
    pub fn restart_from(&mut self, commands: &[Command]) {
        self.commands.clear();
        self.commands.extend_from_slice(commands);
        self.state.fill(None);
        self.owner = None;
        self.dma_owners.clear();
        let dmas = commands
            .iter()
            .filter(|c| matches!(c, Command::OpDmaStart(_)))
            .count();
        self.dma_owners.resize(dmas, None);
    }

    /// Writes a register (`NPU_SET_*`) unless it already holds this value.
    pub fn set(&mut self, c: Command) {
        if self.state.is_empty() {
            self.state = vec![None; Opcode::COUNT];
        }
        let last = &mut self.state[c.opcode() as usize];
        if *last != Some(c) {
            *last = Some(c);
            self.commands.push(c);
        }
    }

    /// Issues an operation (`NPU_OP_*`); a DMA start is recorded against [`Self::owner`].
    pub fn op(&mut self, c: Command) {
        if matches!(c, Command::OpDmaStart(_)) {
            self.dma_owners.push(self.owner);
        }
        self.commands.push(c);
    }

    /// NPU_OP_KERNEL_WAIT `n`: at most `n` kernel operations outstanding (TRM 3.10.8).
    pub fn kernel_wait(&mut self, n: u8) {
        self.op(Command::OpKernelWait(OpKernelWait { n }));
    }

    /// NPU_OP_DMA_WAIT `k`: at most `k` DMA descriptors outstanding (TRM 3.10.5).
    pub fn dma_wait(&mut self, k: u8) {
        self.op(Command::OpDmaWait(OpDmaWait { k }));
    }

    /// NPU_OP_STOP with every IRQ bit (TRM 3.10.12): the end of the stream.
    pub fn stop(&mut self) {
        self.op(Command::OpStop(OpStop { mask: 0xffff }));
    }

    /// Forgets the last value of these registers, so the next `set` writes them again.
    pub fn forget(&mut self, opcodes: &[Opcode]) {
        for &o in opcodes {
            if let Some(last) = self.state.get_mut(o as usize) {
                *last = None;
            }
        }
    }
}

/// The (high byte, low word) of a 40-bit address or stride.
pub fn addr(v: u64) -> (u8, u32) {
    ((v >> 32) as u8, v as u32)
}

/// A zero point or clip bound as the 16-bit register field holds it.
pub fn zp16(v: i64) -> u16 {
    v as i16 as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::SetBlockdep;

    #[test]
    fn an_unchanged_register_is_written_once_and_again_after_forget() {
        let mut w = CommandWriter::default();
        let c = Command::SetBlockdep(SetBlockdep { blockdep: 0 });
        w.set(c);
        w.set(c);
        assert_eq!(w.commands.len(), 1);
        w.forget(&[Opcode::SetBlockdep]);
        w.set(c);
        assert_eq!(w.commands.len(), 2);
    }

    #[test]
    fn the_register_state_is_indexed_by_the_opcodes_table_order() {
        for (i, o) in Opcode::ALL.into_iter().enumerate() {
            assert_eq!(o as usize, i, "{o:?}");
        }
        assert_eq!(Opcode::ALL.len(), Opcode::COUNT);
    }

    #[test]
    fn operations_are_never_elided() {
        let mut w = CommandWriter::default();
        w.kernel_wait(0);
        w.kernel_wait(0);
        assert_eq!(w.commands.len(), 2);
    }
}
