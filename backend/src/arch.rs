//! The five Ethos-U85 configurations and the limits the compiler and simulator need.
//!
//! Sources: TRM 3.3.1.10 (CONFIG register fields per configuration), Table 3-90 (weight
//! decoders, depthwise kernel padding), Table 4-13 (scaling units, OFM data width), TRM 3.10.13
//! (microblock encodings). The TRM has no table of OFM block limits, allowed microblocks per
//! configuration or internal RAM sizes; those are the values Vela 5.2 uses (see
//! `docs/decisions.md`, "Block limits and internal RAM sizes").

use crate::isa::Microblock;
use std::fmt;
use std::str::FromStr;

/// One of the five U85 configurations, named by MACs per cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Accelerator {
    /// Ethos-U85-128.
    U85_128,
    /// Ethos-U85-256 (Vela's and npuc's default).
    U85_256,
    /// Ethos-U85-512.
    U85_512,
    /// Ethos-U85-1024.
    U85_1024,
    /// Ethos-U85-2048.
    U85_2048,
}

/// A name that is not one of the five configurations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown accelerator {0:?}: expected ethos-u85-128, -256, -512, -1024 or -2048")]
pub struct UnknownAccelerator(pub String);

/// A CONFIG register value that is not one of the five configurations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("CONFIG word {0:#010x} is not an Ethos-U85 configuration (product 2, macs_per_cc 7..=11)")]
pub struct UnknownConfigWord(pub u32);

/// A microblock shape: height x width x depth (OFM channels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MicroblockShape {
    /// The ACC_FORMAT.microblock encoding.
    pub encoding: Microblock,
    /// Rows.
    pub height: u32,
    /// Columns.
    pub width: u32,
    /// OFM channels.
    pub depth: u32,
}

/// Sizes of the internal RAMs in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InternalRam {
    /// IFM buffer.
    pub ifm: u32,
    /// Accumulator buffer.
    pub accumulator: u32,
    /// Chaining buffer.
    pub chaining: u32,
    /// Output buffer.
    pub output: u32,
}

/// Everything configuration-specific.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchConfig {
    /// Which configuration.
    pub accelerator: Accelerator,
    /// MACs per cycle (8-bit).
    pub macs_per_cc: u32,
    /// Number of standard weight decoders (num_wd), Table 3-90.
    pub weight_decoders: u32,
    /// Depthwise kernel padding for 8-bit and 16-bit IFM, Table 3-90.
    pub dw_pad_k: (u32, u32),
    /// Number of scaling units (NUM_SU), Table 4-13.
    pub scaling_units: u32,
    /// OFM data width in bits (OFM_DATA_W), Table 4-13.
    pub ofm_data_width: u32,
    /// log2 of the number of AXI SRAM interfaces (CONFIG.num_axi_sram).
    pub axi_sram_log2: u32,
    /// log2 of the number of external memory interfaces (CONFIG.num_axi_ext).
    pub axi_ext_log2: u32,
    /// Internal RAM sizes (Vela 5.2 values).
    pub ram: InternalRam,
    /// Largest OFM block (height, width, depth).
    pub ofm_block_max: (u32, u32, u32),
}

impl Accelerator {
    /// All configurations, smallest first.
    pub const ALL: [Accelerator; 5] = [
        Accelerator::U85_128,
        Accelerator::U85_256,
        Accelerator::U85_512,
        Accelerator::U85_1024,
        Accelerator::U85_2048,
    ];

    /// MACs per cycle.
    pub const fn macs_per_cc(self) -> u32 {
        match self {
            Accelerator::U85_128 => 128,
            Accelerator::U85_256 => 256,
            Accelerator::U85_512 => 512,
            Accelerator::U85_1024 => 1024,
            Accelerator::U85_2048 => 2048,
        }
    }

    /// The usual name, e.g. `ethos-u85-256`.
    pub const fn name(self) -> &'static str {
        match self {
            Accelerator::U85_128 => "ethos-u85-128",
            Accelerator::U85_256 => "ethos-u85-256",
            Accelerator::U85_512 => "ethos-u85-512",
            Accelerator::U85_1024 => "ethos-u85-1024",
            Accelerator::U85_2048 => "ethos-u85-2048",
        }
    }

    /// The configuration's parameters.
    pub const fn config(self) -> ArchConfig {
        let ofm_block_max = (128, 128, 1024);
        let (
            weight_decoders,
            dw_pad_k,
            scaling_units,
            ofm_data_width,
            axi_sram_log2,
            axi_ext_log2,
            ram,
        ) = match self {
            Accelerator::U85_128 => (1, (0, 2), 2, 128, 1, 0, ram(8, 8, 2, 768)),
            Accelerator::U85_256 => (1, (0, 2), 4, 128, 1, 0, ram(16, 16, 2, 1536)),
            Accelerator::U85_512 => (2, (2, 2), 8, 128, 1, 0, ram(16, 32, 4, 3072)),
            Accelerator::U85_1024 => (4, (6, 6), 16, 128, 1, 1, ram(16, 64, 4, 6144)),
            Accelerator::U85_2048 => (4, (6, 6), 32, 256, 2, 1, ram(32, 128, 8, 12288)),
        };
        ArchConfig {
            accelerator: self,
            macs_per_cc: self.macs_per_cc(),
            weight_decoders,
            dw_pad_k,
            scaling_units,
            ofm_data_width,
            axi_sram_log2,
            axi_ext_log2,
            ram,
            ofm_block_max,
        }
    }

    /// Identifies the configuration from a CONFIG register value (TRM 3.3.1.10): product
    /// [31:28] must be 2 (Ethos-U85) and macs_per_cc [3:0] 7..=11.
    pub fn from_config_word(word: u32) -> Result<Accelerator, UnknownConfigWord> {
        if word >> 28 != 2 {
            return Err(UnknownConfigWord(word));
        }
        match word & 0xf {
            7 => Ok(Accelerator::U85_128),
            8 => Ok(Accelerator::U85_256),
            9 => Ok(Accelerator::U85_512),
            10 => Ok(Accelerator::U85_1024),
            11 => Ok(Accelerator::U85_2048),
            _ => Err(UnknownConfigWord(word)),
        }
    }
}

