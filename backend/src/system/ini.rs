//! A parser for Vela's configuration files (`vela.ini`, `--config FILE.ini`).
//!
//! The format (Python `configparser` conventions, as Vela reads it):
//! - `[Section]` headers; the sections npuc reads are `[System_Config.NAME]` and
//!   `[Memory_Mode.NAME]`, others are ignored;
//! - `key=value` or `key: value` lines, blanks around both trimmed; keys are case-insensitive;
//! - whole-line comments starting with `;` or `#`, and blank lines;
//! - `inherit=Section.Name` takes every key the section does not set itself from that section
//!   (recursively).
//!
//! npuc is stricter than `configparser` where a mistake would otherwise be silent: a duplicate
//! section or key, an indented continuation line, an unknown key in a system configuration or
//! memory mode, an `inherit` cycle and a value of the wrong type are errors that name the file,
//! the line and the key.

use super::{presets, AxiPort, MemoryArea, MemoryKind, MemoryMode, SystemConfig, AXI_PORT_BYTES};
use std::collections::{BTreeMap, BTreeSet};

/// The smallest `arena_cache_size` accepted: one 16-byte unit, the alignment every feature
/// map and staging buffer is placed at (decision H1 in `docs/decisions.md`).
pub const MIN_ARENA_CACHE_SIZE: u64 = 16;

