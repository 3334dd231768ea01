//! Mutable NPU state beyond the register file: memory, chaining FIFOs (TRM 3.6.4), the
//! accumulator storage used by `acc_output == disable` / `acc_input == keep` (TRM 3.6.5),
//! and COND_STATUS.result_flag.

use super::error::{check, Fault};
use super::memory::Memory;
use std::collections::VecDeque;

/// Number of chaining FIFOs.
pub const NUM_CHAINING_FIFO: usize = 3;

/// Accumulators kept between operations, indexed inside one OFM block.
#[derive(Debug, Clone, Default)]
pub struct AccStorage {
    dims: (u64, u64, u64),
    data: Vec<i64>,
    written: Vec<bool>,
}

impl AccStorage {
    fn index(&self, y: u64, x: u64, c: u64) -> Option<usize> {
        let (h, w, d) = self.dims;
        (y < h && x < w && c < d).then(|| ((y * w + x) * d + c) as usize)
    }

    /// `write_accumulator_storage`; a block shape different from the last one starts afresh.
    pub fn write(&mut self, dims: (u64, u64, u64), y: u64, x: u64, c: u64, v: i64) {
        if dims != self.dims {
            let n = (dims.0 * dims.1 * dims.2) as usize;
            self.dims = dims;
            self.data = vec![0; n];
            self.written = vec![false; n];
        }
        if let Some(i) = self.index(y, x, c) {
            self.data[i] = v;
            self.written[i] = true;
        }
    }

    /// `read_accumulator_storage`; reading an accumulator never written is a fault.
    pub fn read(&self, y: u64, x: u64, c: u64) -> Result<i64, Fault> {
        match self.index(y, x, c) {
            Some(i) if self.written[i] => Ok(self.data[i]),
            _ => Err(Fault::assert(
                "3.6.5",
                "acc_input == keep reads an accumulator stored by an earlier acc_output == disable",
                format!("accumulator ({y}, {x}, {c}) was never stored"),
            )),
        }
    }
}

/// Everything an operation may change besides the registers.
#[derive(Debug, Clone)]
pub struct State {
    /// Regions and LUT RAM.
    pub mem: Memory,
    /// Chaining FIFO contents.
    pub fifo: [VecDeque<i64>; NUM_CHAINING_FIFO],
    /// `g_fifo_valid`.
    pub fifo_valid: [bool; NUM_CHAINING_FIFO],
    /// A check-only run ([`super::validate`]) put values in the FIFO that a full run would
    /// not: an operation that reads it computes stale values.
    pub fifo_stale: [bool; NUM_CHAINING_FIFO],
    /// `g_chain_length`.
    pub chain_length: u32,
    /// `g_num_ifm`.
    pub chain_num_ifm: u32,
    /// Accumulator storage.
    pub acc: AccStorage,
    /// COND_STATUS.result_flag; `None` when UNPREDICTABLE (last OFM was not 1x1x1).
    pub result_flag: Option<bool>,
    /// A check-only run ([`super::validate`]) computed `result_flag` from stale values: a
    /// branch on it proves nothing.
    pub result_flag_stale: bool,
}

impl Default for State {
    /// The state after reset: empty memory map and FIFOs, no chain, and COND_STATUS at its
    /// reset value 0x0 (TRM 3.3.1.11), so `result_flag` is defined (false) until an OFM
    /// that is not 1x1x1 is written.
    fn default() -> Self {
        State {
            mem: Memory::default(),
            fifo: Default::default(),
            fifo_valid: [false; NUM_CHAINING_FIFO],
            fifo_stale: [false; NUM_CHAINING_FIFO],
            chain_length: 0,
            chain_num_ifm: 0,
            acc: AccStorage::default(),
            result_flag: Some(false),
            result_flag_stale: false,
        }
    }
}

impl State {
    /// Chaining FIFO `n`, asserting `0 <= fifo_number <= 2` (TRM 3.6.4).
    fn fifo_mut(&mut self, n: u8) -> Result<&mut VecDeque<i64>, Fault> {
        self.fifo.get_mut(usize::from(n)).ok_or_else(|| {
            Fault::assert(
                "3.6.4",
                "0 <= fifo_number && fifo_number <= 2",
                format!("fifo {n}"),
            )
        })
    }

