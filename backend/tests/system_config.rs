//! System configurations and memory modes: the built-in presets are Vela 5.2's U85 sections,
//! the `.ini` parser reads Vela's format and names file, line and key in its errors.

use npuc_backend::system::ini::{ConfigSource, IniFile, LookupError};
use npuc_backend::system::presets::{self, MEMORY_MODE_NAMES, SYSTEM_CONFIG_NAMES};
use npuc_backend::system::{AxiPort, MemoryKind, MemoryMap, SystemError};

const VELA_U85_INI: &str = include_str!("system_vela_u85.ini");

fn vela_ini() -> IniFile {
    IniFile::parse("vela_u85.ini", VELA_U85_INI).expect("Vela's file parses")
}

#[test]
fn every_preset_equals_the_section_of_velas_file() {
    let ini = vela_ini();
    assert_eq!(ini.system_config_names(), SYSTEM_CONFIG_NAMES);
    assert_eq!(ini.memory_mode_names(), MEMORY_MODE_NAMES);
    for name in SYSTEM_CONFIG_NAMES {
        let parsed = ini.system_config(name).unwrap().unwrap();
        assert_eq!(parsed, presets::system_config(name).unwrap(), "{name}");
    }
    for name in MEMORY_MODE_NAMES {
        let parsed = ini.memory_mode(name).unwrap().unwrap();
        assert_eq!(parsed, presets::memory_mode(name).unwrap(), "{name}");
    }
}

#[test]
fn dram_mid_preset_values() {
    let s = presets::system_config("Ethos_U85_SYS_DRAM_Mid").unwrap();
    assert_eq!(s.core_clock, 1e9);
    assert_eq!(
        (s.axi0_port, s.axi1_port),
        (MemoryKind::Sram, MemoryKind::Dram)
    );
    let sram = s.area(MemoryKind::Sram);
    assert_eq!(
        (sram.ports_used, sram.burst_length, sram.read_latency),
        (2, 64, 32)
    );
    let dram = s.area(MemoryKind::Dram);
    assert_eq!(dram.clock_scale, 0.75);
    assert_eq!((dram.read_latency, dram.write_latency), (500, 250));
    assert_eq!((dram.max_reads, dram.max_writes), (64, 32));
    // Vela's summary for this configuration: 29.80 GiB/s SRAM, 11.18 GiB/s DRAM at 1 GHz.
    assert_eq!(s.bytes_per_cycle(MemoryKind::Sram), 32.0);
    assert_eq!(s.bytes_per_cycle(MemoryKind::Dram), 12.0);
}

#[test]
fn flash_low_and_dram_high_preset_values() {
    let f = presets::system_config("Ethos_U85_SYS_Flash_Low").unwrap();
    assert_eq!(f.core_clock, 200e6);
    assert_eq!(f.axi1_port, MemoryKind::OffChipFlash);
    assert_eq!(f.area(MemoryKind::OffChipFlash).clock_scale, 0.0625);
    assert_eq!(f.area(MemoryKind::OffChipFlash).read_latency, 32);
    let h = presets::system_config("Ethos_U85_SYS_DRAM_High").unwrap();
    assert_eq!(h.area(MemoryKind::Sram).ports_used, 4);
    assert_eq!(h.area(MemoryKind::Dram).ports_used, 2);
    assert_eq!(h.bytes_per_cycle(MemoryKind::Sram), 64.0);
}

#[test]
fn default_is_dram_mid_with_dedicated_sram_384kb() {
    let m = MemoryMap::default_u85();
    assert_eq!(m.system.name, "Ethos_U85_SYS_DRAM_Mid");
    assert_eq!(m.mode.name, "Dedicated_Sram_384KB");
    assert_eq!(m.mode.arena_cache_size, Some(384 * 1024));
    assert_eq!(
        (m.region_memory(0), m.region_memory(1), m.region_memory(2)),
        (MemoryKind::Dram, MemoryKind::Dram, MemoryKind::Sram)
    );
}