/// A mistake in a configuration file, or a name it does not define.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {}{message}", key.as_ref().map(|k| format!("key `{k}`: ")).unwrap_or_default())]
pub struct IniError {
    /// The file.
    pub file: String,
    /// 1-based line (0 when the error is about the file as a whole).
    pub line: usize,
    /// The key concerned, if any.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

#[derive(Debug, Clone)]
struct Entry {
    key: String,
    value: String,
    line: usize,
}

#[derive(Debug, Clone)]
struct Section {
    name: String,
    line: usize,
    entries: Vec<Entry>,
}

/// A parsed configuration file.
#[derive(Debug, Clone)]
pub struct IniFile {
    file: String,
    sections: Vec<Section>,
}

const SYSTEM_PREFIX: &str = "System_Config.";
const MODE_PREFIX: &str = "Memory_Mode.";
const MEMORY_SUFFIXES: [&str; 7] = [
    "clock_scale",
    "ports_used",
    "burst_length",
    "read_latency",
    "write_latency",
    "max_reads",
    "max_writes",
];

impl IniFile {
    /// Reads and parses a file.
    pub fn read(path: &std::path::Path) -> Result<IniFile, IniError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| IniError {
            file: file.clone(),
            line: 0,
            key: None,
            message: e.to_string(),
        })?;
        IniFile::parse(&file, &text)
    }

    /// Parses the text of a file; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<IniFile, IniError> {
        let err = |line: usize, key: Option<&str>, message: String| IniError {
            file: file.to_string(),
            line,
            key: key.map(str::to_string),
            message,
        };
        let mut sections: Vec<Section> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with(';') || trimmed.starts_with('#') {
                continue;
            }
            if raw.starts_with([' ', '\t']) {
                return Err(err(
                    line,
                    None,
                    "indented line (multi-line values are not supported)".into(),
                ));
            }
            if let Some(rest) = trimmed.strip_prefix('[') {
                let Some(name) = rest.strip_suffix(']') else {
                    return Err(err(
                        line,
                        None,
                        format!("section header without `]`: {trimmed}"),
                    ));
                };
                let name = name.trim().to_string();
                if let Some(prev) = sections.iter().find(|s| s.name == name) {
                    return Err(err(
                        line,
                        None,
                        format!("section [{name}] already defined at line {}", prev.line),
                    ));
                }
                sections.push(Section {
                    name,
                    line,
                    entries: Vec::new(),
                });
                continue;
            }
            let Some(pos) = trimmed.find(['=', ':']) else {
                return Err(err(
                    line,
                    None,
                    format!("expected `key=value`, found {trimmed:?}"),
                ));
            };
            let key = trimmed[..pos].trim().to_ascii_lowercase();
            let value = trimmed[pos + 1..].trim().to_string();
            if key.is_empty() {
                return Err(err(line, None, "empty key".into()));
            }
            let Some(section) = sections.last_mut() else {
                return Err(err(line, Some(&key), "key before any [section]".into()));
            };
            if let Some(prev) = section.entries.iter().find(|e| e.key == key) {
                return Err(err(
                    line,
                    Some(&key),
                    format!("already set at line {} in [{}]", prev.line, section.name),
                ));
            }
            section.entries.push(Entry { key, value, line });
        }
        let ini = IniFile {
            file: file.to_string(),
            sections,
        };
        ini.check()?;
        Ok(ini)
    }

    /// Names of the system configurations the file defines (without the prefix), in file order.
    pub fn system_config_names(&self) -> Vec<String> {
        self.names(SYSTEM_PREFIX)
    }

    /// Names of the memory modes the file defines (without the prefix), in file order.
    pub fn memory_mode_names(&self) -> Vec<String> {
        self.names(MODE_PREFIX)
    }

    fn names(&self, prefix: &str) -> Vec<String> {
        self.sections
            .iter()
            .filter_map(|s| s.name.strip_prefix(prefix).map(str::to_string))
            .collect()
    }

    fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    fn error(&self, line: usize, key: Option<&str>, message: String) -> IniError {
        IniError {
            file: self.file.clone(),
            line,
            key: key.map(str::to_string),
            message,
        }
    }

    /// Checks keys and `inherit` chains of every System_Config / Memory_Mode section.
    fn check(&self) -> Result<(), IniError> {
        for s in &self.sections {
            let is_system = s.name.starts_with(SYSTEM_PREFIX);
            let is_mode = s.name.starts_with(MODE_PREFIX);
            if !is_system && !is_mode {
                continue;
            }
            for e in &s.entries {
                if !known_key(&e.key, is_system) {
                    return Err(self.error(
                        e.line,
                        Some(&e.key),
                        format!("unknown key in [{}]", s.name),
                    ));
                }
            }
            self.chain(s)?;
        }
        Ok(())
    }

    /// The section and its ancestors, nearest first.
    fn chain<'a>(&'a self, start: &'a Section) -> Result<Vec<&'a Section>, IniError> {
        let mut chain = vec![start];
        let mut seen = BTreeSet::from([start.name.as_str()]);
        let mut cur = start;
        while let Some(e) = cur.entries.iter().find(|e| e.key == "inherit") {
            let Some(parent) = self.section(&e.value) else {
                return Err(self.error(
                    e.line,
                    Some("inherit"),
                    format!("refers to a section [{}] the file does not have", e.value),
                ));
            };
            if !seen.insert(parent.name.as_str()) {
                return Err(self.error(
                    e.line,
                    Some("inherit"),
                    format!("inheritance cycle through [{}]", parent.name),
                ));
            }
            chain.push(parent);
            cur = parent;
        }
        Ok(chain)
    }

    /// The value of a key in a section or its ancestors, with the line that set it.
    fn lookup<'a>(&'a self, chain: &[&'a Section], key: &str) -> Option<&'a Entry> {
        chain
            .iter()
            .find_map(|s| s.entries.iter().find(|e| e.key == key))
    }

    /// The system configuration `[System_Config.NAME]`, or `None` if the file lacks it.
    /// Keys it does not set have Vela's defaults (clock 1 Hz, both ports SRAM, memory defaults
    /// of [`MemoryArea::default`]).
    pub fn system_config(&self, name: &str) -> Option<Result<SystemConfig, IniError>> {
        let section = self.section(&format!("{SYSTEM_PREFIX}{name}"))?;
        Some(self.build_system(name, section))
    }

    fn build_system(&self, name: &str, section: &Section) -> Result<SystemConfig, IniError> {
        let chain = self.chain(section)?;
        let core_clock = match self.lookup(&chain, "core_clock") {
            Some(e) => self.positive(e)?,
            None => 1.0,
        };
        let port = |key: &str| -> Result<MemoryKind, IniError> {
            match self.lookup(&chain, key) {
                None => Ok(MemoryKind::Sram),
                Some(e) => MemoryKind::from_name(&e.value).ok_or_else(|| {
                    self.error(
                        e.line,
                        Some(key),
                        format!(
                            "{:?} is not a memory (Sram, Dram, OnChipFlash, OffChipFlash)",
                            e.value
                        ),
                    )
                }),
            }
        };
        let axi0_port = port("axi0_port")?;
        let axi1_port = port("axi1_port")?;
        let mut memories = BTreeMap::new();
        for kind in [axi0_port, axi1_port] {
            let mut a = MemoryArea::default();
            let prefix = kind.name().to_ascii_lowercase();
            for suffix in MEMORY_SUFFIXES {
                let Some(e) = self.lookup(&chain, &format!("{prefix}_{suffix}")) else {
                    continue;
                };
                match suffix {
                    "clock_scale" => a.clock_scale = self.positive(e)?,
                    "ports_used" => a.ports_used = self.number::<u32>(e)?.max(1),
                    "burst_length" => {
                        a.burst_length = self.number(e)?;
                        if a.burst_length == 0 {
                            return Err(self.error(
                                e.line,
                                Some(&e.key),
                                "a burst length must be at least 1 byte".into(),
                            ));
                        }
                    }
                    "read_latency" => a.read_latency = self.number(e)?,
                    "write_latency" => a.write_latency = self.number(e)?,
                    "max_reads" => a.max_reads = self.number(e)?,
                    _ => a.max_writes = self.number(e)?,
                }
            }
            memories.insert(kind, a);
        }
        Ok(SystemConfig {
            name: name.to_string(),
            core_clock,
            axi0_port,
            axi1_port,
            axi_port_bytes: AXI_PORT_BYTES,
            memories,
        })
    }

    /// The memory mode `[Memory_Mode.NAME]`, or `None` if the file lacks it. Keys it does not
    /// set default to `Axi0` and the whole memory.
    pub fn memory_mode(&self, name: &str) -> Option<Result<MemoryMode, IniError>> {
        let section = self.section(&format!("{MODE_PREFIX}{name}"))?;
        Some(self.build_mode(name, section))
    }

    fn build_mode(&self, name: &str, section: &Section) -> Result<MemoryMode, IniError> {
        let chain = self.chain(section)?;
        let port = |key: &str| -> Result<AxiPort, IniError> {
            match self.lookup(&chain, key) {
                None => Ok(AxiPort::Axi0),
                Some(e) => AxiPort::from_name(&e.value).ok_or_else(|| {
                    self.error(
                        e.line,
                        Some(key),
                        format!("{:?} is not an AXI port (Axi0, Axi1)", e.value),
                    )
                }),
            }
        };
        let arena_cache_size = match self.lookup(&chain, "arena_cache_size") {
            Some(e) => {
                let size = self.number::<u64>(e)?;
                if size < MIN_ARENA_CACHE_SIZE {
                    return Err(self.error(
                        e.line,
                        Some(&e.key),
                        format!(
                            "{size} bytes is below the minimum arena cache of {MIN_ARENA_CACHE_SIZE} bytes"
                        ),
                    ));
                }
                Some(size)
            }
            None => None,
        };
        Ok(MemoryMode {
            name: name.to_string(),
            const_mem_area: port("const_mem_area")?,
            arena_mem_area: port("arena_mem_area")?,
            cache_mem_area: port("cache_mem_area")?,
            arena_cache_size,
        })
    }

    /// A finite number above 0 (a clock or a clock scale: 0, negative, NaN or infinite values
    /// would make every time estimate infinite, NaN or saturate).
    fn positive(&self, e: &Entry) -> Result<f64, IniError> {
        let v: f64 = self.number(e)?;
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(self.error(
                e.line,
                Some(&e.key),
                format!("{:?} must be a finite positive number", e.value),
            ))
        }
    }

    fn number<T: std::str::FromStr>(&self, e: &Entry) -> Result<T, IniError> {
        e.value.parse().map_err(|_| {
            self.error(
                e.line,
                Some(&e.key),
                format!("{:?} is not a valid {}", e.value, kind_of::<T>()),
            )
        })
    }
}

