//! System configurations and memory modes: the memories around the NPU.
//!
//! The same vocabulary and fields as Vela's `vela.ini` (the format and its numbers are facts; see
//! `docs/decisions.md`, "Performance model"):
//!
//! - a [`SystemConfig`] (`[System_Config.NAME]`) gives the core clock, which memory sits behind
//!   each of the two AXI port groups (`axi0_port`, `axi1_port`) and, per memory, its clock scale,
//!   number of ports used, burst length, read/write latency and maximum outstanding transactions;
//! - a [`MemoryMode`] (`[Memory_Mode.NAME]`) says which AXI port holds the constants (weights,
//!   scales: `const_mem_area`), the arena (feature maps: `arena_mem_area`) and the staging/cache
//!   area (`cache_mem_area`), and the size of the arena cache (`arena_cache_size`).
//!
//! [`presets`] has the U85 presets of Vela 5.2's `vela.ini`, [`ini`] parses `--config FILE.ini`,
//! and [`MemoryMap`] resolves a configuration and a mode into the memory behind each region.

pub mod ini;
pub mod presets;

use std::collections::BTreeMap;
use std::fmt;

/// A kind of memory (Vela's `MemArea` names, used as key prefixes in `vela.ini`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryKind {
    /// On-chip SRAM.
    Sram,
    /// Off-chip DRAM.
    Dram,
    /// On-chip flash (what SRAM-only systems keep their constants in).
    OnChipFlash,
    /// Off-chip flash.
    OffChipFlash,
}

impl MemoryKind {
    /// All kinds, in Vela's order.
    pub const ALL: [MemoryKind; 4] = [
        MemoryKind::Sram,
        MemoryKind::Dram,
        MemoryKind::OnChipFlash,
        MemoryKind::OffChipFlash,
    ];

    /// The name used in `vela.ini` (`Sram`, `Dram`, `OnChipFlash`, `OffChipFlash`).
    pub const fn name(self) -> &'static str {
        match self {
            MemoryKind::Sram => "Sram",
            MemoryKind::Dram => "Dram",
            MemoryKind::OnChipFlash => "OnChipFlash",
            MemoryKind::OffChipFlash => "OffChipFlash",
        }
    }

    /// Parses a `vela.ini` memory name.
    pub fn from_name(name: &str) -> Option<MemoryKind> {
        MemoryKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One of the two AXI port groups of the NPU (`Axi0`: SRAM ports, `Axi1`: external ports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AxiPort {
    /// AXI port group 0.
    Axi0,
    /// AXI port group 1.
    Axi1,
}

impl AxiPort {
    /// The name used in `vela.ini`.
    pub const fn name(self) -> &'static str {
        match self {
            AxiPort::Axi0 => "Axi0",
            AxiPort::Axi1 => "Axi1",
        }
    }

    /// Parses `Axi0` / `Axi1`.
    pub fn from_name(name: &str) -> Option<AxiPort> {
        match name {
            "Axi0" => Some(AxiPort::Axi0),
            "Axi1" => Some(AxiPort::Axi1),
            _ => None,
        }
    }
}

impl fmt::Display for AxiPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The characteristics of one memory (`<Memory>_<key>` in a `[System_Config.NAME]` section).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryArea {
    /// Memory clock as a fraction of the core clock (`_clock_scale`).
    pub clock_scale: f64,
    /// AXI ports the memory is reached through (`_ports_used`, at least 1).
    pub ports_used: u32,
    /// Burst length in bytes (`_burst_length`).
    pub burst_length: u32,
    /// Read latency in core cycles (`_read_latency`).
    pub read_latency: u32,
    /// Write latency in core cycles (`_write_latency`).
    pub write_latency: u32,
    /// Maximum outstanding read transactions (`_max_reads`).
    pub max_reads: u32,
    /// Maximum outstanding write transactions (`_max_writes`).
    pub max_writes: u32,
}

impl Default for MemoryArea {
    /// What Vela assumes for a key the file does not give: scale 1, one port, burst 1,
    /// latency 0, no limit on outstanding transactions (recorded as 0 = unlimited).
    fn default() -> Self {
        MemoryArea {
            clock_scale: 1.0,
            ports_used: 1,
            burst_length: 1,
            read_latency: 0,
            write_latency: 0,
            max_reads: 0,
            max_writes: 0,
        }
    }
}

/// Bytes one AXI port moves per memory clock: the U85's AXI data width is 128 bits (see
/// `docs/decisions.md`, P2).
pub const AXI_PORT_BYTES: u32 = 16;

/// A system configuration (`[System_Config.NAME]`).
#[derive(Debug, Clone, PartialEq)]
pub struct SystemConfig {
    /// Section name without the `System_Config.` prefix.
    pub name: String,
    /// NPU core clock in Hz (`core_clock`).
    pub core_clock: f64,
    /// Memory behind AXI port group 0 (`axi0_port`).
    pub axi0_port: MemoryKind,
    /// Memory behind AXI port group 1 (`axi1_port`).
    pub axi1_port: MemoryKind,
    /// Width of one AXI port in bytes per memory clock ([`AXI_PORT_BYTES`]; not in `vela.ini`).
    pub axi_port_bytes: u32,
    /// Characteristics of the memories behind the ports.
    pub memories: BTreeMap<MemoryKind, MemoryArea>,
}

impl SystemConfig {
    /// The memory behind an AXI port group.
    pub fn port(&self, port: AxiPort) -> MemoryKind {
        match port {
            AxiPort::Axi0 => self.axi0_port,
            AxiPort::Axi1 => self.axi1_port,
        }
    }

    /// A memory's characteristics (defaults when the configuration does not describe it).
    pub fn area(&self, kind: MemoryKind) -> MemoryArea {
        self.memories.get(&kind).copied().unwrap_or_default()
    }

    /// Peak bandwidth of a memory in bytes per core cycle: port width x ports x clock scale.
    pub fn bytes_per_cycle(&self, kind: MemoryKind) -> f64 {
        let a = self.area(kind);
        f64::from(self.axi_port_bytes) * f64::from(a.ports_used.max(1)) * a.clock_scale
    }
}

/// A memory mode (`[Memory_Mode.NAME]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryMode {
    /// Section name without the `Memory_Mode.` prefix.
    pub name: String,
    /// Port holding the constants: weights, scales, LUTs (`const_mem_area`).
    pub const_mem_area: AxiPort,
    /// Port holding the arena: feature maps, scratch (`arena_mem_area`).
    pub arena_mem_area: AxiPort,
    /// Port holding the staging/cache area (`cache_mem_area`).
    pub cache_mem_area: AxiPort,
    /// Size of the arena cache in bytes (`arena_cache_size`); `None`: the whole memory.
    pub arena_cache_size: Option<u64>,
}