#[test]
fn sram_only_keeps_constants_in_on_chip_flash_with_sram_characteristics() {
    let sys = presets::system_config("Ethos_U85_SYS_Flash_High").unwrap();
    let mode = presets::memory_mode("Sram_Only").unwrap();
    let m = MemoryMap::new(&sys, &mode).unwrap();
    assert_eq!(m.constants, MemoryKind::OnChipFlash);
    assert_eq!((m.arena, m.cache), (MemoryKind::Sram, MemoryKind::Sram));
    assert_eq!(m.system.axi1_port, MemoryKind::OnChipFlash);
    assert_eq!(
        m.system.area(MemoryKind::OnChipFlash),
        sys.area(MemoryKind::Sram)
    );
}

#[test]
fn shared_sram_puts_the_arena_in_sram_and_constants_in_flash() {
    let sys = presets::system_config("Ethos_U85_SYS_Flash_Low").unwrap();
    let m = MemoryMap::new(&sys, &presets::memory_mode("Shared_Sram").unwrap()).unwrap();
    assert_eq!(
        (m.constants, m.arena, m.cache),
        (MemoryKind::OffChipFlash, MemoryKind::Sram, MemoryKind::Sram)
    );
}

#[test]
fn an_arena_in_flash_is_refused() {
    let sys = presets::system_config("Ethos_U85_SYS_Flash_High").unwrap();
    let err = MemoryMap::new(&sys, &presets::memory_mode("Dedicated_Sram").unwrap()).unwrap_err();
    assert!(matches!(
        err,
        SystemError::BadPlacement {
            area: "arena",
            memory: MemoryKind::OffChipFlash,
            ..
        }
    ));
}

#[test]
fn unknown_names_list_the_valid_ones() {
    let e = presets::system_config("Ethos_U85_SYS_DRAM_Huge").unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("Ethos_U85_SYS_DRAM_Huge"), "{msg}");
    for name in SYSTEM_CONFIG_NAMES {
        assert!(msg.contains(name), "{msg}");
    }
    let e = presets::memory_mode("Dedicated_Sram_1MB")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Dedicated_Sram_384KB") && e.contains("Sram_Only"),
        "{e}"
    );
}

#[test]
fn inherit_takes_keys_the_section_does_not_set_and_comments_are_skipped() {
    let text = "\
# a comment
[Memory_Mode.Base]
const_mem_area = Axi1
arena_mem_area: Axi1
cache_mem_area=Axi0
arena_cache_size=1000

; another comment
[Memory_Mode.Child]
inherit=Memory_Mode.Base
ARENA_CACHE_SIZE=2000

[Memory_Mode.GrandChild]
inherit=Memory_Mode.Child
const_mem_area=Axi0

[Unrelated.Section]
anything=goes
";
    let ini = IniFile::parse("t.ini", text).unwrap();
    let c = ini.memory_mode("Child").unwrap().unwrap();
    assert_eq!(c.arena_cache_size, Some(2000));
    assert_eq!(c.const_mem_area, AxiPort::Axi1);
    let g = ini.memory_mode("GrandChild").unwrap().unwrap();
    assert_eq!(g.const_mem_area, AxiPort::Axi0);
    assert_eq!(g.arena_mem_area, AxiPort::Axi1);
    assert_eq!(g.arena_cache_size, Some(2000));
}

fn parse_err(text: &str) -> String {
    IniFile::parse("bad.ini", text).unwrap_err().to_string()
}

#[test]
fn errors_name_file_line_and_key() {
    let e = parse_err("[System_Config.X]\ncore_clock=1e9\nSram_burst_lenght=64\n");
    assert_eq!(
        e,
        "bad.ini:3: key `sram_burst_lenght`: unknown key in [System_Config.X]"
    );
    let e = parse_err("[System_Config.X]\ncore_clock=1e9\ncore_clock=2e9\n");
    assert!(
        e.starts_with("bad.ini:3: key `core_clock`: already set at line 2"),
        "{e}"
    );
    let e = parse_err(
        "[Memory_Mode.A]\ninherit=Memory_Mode.B\n[Memory_Mode.B]\ninherit=Memory_Mode.A\n",
    );
    assert!(e.contains("key `inherit`: inheritance cycle"), "{e}");
    let e = parse_err("[Memory_Mode.A]\ninherit=Memory_Mode.Missing\n");
    assert!(
        e.starts_with("bad.ini:2: key `inherit`: refers to a section"),
        "{e}"
    );
    let e = parse_err("core_clock=1\n");
    assert!(
        e.starts_with("bad.ini:1: key `core_clock`: key before any"),
        "{e}"
    );
    let e = parse_err("[A]\n[A]\n");
    assert!(
        e.starts_with("bad.ini:2: section [A] already defined at line 1"),
        "{e}"
    );
    let e = parse_err("[A\n");
    assert!(e.starts_with("bad.ini:1: section header"), "{e}");
}