fn kind_of<T>() -> &'static str {
    let name = std::any::type_name::<T>();
    if name.starts_with('f') {
        "number"
    } else {
        "non-negative integer"
    }
}

fn known_key(key: &str, system: bool) -> bool {
    if key == "inherit" {
        return true;
    }
    if !system {
        return matches!(
            key,
            "const_mem_area" | "arena_mem_area" | "cache_mem_area" | "arena_cache_size"
        );
    }
    if matches!(key, "core_clock" | "axi0_port" | "axi1_port") {
        return true;
    }
    MemoryKind::ALL.iter().any(|k| {
        key.strip_prefix(&k.name().to_ascii_lowercase())
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(|suffix| MEMORY_SUFFIXES.contains(&suffix))
    })
}

/// Where to find configurations: an optional `--config` file, then the built-in presets.
#[derive(Debug, Clone, Default)]
pub struct ConfigSource {
    /// The `--config` file, if any; its sections take precedence over the presets.
    pub file: Option<IniFile>,
}

/// A name the file and the presets do not define, or an error in the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// The file is wrong.
    #[error(transparent)]
    Ini(#[from] IniError),
    /// The name is unknown.
    #[error(transparent)]
    Unknown(#[from] super::SystemError),
}

impl ConfigSource {
    /// A system configuration by name: the file's section if it has one, else the preset.
    pub fn system_config(&self, name: &str) -> Result<SystemConfig, LookupError> {
        if let Some(found) = self.file.as_ref().and_then(|f| f.system_config(name)) {
            return Ok(found?);
        }
        presets::system_config(name).map_err(|e| match e {
            super::SystemError::UnknownSystemConfig { name, mut valid } => {
                if let Some(f) = &self.file {
                    valid.extend(f.system_config_names());
                }
                LookupError::Unknown(super::SystemError::UnknownSystemConfig { name, valid })
            }
            other => other.into(),
        })
    }

    /// A memory mode by name: the file's section if it has one, else the preset.
    pub fn memory_mode(&self, name: &str) -> Result<MemoryMode, LookupError> {
        if let Some(found) = self.file.as_ref().and_then(|f| f.memory_mode(name)) {
            return Ok(found?);
        }
        presets::memory_mode(name).map_err(|e| match e {
            super::SystemError::UnknownMemoryMode { name, mut valid } => {
                if let Some(f) = &self.file {
                    valid.extend(f.memory_mode_names());
                }
                LookupError::Unknown(super::SystemError::UnknownMemoryMode { name, valid })
            }
            other => other.into(),
        })
    }
}