    /// `read_chaining_fifo(n)`.
    pub fn fifo_pop(&mut self, n: u8) -> Result<i64, Fault> {
        let f = self.fifo_mut(n)?;
        let v = f.pop_front().ok_or_else(|| {
            Fault::assert(
                "3.6.4",
                "head >= tail",
                format!("chaining FIFO {n} read while empty"),
            )
        })?;
        if self.fifo_stale[usize::from(n)] {
            self.mem.note_stale_read();
        }
        Ok(v)
    }

    /// `read_chaining_fifo(n)` of `count` values whose values a check-only operation does not
    /// use: the same rules as `count` calls of [`State::fifo_pop`].
    pub fn fifo_drain(&mut self, n: u8, count: usize) -> Result<(), Fault> {
        let f = self.fifo_mut(n)?;
        check(f.len() >= count, "3.6.4", "head >= tail", || {
            format!("chaining FIFO {n} read while empty")
        })?;
        f.drain(..count);
        Ok(())
    }

    /// `write_chaining_fifo(n, value)` of `count` values a check-only operation does not
    /// compute: the same rules as `count` calls of [`State::fifo_push`]; the FIFO is stale.
    pub fn fifo_push_stale(&mut self, n: u8, count: usize) -> Result<(), Fault> {
        let f = self.fifo_mut(n)?;
        f.resize(f.len() + count, 0);
        self.fifo_stale[usize::from(n)] = true;
        Ok(())
    }

    /// `write_chaining_fifo(n, v)`.
    pub fn fifo_push(&mut self, n: u8, v: i64) -> Result<(), Fault> {
        let f = self.fifo_mut(n)?;
        f.push_back(v);
        if self.mem.op_read_stale() {
            self.fifo_stale[usize::from(n)] = true;
        }
        Ok(())
    }

    /// `add_operation_to_chain(use_ifm, use_ifm2, append)` of TRM 3.6.4.
    #[allow(clippy::too_many_arguments)]
    pub fn add_operation_to_chain(
        &mut self,
        use_ifm: Option<(bool, u8)>,
        use_ifm2: Option<(bool, u8)>,
        append: bool,
        ofm_chained: Option<u8>,
    ) -> Result<(), Fault> {
        check(
            self.chain_length == 0 || append,
            "3.6.4",
            "g_chain_length == 0 || append",
            || "only ELEMENTWISE may be appended to a chain".into(),
        )?;
        if self.chain_length == 0 {
            self.chain_num_ifm = 0;
            self.fifo_valid = [false; NUM_CHAINING_FIFO];
            self.fifo_stale = [false; NUM_CHAINING_FIFO];
            for f in &mut self.fifo {
                f.clear();
            }
        }
        self.chain_length += 1;
        check(
            self.chain_length <= 4,
            "3.6.4",
            "g_chain_length <= 4",
            || format!("chain length {}", self.chain_length),
        )?;
        let fifo_in = |inp: Option<(bool, u8)>, st: &mut Self| -> Result<Option<u8>, Fault> {
            match inp {
                Some((true, region)) => {
                    check(
                        usize::from(region) < NUM_CHAINING_FIFO,
                        "3.6.4",
                        "region < NUM_CHAINING_FIFO",
                        || format!("chained input region {region}"),
                    )?;
                    check(
                        st.fifo_valid[usize::from(region)],
                        "3.6.4",
                        "g_fifo_valid[region]",
                        || {
                            format!("chained input reads FIFO {region}, which no earlier operation of the chain writes")
                        },
                    )?;
                    Ok(Some(region))
                }
                Some((false, _)) => {
                    st.chain_num_ifm += 1;
                    Ok(None)
                }
                None => Ok(None),
            }
        };
        let a = fifo_in(use_ifm, self)?;
        let b = fifo_in(use_ifm2, self)?;
        if let (Some(a), Some(b)) = (a, b) {
            check(
                a != b,
                "3.6.4",
                "IFM_REGION != IFM2_REGION for two chained inputs",
                || format!("both read FIFO {a}"),
            )?;
        }
        check(self.chain_num_ifm <= 3, "3.6.4", "g_num_ifm <= 3", || {
            format!("{} external inputs in the chain", self.chain_num_ifm)
        })?;
        match ofm_chained {
            Some(region) => {
                check(
                    usize::from(region) < NUM_CHAINING_FIFO,
                    "3.6.4",
                    "region < NUM_CHAINING_FIFO",
                    || format!("chained OFM region {region}"),
                )?;
                self.fifo_valid[usize::from(region)] = true;
            }
            None => self.chain_length = 0,
        }
        Ok(())
    }
}
