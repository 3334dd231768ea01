//! Standard weight decoder (SWD) stream format (Ethos-U85 TRM §3.9.3–§3.9.10).
//!
//! This module holds the types shared by the SWD decoder ([`decode`]) and
//! encoder: the slice header fields, the palette / direct-mode state and the
//! mapping between weight indices and weight values. Names follow the TRM
//! (`zdiv`, `wdiv`, `wtrunc`, `newpal`, `dirofs`, `palsize`, `palbits`,
//! `slicelen`, ...).
//!
//! A stream is a sequence of slices, each introduced by a 3-bit `zdiv`, and
//! terminated by `zdiv == 7` followed by `1` bits up to the next 128-bit
//! boundary. Bits are read LSB first within a byte, bytes in ascending order
//! (see [`crate::bitreader`]).

pub mod decode;
pub mod encode;

/// Width in bits of the `zdiv` field that introduces every slice (and the end of stream).
pub const ZDIV_BITS: u32 = 3;
/// `zdiv` value selecting non-alternating mode (no zero-run coding).
pub const ZDIV_NO_ZERO_RUNS: u8 = 6;
/// `zdiv` value marking the end of the stream.
pub const ZDIV_END_OF_STREAM: u8 = 7;
/// Width in bits of `slicelen_m1`.
pub const SLICELEN_M1_BITS: u32 = 15;
/// Largest `slicelen` (`slicelen_m1 + 1`).
pub const SLICELEN_MAX: u32 = 1 << SLICELEN_M1_BITS;
/// Width in bits of `wdiv`.
pub const WDIV_BITS: u32 = 3;
/// `wdiv` value selecting uncompressed weight index coding (§3.9.8).
pub const WDIV_UNCOMPRESSED: u8 = 7;
/// Largest Golomb-Rice `wdiv` (divisor `1 << 5`).
pub const WDIV_MAX_GOLOMB_RICE: u8 = 5;
/// Width in bits of `dirofs`.
pub const DIROFS_BITS: u32 = 5;
/// Width in bits of `palsize`.
pub const PALSIZE_BITS: u32 = 5;
/// Width in bits of `palbits`.
pub const PALBITS_BITS: u32 = 3;
/// Largest palette size (`palsize == 31`).
pub const PALETTE_SIZE_MAX: usize = 32;
/// Largest weight index (weight indices are 9-bit unsigned, §3.9.6).
pub const WEIGHT_INDEX_MAX: u16 = 511;
/// Largest weight quotient `wq` (§3.9.7).
pub const WQ_MAX: u32 = 31;
/// Largest weight quotient `wq` when `wtrunc` is set (§3.9.7).
pub const WQ_MAX_TRUNCATED: u32 = 2;
/// Width in bits of `wunary0` (one bit per weight index slot of a chunk).
pub const WUNARY0_BITS: u32 = 12;
/// Largest number of weight indices a chunk carries.
pub const CHUNK_MAX_WEIGHTS: usize = 12;
/// Balance (weight indices minus zero runs) at which a chunk carries zero runs only.
pub const BALANCE_LIMIT: i64 = 8;
/// The end-of-stream padding aligns the stream to this many bits.
pub const STREAM_ALIGN_BITS: u64 = 128;
/// Largest weight magnitude a stream can carry.
pub const WEIGHT_ABS_MAX: i16 = 255;

/// Zero-run coding mode selected by a slice's `zdiv` (§3.9.4, §3.9.9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZeroRunMode {
    /// `zdiv` 0..=3: alternating mode; zero runs are Golomb-Rice coded with divisor `1 << zdiv`.
    Alternating {
        /// Zero-run Golomb-Rice divisor exponent, 0..=3.
        zdiv: u8,
    },
    /// `zdiv == 6`: every weight, zero or not, is coded as a weight index.
    NoZeroRuns,
}

