//! Memory seen by the NPU (TRM 3.6.3): eight regions, each a byte buffer at a base offset
//! (BASEP), plus the 2048-byte internal LUT RAM. Several regions may share one buffer (Vela's
//! Sram_Only / Shared_Sram modes put `scratch` and `scratch_fast` in the same memory). Every
//! access is bounds-checked against the buffer its region is mapped to, and counted.

use super::error::Fault;

/// Size of the internal lookup-table RAM in bytes (TRM 3.6.7: up to 2048 bytes of tables).
pub const LUT_BYTES: usize = 2048;

/// Number of address regions (BASEP0..7).
pub const NUM_REGIONS: usize = 8;

/// Handle of a buffer added with [`Memory::add_buffer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferId(pub usize);

#[derive(Debug, Clone, Copy)]
struct RegionMap {
    buffer: usize,
    base: u64,
}

/// Byte counters per region (index 0..7) and for the LUT RAM.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Bytes read per region.
    pub read: [u64; NUM_REGIONS],
    /// Bytes written per region.
    pub written: [u64; NUM_REGIONS],
    /// Bytes written to the LUT RAM.
    pub lut_written: u64,
}

impl Traffic {
    /// `self - earlier`, field by field.
    pub fn since(&self, earlier: &Traffic) -> Traffic {
        let mut t = Traffic::default();
        for r in 0..NUM_REGIONS {
            t.read[r] = self.read[r] - earlier.read[r];
            t.written[r] = self.written[r] - earlier.written[r];
        }
        t.lut_written = self.lut_written - earlier.lut_written;
        t
    }

    /// Total bytes read.
    pub fn total_read(&self) -> u64 {
        self.read.iter().sum()
    }

    /// Total bytes written (regions and LUT RAM).
    pub fn total_written(&self) -> u64 {
        self.written.iter().sum::<u64>() + self.lut_written
    }
}

/// The NPU's view of memory.
#[derive(Debug, Clone)]
pub struct Memory {
    buffers: Vec<Vec<u8>>,
    regions: [Option<RegionMap>; NUM_REGIONS],
    lut: Vec<u8>,
    traffic: Traffic,
    constants_unknown: bool,
    data_unknown: bool,
    shadow: Option<Shadow>,
}

/// What a check-only validation ([`super::validate`]) knows about memory contents it did not
/// compute: the byte ranges whose contents differ from those of a full run.
#[derive(Debug, Clone, Default)]
struct Shadow {
    /// `(region, start, end)` of bytes a full run would hold other values in.
    stale: Vec<(u8, u64, u64)>,
    /// The current operation has read stale bytes, so what it writes is stale too.
    op_read_stale: bool,
    /// A weight or scale stream was read from stale bytes: the run proves nothing.
    inexact: bool,
}

impl Shadow {
    fn overlaps(&self, region: u8, start: u64, end: u64) -> bool {
        self.stale
            .iter()
            .any(|&(r, s, e)| r == region && s < end && start < e)
    }

    fn mark(&mut self, region: u8, start: u64, end: u64) {
        if let Some(last) = self.stale.last_mut() {
            if last.0 == region && last.1 <= end && start <= last.2 {
                last.1 = last.1.min(start);
                last.2 = last.2.max(end);
                return;
            }
        }
        self.stale.push((region, start, end));
    }

    fn clear(&mut self, region: u8, start: u64, end: u64) {
        if !self.overlaps(region, start, end) {
            return;
        }
        let mut kept = Vec::with_capacity(self.stale.len() + 1);
        for &(r, s, e) in &self.stale {
            if r != region || e <= start || end <= s {
                kept.push((r, s, e));
                continue;
            }
            if s < start {
                kept.push((r, s, start));
            }
            if end < e {
                kept.push((r, end, e));
            }
        }
        self.stale = kept;
    }
}

impl Default for Memory {
    fn default() -> Self {
        Self::new()
    }
}

impl Memory {
    /// No buffers, no regions mapped, LUT RAM zero.
    pub fn new() -> Self {
        Memory {
            buffers: Vec::new(),
            regions: [None; NUM_REGIONS],
            lut: vec![0; LUT_BYTES],
            traffic: Traffic::default(),
            constants_unknown: false,
            data_unknown: false,
            shadow: None,
        }
    }

    /// Adds a buffer and returns its handle.
    pub fn add_buffer(&mut self, bytes: Vec<u8>) -> BufferId {
        self.buffers.push(bytes);
        BufferId(self.buffers.len() - 1)
    }