#[test]
fn bad_values_name_the_line_that_set_them() {
    let ini = IniFile::parse(
        "v.ini",
        "[System_Config.X]\naxi0_port=Sram\nSram_ports_used=two\n[System_Config.Y]\naxi1_port=Tape\n[Memory_Mode.Z]\nconst_mem_area=Axi2\n",
    )
    .unwrap();
    let e = ini.system_config("X").unwrap().unwrap_err().to_string();
    assert_eq!(
        e,
        "v.ini:3: key `sram_ports_used`: \"two\" is not a valid non-negative integer"
    );
    let e = ini.system_config("Y").unwrap().unwrap_err().to_string();
    assert!(
        e.starts_with("v.ini:5: key `axi1_port`: \"Tape\" is not a memory"),
        "{e}"
    );
    let e = ini.memory_mode("Z").unwrap().unwrap_err().to_string();
    assert!(e.starts_with("v.ini:7: key `const_mem_area`"), "{e}");
}

#[test]
fn a_config_file_adds_to_the_presets() {
    let text = "[System_Config.Mine]\ncore_clock=250e6\naxi0_port=Sram\naxi1_port=Dram\nDram_clock_scale=0.5\n";
    let src = ConfigSource {
        file: Some(IniFile::parse("mine.ini", text).unwrap()),
    };
    let mine = src.system_config("Mine").unwrap();
    assert_eq!(mine.core_clock, 250e6);
    assert_eq!(mine.area(MemoryKind::Dram).clock_scale, 0.5);
    assert_eq!(mine.area(MemoryKind::Sram).ports_used, 1);
    assert!(src.system_config("Ethos_U85_SYS_DRAM_Low").is_ok());
    assert!(src.memory_mode("Sram_Only").is_ok());
    let Err(LookupError::Unknown(e)) = src.system_config("Yours") else {
        panic!()
    };
    let msg = e.to_string();
    assert!(
        msg.contains("Mine") && msg.contains("Ethos_U85_SYS_DRAM_Mid"),
        "{msg}"
    );
}

/// Values that would give an infinite, NaN or u64::MAX estimate, or an arena cache that can
/// hold nothing, are refused with the line and key that set them (decision H1).
#[test]
fn out_of_range_values_are_refused() {
    let sys = |kv: &str| {
        let text = format!("[System_Config.X]\naxi0_port=Sram\naxi1_port=Dram\n{kv}\n");
        let ini = IniFile::parse("r.ini", &text).unwrap();
        ini.system_config("X")
            .unwrap()
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    for bad in ["0", "-1", "NaN", "inf", "-0"] {
        let e = sys(&format!("core_clock={bad}")).unwrap_err();
        assert!(
            e.starts_with("r.ini:4: key `core_clock`: ") && e.contains("positive"),
            "{bad}: {e}"
        );
    }
    for bad in ["0", "-0.5", "NaN", "inf"] {
        let e = sys(&format!("Dram_clock_scale={bad}")).unwrap_err();
        assert!(
            e.starts_with("r.ini:4: key `dram_clock_scale`: "),
            "{bad}: {e}"
        );
    }
    let e = sys("Sram_burst_length=0").unwrap_err();
    assert!(e.starts_with("r.ini:4: key `sram_burst_length`: "), "{e}");
    assert!(sys("core_clock=1e6\nDram_clock_scale=0.25\nSram_burst_length=1").is_ok());

    let mode = |v: &str| {
        let text = format!("[Memory_Mode.M]\narena_cache_size={v}\n");
        let ini = IniFile::parse("m.ini", &text).unwrap();
        ini.memory_mode("M")
            .unwrap()
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    for bad in ["0", "1", "15"] {
        let e = mode(bad).unwrap_err();
        assert!(
            e.starts_with("m.ini:2: key `arena_cache_size`: ") && e.contains("16"),
            "{bad}: {e}"
        );
    }
    assert!(mode("16").is_ok());
    assert!(mode("393216").is_ok());
}