/// A name that is not a known configuration or mode, or a combination that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SystemError {
    /// No system configuration of that name.
    #[error("unknown system configuration {name:?}; valid names: {}", valid.join(", "))]
    UnknownSystemConfig {
        /// The name asked for.
        name: String,
        /// The names that exist.
        valid: Vec<String>,
    },
    /// No memory mode of that name.
    #[error("unknown memory mode {name:?}; valid names: {}", valid.join(", "))]
    UnknownMemoryMode {
        /// The name asked for.
        name: String,
        /// The names that exist.
        valid: Vec<String>,
    },
    /// The mode puts an area in a memory that cannot hold it.
    #[error("memory mode {mode} puts the {area} in {memory} ({port} of {system}); it must be in {allowed}")]
    BadPlacement {
        /// The memory mode.
        mode: String,
        /// The system configuration.
        system: String,
        /// `constant area`, `arena` or `cache`.
        area: &'static str,
        /// The port.
        port: AxiPort,
        /// The memory behind it.
        memory: MemoryKind,
        /// The memories allowed.
        allowed: &'static str,
    },
}

/// The memory each kind of data lives in, from a system configuration and a memory mode.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryMap {
    /// The system configuration (with the SRAM-only adjustment applied, see [`MemoryMap::new`]).
    pub system: SystemConfig,
    /// The memory mode.
    pub mode: MemoryMode,
    /// Memory of the constants (region 0).
    pub constants: MemoryKind,
    /// Memory of the arena (region 1).
    pub arena: MemoryKind,
    /// Memory of the staging/cache area (region 2).
    pub cache: MemoryKind,
}

impl MemoryMap {
    /// Resolves a configuration and a mode, as Vela does: when constants, arena and cache all
    /// sit on one port and that port is SRAM (`Sram_Only`), the constants are in on-chip flash
    /// with the SRAM's characteristics on the other port. Constants must be in DRAM or flash,
    /// the arena in SRAM or DRAM, the cache in SRAM.
    pub fn new(system: &SystemConfig, mode: &MemoryMode) -> Result<MemoryMap, SystemError> {
        let mut system = system.clone();
        let mut const_port = mode.const_mem_area;
        if system.port(const_port) == MemoryKind::Sram
            && const_port == mode.arena_mem_area
            && const_port == mode.cache_mem_area
        {
            let sram = system.area(MemoryKind::Sram);
            const_port = match const_port {
                AxiPort::Axi0 => AxiPort::Axi1,
                AxiPort::Axi1 => AxiPort::Axi0,
            };
            match const_port {
                AxiPort::Axi0 => system.axi0_port = MemoryKind::OnChipFlash,
                AxiPort::Axi1 => system.axi1_port = MemoryKind::OnChipFlash,
            }
            system.memories.insert(MemoryKind::OnChipFlash, sram);
        }
        let place = |area: &'static str, port: AxiPort, ok: &[MemoryKind], allowed| {
            let memory = system.port(port);
            if ok.contains(&memory) {
                Ok(memory)
            } else {
                Err(SystemError::BadPlacement {
                    mode: mode.name.clone(),
                    system: system.name.clone(),
                    area,
                    port,
                    memory,
                    allowed,
                })
            }
        };
        use MemoryKind::*;
        let constants = place(
            "constant area",
            const_port,
            &[Dram, OnChipFlash, OffChipFlash],
            "Dram, OnChipFlash or OffChipFlash",
        )?;
        let arena = place("arena", mode.arena_mem_area, &[Sram, Dram], "Sram or Dram")?;
        let cache = place("cache", mode.cache_mem_area, &[Sram], "Sram")?;
        Ok(MemoryMap {
            mode: mode.clone(),
            constants,
            arena,
            cache,
            system,
        })
    }

    /// The default: `Ethos_U85_SYS_DRAM_Mid` with `Dedicated_Sram_384KB`.
    pub fn default_u85() -> MemoryMap {
        let sys = presets::system_config(presets::DEFAULT_SYSTEM_CONFIG).expect("preset exists");
        let mode = presets::memory_mode(presets::DEFAULT_MEMORY_MODE).expect("preset exists");
        MemoryMap::new(&sys, &mode).expect("the default presets are consistent")
    }

    /// The memory behind a region of the command stream: region 0 holds the constants,
    /// region 1 the arena, region 2 the staging/cache area; other regions (inputs and outputs
    /// a host maps separately) are taken to be in the arena's memory.
    pub fn region_memory(&self, region: u32) -> MemoryKind {
        match region {
            0 => self.constants,
            2 => self.cache,
            _ => self.arena,
        }
    }
}