    /// Maps `region` (0..7) to `buffer`, region offset 0 being byte `base` of the buffer.
    /// Returns false (and maps nothing) for a region number above 7 or an unknown buffer.
    pub fn map_region(&mut self, region: u8, buffer: BufferId, base: u64) -> bool {
        if usize::from(region) >= NUM_REGIONS || buffer.0 >= self.buffers.len() {
            return false;
        }
        self.regions[usize::from(region)] = Some(RegionMap {
            buffer: buffer.0,
            base,
        });
        true
    }

    /// Adds `bytes` as a new buffer mapped to `region` at base 0.
    pub fn add_region(&mut self, region: u8, bytes: Vec<u8>) -> BufferId {
        let id = self.add_buffer(bytes);
        self.map_region(region, id, 0);
        id
    }

    /// The bytes of a buffer.
    pub fn buffer(&self, id: BufferId) -> &[u8] {
        self.buffers.get(id.0).map_or(&[], Vec::as_slice)
    }

    /// The bytes of a buffer, writable.
    pub fn buffer_mut(&mut self, id: BufferId) -> &mut [u8] {
        self.buffers
            .get_mut(id.0)
            .map_or(&mut [], Vec::as_mut_slice)
    }

    /// The LUT RAM.
    pub fn lut(&self) -> &[u8] {
        &self.lut
    }

    /// Traffic counted so far.
    pub fn traffic(&self) -> Traffic {
        self.traffic
    }

    /// Bytes `[addr, addr+len)` of `region` (0..7) for reading, bounds-checked and counted.
    pub fn read_bytes(&mut self, region: u8, addr: u64, len: u64) -> Result<&[u8], Fault> {
        let (buf, start) = self.locate(region, addr, len, "read")?;
        if let Some(shadow) = &mut self.shadow {
            if shadow.overlaps(region, addr, addr + len) {
                shadow.op_read_stale = true;
            }
        }
        if let Some(r) = self.traffic.read.get_mut(usize::from(region)) {
            *r += len;
        }
        Ok(&self.buffers[buf][start..start + len as usize])
    }

    /// Writes `bytes` at `addr` of `region`, or of the LUT RAM if `region` is `None`.
    pub fn write_bytes(
        &mut self,
        region: Option<u8>,
        addr: u64,
        bytes: &[u8],
    ) -> Result<(), Fault> {
        let len = bytes.len() as u64;
        match region {
            None => {
                let end = addr.checked_add(len).filter(|&e| e <= LUT_BYTES as u64);
                let Some(end) = end else {
                    return Err(Fault::OutOfRegion {
                        access: "write",
                        region: -1,
                        addr,
                        len,
                        size: LUT_BYTES as u64,
                    });
                };
                self.lut[addr as usize..end as usize].copy_from_slice(bytes);
                self.traffic.lut_written += len;
            }
            Some(region) => {
                let (buf, start) = self.locate(region, addr, len, "write")?;
                self.buffers[buf][start..start + bytes.len()].copy_from_slice(bytes);
                if let Some(shadow) = &mut self.shadow {
                    if shadow.op_read_stale {
                        shadow.mark(region, addr, addr + len);
                    } else {
                        shadow.clear(region, addr, addr + len);
                    }
                }
                self.traffic.written[usize::from(region)] += len;
            }
        }
        Ok(())
    }

    /// Reads one little-endian element of `esize` bytes (1, 2, 4 or 8), sign- or zero-extended.
    #[inline]
    pub fn read_elem(
        &mut self,
        region: u8,
        addr: u64,
        esize: u64,
        signed: bool,
    ) -> Result<i64, Fault> {
        let b = self.read_bytes(region, addr, esize)?;
        let mut raw = [0u8; 8];
        raw[..b.len()].copy_from_slice(b);
        let v = u64::from_le_bytes(raw);
        let bits = 8 * esize as u32;
        Ok(if bits >= 64 {
            v as i64
        } else if signed {
            ((v << (64 - bits)) as i64) >> (64 - bits)
        } else {
            v as i64
        })
    }

    /// Writes the low `esize` bytes of `value` little-endian.
    #[inline]
    pub fn write_elem(
        &mut self,
        region: u8,
        addr: u64,
        esize: u64,
        value: i64,
    ) -> Result<(), Fault> {
        let bytes = value.to_le_bytes();
        self.write_bytes(Some(region), addr, &bytes[..esize as usize])
    }

    /// Marks the weight and scale streams as unknown (validating a stream that comes without
    /// its read-only data): they are bounds-checked as always but not decoded; weights read as
    /// 0, scales as unity, biases as 0.
    pub fn set_constants_unknown(&mut self, unknown: bool) {
        self.constants_unknown = unknown;
    }

