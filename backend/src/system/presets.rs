//! The built-in U85 system configurations and memory modes: the same names and numbers as the
//! U85 sections of the `vela.ini` shipped with Vela 5.2 (the comment of each says the peak
//! bandwidths that file states).

use super::{
    AxiPort, MemoryArea, MemoryKind, MemoryMode, SystemConfig, SystemError, AXI_PORT_BYTES,
};
use std::collections::BTreeMap;

/// npuc's (and Vela's U85) default system configuration.
pub const DEFAULT_SYSTEM_CONFIG: &str = "Ethos_U85_SYS_DRAM_Mid";
/// npuc's (and Vela's U85) default memory mode.
pub const DEFAULT_MEMORY_MODE: &str = "Dedicated_Sram_384KB";

/// Names of the built-in system configurations.
pub const SYSTEM_CONFIG_NAMES: [&str; 5] = [
    "Ethos_U85_SYS_Flash_Low",
    "Ethos_U85_SYS_Flash_High",
    "Ethos_U85_SYS_DRAM_Low",
    "Ethos_U85_SYS_DRAM_Mid",
    "Ethos_U85_SYS_DRAM_High",
];

/// Names of the built-in memory modes.
pub const MEMORY_MODE_NAMES: [&str; 6] = [
    "Sram_Only",
    "Shared_Sram",
    "Dedicated_Sram",
    "Dedicated_Sram_256KB",
    "Dedicated_Sram_384KB",
    "Dedicated_Sram_512KB",
];

#[allow(clippy::too_many_arguments)]
const fn area(
    clock_scale: f64,
    ports_used: u32,
    burst_length: u32,
    read_latency: u32,
    write_latency: u32,
    max_reads: u32,
    max_writes: u32,
) -> MemoryArea {
    MemoryArea {
        clock_scale,
        ports_used,
        burst_length,
        read_latency,
        write_latency,
        max_reads,
        max_writes,
    }
}

fn system(
    name: &str,
    core_clock: f64,
    axi0: (MemoryKind, MemoryArea),
    axi1: (MemoryKind, MemoryArea),
) -> SystemConfig {
    SystemConfig {
        name: name.to_string(),
        core_clock,
        axi0_port: axi0.0,
        axi1_port: axi1.0,
        axi_port_bytes: AXI_PORT_BYTES,
        memories: BTreeMap::from([axi0, axi1]),
    }
}

/// A built-in system configuration by name.
pub fn system_config(name: &str) -> Result<SystemConfig, SystemError> {
    use MemoryKind::{Dram, OffChipFlash, Sram};
    Ok(match name {
        // SRAMx2 (6.4 GB/s) and Flash (0.2 GB/s)
        "Ethos_U85_SYS_Flash_Low" => system(
            name,
            200e6,
            (Sram, area(1.0, 2, 64, 8, 8, 8, 8)),
            (OffChipFlash, area(0.0625, 1, 128, 32, 0, 2, 0)),
        ),
        // SRAMx2 (16 GB/s) and Flash (0.5 GB/s)
        "Ethos_U85_SYS_Flash_High" => system(
            name,
            500e6,
            (Sram, area(1.0, 2, 64, 32, 32, 8, 8)),
            (OffChipFlash, area(0.0625, 1, 128, 64, 0, 2, 0)),
        ),
        // SRAMx2 (16 GB/s) and DRAMx1 (3.75 GB/s)
        "Ethos_U85_SYS_DRAM_Low" => system(
            name,
            500e6,
            (Sram, area(1.0, 2, 64, 16, 16, 8, 8)),
            (Dram, area(0.46875, 1, 128, 500, 250, 24, 12)),
        ),
        // SRAMx2 (32 GB/s) and DRAM (12 GB/s)
        "Ethos_U85_SYS_DRAM_Mid" => system(
            name,
            1e9,
            (Sram, area(1.0, 2, 64, 32, 32, 8, 8)),
            (Dram, area(0.75, 1, 128, 500, 250, 64, 32)),
        ),
        // SRAMx4 (64 GB/s) and DRAMx2 (24 GB/s)
        "Ethos_U85_SYS_DRAM_High" => system(
            name,
            1e9,
            (Sram, area(1.0, 4, 64, 32, 32, 8, 8)),
            (Dram, area(0.75, 2, 128, 500, 250, 64, 32)),
        ),
        _ => {
            return Err(SystemError::UnknownSystemConfig {
                name: name.to_string(),
                valid: SYSTEM_CONFIG_NAMES.iter().map(|s| s.to_string()).collect(),
            })
        }
    })
}

/// A built-in memory mode by name.
pub fn memory_mode(name: &str) -> Result<MemoryMode, SystemError> {
    use AxiPort::{Axi0, Axi1};
    let mode = |c, a, k, size| MemoryMode {
        name: name.to_string(),
        const_mem_area: c,
        arena_mem_area: a,
        cache_mem_area: k,
        arena_cache_size: size,
    };
    Ok(match name {
        "Sram_Only" => mode(Axi0, Axi0, Axi0, None),
        "Shared_Sram" => mode(Axi1, Axi0, Axi0, None),
        "Dedicated_Sram" => mode(Axi1, Axi1, Axi0, None),
        "Dedicated_Sram_256KB" => mode(Axi1, Axi1, Axi0, Some(262_144)),
        "Dedicated_Sram_384KB" => mode(Axi1, Axi1, Axi0, Some(393_216)),
        "Dedicated_Sram_512KB" => mode(Axi1, Axi1, Axi0, Some(524_288)),
        _ => {
            return Err(SystemError::UnknownMemoryMode {
                name: name.to_string(),
                valid: MEMORY_MODE_NAMES.iter().map(|s| s.to_string()).collect(),
            })
        }
    })
}