impl ZeroRunMode {
    /// Parses a `zdiv` field value that introduces a slice. Returns `None` for
    /// the reserved values 4 and 5 and for the end-of-stream marker 7.
    pub fn from_zdiv(zdiv: u8) -> Option<Self> {
        match zdiv {
            0..=3 => Some(Self::Alternating { zdiv }),
            ZDIV_NO_ZERO_RUNS => Some(Self::NoZeroRuns),
            _ => None,
        }
    }

    /// The `zdiv` field value of this mode.
    pub fn zdiv(self) -> u8 {
        match self {
            Self::Alternating { zdiv } => zdiv,
            Self::NoZeroRuns => ZDIV_NO_ZERO_RUNS,
        }
    }

    /// True for alternating (zero-run) mode, `zdiv < 4`.
    pub fn is_alternating(self) -> bool {
        matches!(self, Self::Alternating { .. })
    }

    /// `zunary_len`: width of a chunk's `zunary` field, 12 for `zdiv < 3`, else 8.
    pub fn zunary_len(self) -> u32 {
        if self.zdiv() < 3 {
            12
        } else {
            8
        }
    }
}

/// Weight index coding selected by a slice's `wdiv` (§3.9.7, §3.9.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WeightIndexMode {
    /// `wdiv` 0..=5: Golomb-Rice coding with divisor `1 << wdiv`.
    GolombRice {
        /// Divisor exponent, 0..=5; also the width of each `wremain`.
        wdiv: u8,
    },
    /// `wdiv == 7`: each index stored in `uncompressed_bits` bits.
    Uncompressed,
}

impl WeightIndexMode {
    /// Parses a `wdiv` field value; `None` for the reserved value 6.
    pub fn from_wdiv(wdiv: u8) -> Option<Self> {
        match wdiv {
            0..=WDIV_MAX_GOLOMB_RICE => Some(Self::GolombRice { wdiv }),
            WDIV_UNCOMPRESSED => Some(Self::Uncompressed),
            _ => None,
        }
    }

    /// The `wdiv` field value of this mode.
    pub fn wdiv(self) -> u8 {
        match self {
            Self::GolombRice { wdiv } => wdiv,
            Self::Uncompressed => WDIV_UNCOMPRESSED,
        }
    }
}

/// The palette / direct-mode state set by a slice with `newpal == 1` (§3.9.5, §3.9.6)
/// and kept by following slices with `newpal == 0`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Palette {
    /// `dirofs`: direct-mode offset, 0..=31.
    pub dirofs: u8,
    /// `palette_bits = palbits + 2`, 2..=9: width of each palette entry; in
    /// direct mode (empty palette) the uncompressed index width.
    pub palette_bits: u8,
    /// `palette[i]`, sign-magnitude coded (bit 0 sign, bits above magnitude),
    /// each below `1 << palette_bits`. Length is `palette_size`: 0 (direct
    /// mode) or 2..=32.
    pub entries: Vec<u16>,
}

impl Palette {
    /// A direct-mode palette state (no entries).
    pub fn direct(dirofs: u8, palette_bits: u8) -> Self {
        Self {
            dirofs,
            palette_bits,
            entries: Vec::new(),
        }
    }

    /// `palette_size`: number of palette entries (0 in direct mode).
    pub fn palette_size(&self) -> usize {
        self.entries.len()
    }

    /// The 5-bit `palsize` field coding [`Self::palette_size`]: 0 for direct
    /// mode, else `palette_size - 1`. `None` if the size is not codable (1 or above 32).
    pub fn palsize(&self) -> Option<u8> {
        match self.entries.len() {
            0 => Some(0),
            n @ 2..=PALETTE_SIZE_MAX => u8::try_from(n - 1).ok(),
            _ => None,
        }
    }

    /// The 3-bit `palbits` field, `palette_bits - 2`. `None` if out of range.
    pub fn palbits(&self) -> Option<u8> {
        match self.palette_bits {
            2..=9 => Some(self.palette_bits - 2),
            _ => None,
        }
    }