const fn ram(ifm_k: u32, acc_k: u32, cb_k: u32, ob: u32) -> InternalRam {
    InternalRam {
        ifm: ifm_k * 1024,
        accumulator: acc_k * 1024,
        chaining: cb_k * 1024,
        output: ob,
    }
}

impl fmt::Display for Accelerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Accelerator {
    type Err = UnknownAccelerator;

    /// Accepts `ethos-u85-256`, `u85-256`, `u85_256`, `256` (any case).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase().replace('_', "-");
        let digits = lower.strip_prefix("ethos-").unwrap_or(&lower);
        let digits = digits.strip_prefix("u85-").unwrap_or(digits);
        Accelerator::ALL
            .into_iter()
            .find(|a| a.macs_per_cc().to_string() == digits)
            .ok_or_else(|| UnknownAccelerator(s.to_string()))
    }
}

impl ArchConfig {
    /// The CONFIG register value the NPU reports (TRM 3.3.1.10): macs_per_cc [3:0] (log2),
    /// cmd_stream_version [7:4] = 1, num_axi_sram [9:8], num_axi_ext [10], num_wd [13:12] (log2),
    /// custom_dma [27] = 0, product [31:28] = 2. Vela writes the same word into its COP1 header.
    pub const fn config_word(&self) -> u32 {
        self.macs_per_cc.trailing_zeros()
            | (1 << 4)
            | (self.axi_sram_log2 << 8)
            | (self.axi_ext_log2 << 10)
            | (self.weight_decoders.trailing_zeros() << 12)
            | (2 << 28)
    }

    /// Depth (OFM channels) of a microblock encoding, TRM 3.10.13 `microblock_depth()`.
    pub const fn microblock_depth(&self, mb: Microblock) -> u32 {
        let m = self.macs_per_cc;
        match mb {
            Microblock::U1x1 => m / 8,
            Microblock::U1x2 => m / 16,
            Microblock::U1x4 | Microblock::U2x2 => m / 32,
            Microblock::U2x4 => m / 64,
            Microblock::U4x4 => m / 128,
        }
    }

    /// Whether the TRM permits the microblock encoding on this configuration (TRM 3.10.13).
    pub const fn microblock_permitted(&self, mb: Microblock) -> bool {
        let m = self.macs_per_cc;
        match mb {
            Microblock::U1x1 => m == 128,
            Microblock::U1x2 => m == 128 || m == 256,
            Microblock::U1x4 | Microblock::U2x2 => m >= 256,
            Microblock::U2x4 => m == 1024,
            Microblock::U4x4 => m == 2048,
        }
    }

    /// The shape of a microblock encoding on this configuration.
    pub const fn microblock_shape(&self, mb: Microblock) -> MicroblockShape {
        let (height, width) = match mb {
            Microblock::U1x1 => (1, 1),
            Microblock::U1x2 => (1, 2),
            Microblock::U1x4 => (1, 4),
            Microblock::U2x2 => (2, 2),
            Microblock::U2x4 => (2, 4),
            Microblock::U4x4 => (4, 4),
        };
        MicroblockShape {
            encoding: mb,
            height,
            width,
            depth: self.microblock_depth(mb),
        }
    }

    /// The microblocks the compiler chooses from, in Vela's order of preference.
    pub fn microblocks(&self) -> Vec<MicroblockShape> {
        let encodings: &[Microblock] = match self.accelerator {
            Accelerator::U85_128 => &[Microblock::U1x2, Microblock::U1x1],
            Accelerator::U85_256 => &[Microblock::U1x2, Microblock::U1x4, Microblock::U2x2],
            Accelerator::U85_512 => &[Microblock::U2x2, Microblock::U1x4],
            Accelerator::U85_1024 => &[Microblock::U2x2, Microblock::U1x4, Microblock::U2x4],
            Accelerator::U85_2048 => &[Microblock::U2x2, Microblock::U1x4, Microblock::U4x4],
        };
        encodings
            .iter()
            .map(|&mb| self.microblock_shape(mb))
            .collect()
    }
}
