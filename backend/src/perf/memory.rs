//! How long a memory takes to serve an operation's accesses through the NPU's AXI ports
//! (decision P15 in `docs/decisions.md`).
//!
//! Per direction (AXI read and write channels are independent), the cycles are the larger of
//! - the data time: beats / (ports x clock scale), one port-width beat per memory clock per
//!   port ([`crate::system::AXI_PORT_BYTES`]);
//! - the latency time: bursts x latency / (outstanding transactions x ports): each burst
//!   holds one of the port's outstanding-transaction slots for the memory's latency (Little's
//!   law), so short bursts make a slow memory latency-bound.
//!
//! Ports and outstanding transactions are the system configuration's, capped by what the
//! NPU configuration has (TRM Table 2-2: AXI ports per configuration; Tables 3-21 and 3-23:
//! outstanding transactions per port): the NPU "uses the minimum value" (TRM 2.3.3).

use super::axi::Access;
use crate::arch::Accelerator;
use crate::system::{AxiPort, MemoryKind, SystemConfig, AXI_PORT_BYTES};

/// What one kind of AXI port offers in one NPU configuration (TRM Tables 2-2, 3-21, 3-23).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortLimits {
    /// Number of ports of the kind.
    pub ports: u32,
    /// Outstanding read transactions per port.
    pub max_reads: u32,
    /// Outstanding write transactions per port.
    pub max_writes: u32,
}

/// The AXI ports of a configuration: AXI_SRAM (port group 0) or AXI_EXT (port group 1).
pub fn port_limits(acc: Accelerator, port: AxiPort) -> PortLimits {
    use Accelerator::*;
    match port {
        AxiPort::Axi0 => PortLimits {
            ports: if acc == U85_2048 { 4 } else { 2 },
            max_reads: 12,
            max_writes: 16,
        },
        AxiPort::Axi1 => PortLimits {
            ports: if matches!(acc, U85_1024 | U85_2048) {
                2
            } else {
                1
            },
            max_reads: if matches!(acc, U85_128 | U85_256) {
                32
            } else {
                64
            },
            max_writes: 32,
        },
    }
}

/// The DMA controller's read channels (TRM 2.3.4), each with its own read buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadChannel {
    /// mem2mem copies (NPU_OP_DMA_START).
    Mem2Mem = 0,
    /// Elementwise and resize operands, a matrix multiply's IFM2.
    IfmStream = 1,
    /// Standard weight streams.
    Weight = 2,
    /// The fast weight stream.
    FastWeight = 3,
    /// IFM of a convolution, depthwise or pooling operation.
    Ifm = 4,
    /// The scale/bias stream.
    Scale = 5,
}

/// Number of read channels ([`ReadChannel`]).
pub const READ_CHANNELS: usize = 6;

impl ReadChannel {
    /// All read channels, in index order.
    pub const ALL: [ReadChannel; READ_CHANNELS] = [
        ReadChannel::Mem2Mem,
        ReadChannel::IfmStream,
        ReadChannel::Weight,
        ReadChannel::FastWeight,
        ReadChannel::Ifm,
        ReadChannel::Scale,
    ];
}

/// Read buffer of a channel in 16-byte words. The TRM (2.3.4: "the DMA controller uses a
/// read buffer to hide bus latency") gives no sizes; these are Vela 5.2's per configuration
/// (decision P18).
pub fn read_buffer_words(acc: Accelerator, ch: ReadChannel) -> u32 {
    use Accelerator::*;
    let t: [u32; READ_CHANNELS] = match acc {
        U85_128 => [64, 64, 128, 128, 104, 16],
        U85_256 => [104, 104, 128, 128, 128, 16],
        U85_512 => [128, 128, 256, 256, 128, 16],
        U85_1024 => [256, 256, 416, 208, 256, 16],
        U85_2048 => [256, 256, 512, 256, 256, 16],
    };
    t[ch as usize]
}

/// Share of the outstanding transactions, and of the latency-bound bandwidth, a stream of
/// bursts sustains (decision P18, Vela's 0.8).
pub const UTILISATION: f64 = 0.8;

/// One direction of a memory as the NPU reaches it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Channel {
    /// Memory clocks per core cycle x ports: beats per core cycle.
    pub beats_per_cycle: f64,
    /// Latency in core cycles (0: none).
    pub latency: f64,
    /// Outstanding transactions over all ports (0: unlimited).
    pub outstanding: f64,
}

impl Channel {
    /// Bytes per cycle of the ports (the memory's bandwidth through them).
    pub fn bandwidth(&self) -> f64 {
        self.beats_per_cycle * f64::from(AXI_PORT_BYTES)
    }

    /// Bytes per cycle one channel sustains with bursts of `burst` bytes and at most
    /// `buffer_slots` bursts in its read buffer (`None`: no buffer limit, a write channel):
    /// the ports' bandwidth or, latency-bound, `burst` bytes per transaction slot per latency
    /// with `min(buffer_slots, 0.8 x outstanding)` slots, at 80 % (P18).
    pub fn sustained(&self, burst: u64, buffer_slots: Option<f64>) -> f64 {
        let bw = self.bandwidth();
        if self.latency <= 0.0 || self.outstanding <= 0.0 {
            return bw;
        }
        let slots = (self.outstanding * UTILISATION).min(buffer_slots.unwrap_or(f64::INFINITY));
        bw.min(burst as f64 * slots / self.latency * UTILISATION)
    }
}

/// A memory's read and write channels and burst length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryTiming {
    /// Bursts are split at multiples of this many bytes.
    pub burst: u64,
    /// The read channel.
    pub read: Channel,
    /// The write channel.
    pub write: Channel,
    /// The NPU configuration (its read buffers).
    pub accelerator: Accelerator,
}