    /// See [`Memory::set_constants_unknown`].
    pub fn constants_unknown(&self) -> bool {
        self.constants_unknown
    }

    /// Marks the memory contents as stand-ins (validation runs a stream on zero-filled
    /// feature maps): the asserts that only the data can violate (an integer division by 0 or
    /// of -2^31 by -1, TRM 3.10.6) yield 0 instead of stopping the run; every rule about the
    /// stream itself still holds.
    pub fn set_data_unknown(&mut self, unknown: bool) {
        self.data_unknown = unknown;
    }

    /// See [`Memory::set_data_unknown`].
    pub fn data_unknown(&self) -> bool {
        self.data_unknown
    }

    /// Starts a check-only run ([`super::validate`]): kernel operations that qualify check
    /// their rules and extents without computing their outputs, whose bytes are tracked as
    /// stale from then on.
    pub fn set_check_only(&mut self) {
        self.shadow = Some(Shadow::default());
    }

    /// Whether this is a check-only run.
    pub fn check_only(&self) -> bool {
        self.shadow.is_some()
    }

    /// Records that the operation about to run starts with no stale input read.
    pub fn start_operation(&mut self) {
        if let Some(shadow) = &mut self.shadow {
            shadow.op_read_stale = false;
        }
    }

    /// Whether the current operation has read stale bytes (check-only run), so that what it
    /// computes is stale too.
    pub fn op_read_stale(&self) -> bool {
        self.shadow.as_ref().is_some_and(|s| s.op_read_stale)
    }

    /// Records that the current operation read a stale value from elsewhere than memory (a
    /// chaining FIFO a check-only operation filled): what it writes is stale.
    pub fn note_stale_read(&mut self) {
        if let Some(shadow) = &mut self.shadow {
            shadow.op_read_stale = true;
        }
    }

    /// Records that bytes `[start, end)` of `region` were not computed (check-only run).
    pub fn mark_stale(&mut self, region: u8, start: u64, end: u64) {
        if let Some(shadow) = &mut self.shadow {
            shadow.mark(region, start, end);
        }
    }

    /// Reads bytes of a weight or scale stream: [`Memory::read_bytes`], and in a check-only
    /// run, notes when they are stale (the decode then proves nothing: [`Memory::inexact`]).
    pub fn read_stream_bytes(&mut self, region: u8, addr: u64, len: u64) -> Result<&[u8], Fault> {
        if let Some(shadow) = &mut self.shadow {
            if shadow.overlaps(region, addr, addr.saturating_add(len)) {
                shadow.inexact = true;
            }
        }
        self.read_bytes(region, addr, len)
    }

    /// Records that the check-only run proves nothing (an operation whose rules depend on
    /// values read stale ones): [`Memory::inexact`].
    pub fn set_inexact(&mut self) {
        if let Some(shadow) = &mut self.shadow {
            shadow.inexact = true;
        }
    }

    /// Whether a check-only run read a weight or scale stream from bytes it did not compute,
    /// or an operation whose rules depend on values read stale ones.
    pub fn inexact(&self) -> bool {
        self.shadow.as_ref().is_some_and(|s| s.inexact)
    }

    /// The bytes mapped to `region` (from its base to the end of its buffer), `None` when it
    /// is not mapped.
    pub fn region_size(&self, region: u8) -> Option<u64> {
        let map = self.regions.get(usize::from(region)).copied().flatten()?;
        Some((self.buffers[map.buffer].len() as u64).saturating_sub(map.base))
    }

    /// Whether `[addr, addr+len)` of `region` is mapped (what a read or write would check).
    pub fn check_access(&self, region: u8, addr: u64, len: u64) -> Result<(), Fault> {
        self.locate(region, addr, len, "write").map(|_| ())
    }

    fn locate(
        &self,
        region: u8,
        addr: u64,
        len: u64,
        access: &'static str,
    ) -> Result<(usize, usize), Fault> {
        let map = self
            .regions
            .get(usize::from(region))
            .copied()
            .flatten()
            .ok_or(Fault::UnmappedRegion { region })?;
        let buf = &self.buffers[map.buffer];
        let size = (buf.len() as u64).saturating_sub(map.base);
        match addr.checked_add(len) {
            Some(end) if end <= size => Ok((map.buffer, (map.base + addr) as usize)),
            _ => Err(Fault::OutOfRegion {
                access,
                region: i32::from(region),
                addr,
                len,
                size,
            }),
        }
    }
}
