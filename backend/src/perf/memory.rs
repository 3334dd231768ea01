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
    /// Cycles the data of `access` occupies the ports.
    pub fn data(&self, access: &Access) -> f64 {
        access.beats(u64::from(AXI_PORT_BYTES)) / self.beats_per_cycle
    }

    /// Cycles the channel is busy moving `access`, split into bursts of `burst` bytes: the
    /// larger of the data time and the latency time. The latency of the first burst comes on
    /// top once per operation (see [`super::PerfModel::op`]).
    pub fn cycles(&self, access: &Access, burst: u64) -> f64 {
        if access.is_empty() {
            return 0.0;
        }
        let data = self.data(access);
        let latency = if self.latency > 0.0 && self.outstanding > 0.0 {
            access.bursts(burst) * self.latency / self.outstanding
        } else {
            0.0
        };
        data.max(latency)
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
        }
    }

    /// Cycles to read `reads` and write `writes` (the channels work in parallel).
    pub fn cycles(&self, reads: &Access, writes: &Access) -> (f64, f64) {
        (
            self.read.cycles(reads, self.burst),
            self.write.cycles(writes, self.burst),
        )
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
        // Even full 128-byte bursts are latency-bound on the 256 (32 x 128 B per 500 cycles
        // is 8.2 B/cycle, below the port's 12), not on the 2048.
        let mut full = Access::default();
        full.add(128, 128, 100);
        assert_eq!(t.read.cycles(&full, 128), 100.0 * 500.0 / 32.0);
        assert_eq!(t2048.read.cycles(&full, 128), 800.0 / 0.75);
        // 3-byte pixels are latency-bound: 500 cycles per 32 outstanding.
        let mut pixels = Access::default();
        pixels.add(3, 3, 1000);
        let c = t.read.cycles(&pixels, 128);
        assert!(
            c > 1000.0 * 500.0 / 32.0 && c < 1020.0 * 500.0 / 32.0,
            "{c}"
        );
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