impl MemoryTiming {
    /// The timing of `kind` in `system` for the NPU configuration `acc`.
    pub fn new(system: &SystemConfig, kind: MemoryKind, acc: Accelerator) -> MemoryTiming {
        let a = system.area(kind);
        let port = if system.axi0_port == kind {
            AxiPort::Axi0
        } else {
            AxiPort::Axi1
        };
        let hw = port_limits(acc, port);
        let ports = a.ports_used.clamp(1, hw.ports);
        let cap = |configured: u32, hw: u32| {
            if configured == 0 {
                hw
            } else {
                configured.min(hw)
            }
        };
        let channel = |latency: u32, outstanding: u32| Channel {
            beats_per_cycle: f64::from(ports) * a.clock_scale,
            latency: f64::from(latency),
            outstanding: f64::from(outstanding * ports),
        };
        MemoryTiming {
            burst: u64::from(a.burst_length.max(1)),
            read: channel(a.read_latency, cap(a.max_reads, hw.max_reads)),
            write: channel(a.write_latency, cap(a.max_writes, hw.max_writes)),
            accelerator: acc,
        }
    }

    /// Bytes per cycle a read channel sustains.
    pub fn read_bandwidth(&self, ch: ReadChannel) -> f64 {
        let words = f64::from(read_buffer_words(self.accelerator, ch));
        let burst_words = (self.burst as f64 / f64::from(AXI_PORT_BYTES)).max(1.0);
        self.read.sustained(self.burst, Some(words / burst_words))
    }

    /// Bytes per cycle the write channel sustains.
    pub fn write_bandwidth(&self) -> f64 {
        self.write.sustained(self.burst, None)
    }

    /// Cycles of the reads (per read channel) and the writes of one operation: each channel
    /// at its sustained bandwidth on the accesses' effective bytes (P18), the read channels in
    /// parallel; all together at most the memory's bandwidth. Returns (reads, writes, both).
    pub fn cycles(&self, reads: [&Access; READ_CHANNELS], writes: &Access) -> (f64, f64, f64) {
        let bw = self.read.bandwidth();
        let mut read_eff = 0.0;
        let mut read_max: f64 = 0.0;
        for ch in ReadChannel::ALL {
            let b = reads[ch as usize].effective_bytes(self.burst);
            if b > 0.0 {
                read_eff += b;
                read_max = read_max.max(b / self.read_bandwidth(ch));
            }
        }
        let write_eff = writes.effective_bytes(self.burst);
        let write_t = if write_eff > 0.0 {
            write_eff / self.write_bandwidth()
        } else {
            0.0
        };
        let r = read_max.max(read_eff / bw);
        let w = write_t.max(write_eff / bw);
        (r, w, r.max(w).max((read_eff + write_eff) / bw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::presets;

    #[test]
    fn dram_mid_on_the_256_is_capped_by_its_external_port() {
        let sys = presets::system_config("Ethos_U85_SYS_DRAM_Mid").unwrap();
        let t = MemoryTiming::new(&sys, MemoryKind::Dram, Accelerator::U85_256);
        // One EXT port at 0.75 of the core clock; 64 reads configured, 32 in the NPU.
        assert_eq!(t.read.beats_per_cycle, 0.75);
        assert_eq!(t.read.outstanding, 32.0);
        assert_eq!(t.write.outstanding, 32.0);
        let t2048 = MemoryTiming::new(&sys, MemoryKind::Dram, Accelerator::U85_2048);
        assert_eq!(t2048.read.outstanding, 64.0);
        // The weight channel's 128-word read buffer holds 16 bursts of 128 bytes, fewer than
        // 0.8 x 32 transactions: 128 x 16 / 500 x 0.8 = 3.28 bytes per cycle (the issue's
        // 640->128 fully connected layer: 82 KB of weights in 25 000 cycles, as Vela).
        let w = t.read_bandwidth(ReadChannel::Weight);
        assert!((w - 3.2768).abs() < 1e-9, "{w}");
        let mut weights = Access::default();
        weights.add(81920, 128, 1);
        let none = Access::default();
        let (r, _, both) = t.cycles([&none, &none, &weights, &none, &none, &none], &none);
        assert_eq!((r.round(), both.round()), (25000.0, 25000.0));
        // The scale channel's 16 words hold two bursts: 0.41 bytes per cycle.
        assert!((t.read_bandwidth(ReadChannel::Scale) - 0.4096).abs() < 1e-9);
        // Writes: 0.8 x 32 outstanding for 250 cycles.
        assert!((t.write_bandwidth() - 128.0 * 25.6 / 250.0 * 0.8).abs() < 1e-9);
        // The 2048's weight channel: 64 outstanding (0.8 x 64 = 51.2 of its 64 buffered
        // bursts), 10.5 bytes per cycle, below the port's 12.
        let w2048 = t2048.read_bandwidth(ReadChannel::Weight);
        assert!((w2048 - 128.0 * 51.2 / 500.0 * 0.8).abs() < 1e-9, "{w2048}");
        // A 3-byte NHWC position costs 3/16 of a 128-byte burst.
        let mut pixels = Access::default();
        pixels.add(3, 3, 1000);
        assert_eq!(pixels.effective_bytes(128), 1000.0 * 3.0 * 8.0);
    }

    #[test]
    fn sram_uses_the_configured_ports_and_transactions() {
        let sys = presets::system_config("Ethos_U85_SYS_DRAM_Mid").unwrap();
        let t = MemoryTiming::new(&sys, MemoryKind::Sram, Accelerator::U85_256);
        assert_eq!(t.burst, 64);
        assert_eq!(t.read.beats_per_cycle, 2.0);
        assert_eq!(t.read.outstanding, 16.0);
        assert_eq!(t.read.latency, 32.0);
    }
}