    /// `uncompressed_bits` (§3.9.8): `ceil(log2(palette_size))` with a palette, else `palette_bits`.
    pub fn uncompressed_bits(&self) -> u32 {
        match self.entries.len() {
            0 => u32::from(self.palette_bits),
            n => usize::BITS - (n - 1).leading_zeros(),
        }
    }

    /// `uncompressed_per_chunk`: weight indices per chunk in uncompressed mode,
    /// 12 if `uncompressed_bits <= 5`, else 8.
    pub fn uncompressed_per_chunk(&self) -> usize {
        if self.uncompressed_bits() <= 5 {
            12
        } else {
            8
        }
    }

    /// Maps a weight index to its sign-magnitude code `tmp` (§3.9.6): a palette
    /// entry for `index < palette_size`, else `index - palette_size + dirofs`.
    pub fn index_to_code(&self, index: u16) -> u32 {
        let i = usize::from(index);
        match self.entries.get(i) {
            Some(&entry) => u32::from(entry),
            None => u32::from(index) - self.entries.len() as u32 + u32::from(self.dirofs),
        }
    }

    /// Maps a weight index to its weight value (§3.9.6). `None` if the value
    /// falls outside -255..=255.
    pub fn index_to_value(&self, index: u16) -> Option<i16> {
        sign_magnitude_to_value(self.index_to_code(index))
    }
}

/// Decodes a sign-magnitude code (bit 0 sign, upper bits magnitude) to a
/// weight value; `None` if the magnitude exceeds 255.
pub fn sign_magnitude_to_value(code: u32) -> Option<i16> {
    let magnitude = i16::try_from(code >> 1)
        .ok()
        .filter(|m| *m <= WEIGHT_ABS_MAX)?;
    Some(if code & 1 == 1 { -magnitude } else { magnitude })
}

/// Encodes a weight value (-255..=255) as a sign-magnitude code. Zero is coded
/// as `0` (the code `1`, "negative zero", also decodes to zero).
pub fn value_to_sign_magnitude(value: i16) -> Option<u16> {
    if !(-WEIGHT_ABS_MAX..=WEIGHT_ABS_MAX).contains(&value) {
        return None;
    }
    let magnitude = value.unsigned_abs();
    Some((magnitude << 1) | u16::from(value < 0))
}

/// The header of one slice (§3.9.5), with its introducing `zdiv`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SliceHeader {
    /// Zero-run mode, from `zdiv`.
    pub zero_run_mode: ZeroRunMode,
    /// `slicelen = slicelen_m1 + 1`, 1..=32768: weight indices in the slice
    /// (in alternating mode, the nonzero weights).
    pub slicelen: u32,
    /// Weight index coding, from `wdiv`.
    pub weight_index_mode: WeightIndexMode,
    /// `wtrunc`: the weight unary code is truncated to 2 bits (`wq <= 2`).
    pub wtrunc: bool,
    /// `newpal == 1` with the new palette state; `None` keeps the previous one.
    pub new_palette: Option<Palette>,
}

impl SliceHeader {
    /// `newpal` as 0/1.
    pub fn newpal(&self) -> u32 {
        u32::from(self.new_palette.is_some())
    }

    /// Number of weight indices coded in the slice (`w_cnt = slicelen`).
    pub fn w_cnt(&self) -> u32 {
        self.slicelen
    }

    /// Number of zero runs coded in the slice (`z_cnt`): `slicelen + newpal`
    /// in alternating mode, else 0.
    pub fn z_cnt(&self) -> u32 {
        if self.zero_run_mode.is_alternating() {
            self.slicelen + self.newpal()
        } else {
            0
        }
    }

    /// Width of the header in bits, including its `zdiv`.
    pub fn bit_len(&self) -> u64 {
        let base = ZDIV_BITS + SLICELEN_M1_BITS + WDIV_BITS + 2;
        let pal = match &self.new_palette {
            None => 0,
            Some(p) => {
                DIROFS_BITS
                    + PALSIZE_BITS
                    + PALBITS_BITS
                    + p.entries.len() as u32 * u32::from(p.palette_bits)
            }
        };
        u64::from(base + pal)
    }
}
