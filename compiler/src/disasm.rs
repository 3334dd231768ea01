//! `npuc disasm`: command streams as text or JSON, as the stream's target disassembles them
//! ([`Target::disassemble`]; the Ethos-U85's through its ISA table).
//!
//! JSON contract: an object `{"version": 1, "streams": [...], "commands": [...]}`. Each stream
//! is `{"op": <ordinal of the ethos-u operator>, "origin", "accelerator" (or null), "words"}`;
//! each command `{"op": <its stream's op>, "offset": <byte offset in its stream>, "name":
//! "NPU_...", "fields": {"<field>": <unsigned integer>, ...}}` where field names are those of
//! `backend/isa/commands.csv` and each value is the unsigned integer held in that field's bit
//! range (bits \[63:32\] are the cmd1 payload word). `version` rises when a key changes meaning
//! or goes away; new keys may appear without it.

use crate::arch_interface::{DisasmCommand, Disassembly, StreamError, Target};
use crate::artifact::{Artifact, NpuStream, StreamOrigin};
use crate::payload::TargetPayload;
use crate::targets;
use serde_json::{json, Map, Value};
use std::fmt::Write;

/// A stream that does not decode; carries the text decoded before the error.
#[derive(Debug, thiserror::Error)]
#[error("{}", header.trim_start_matches("# "))]
pub struct DisasmError {
    /// The stream's header line.
    pub header: String,
    /// The error.
    pub source: StreamError,
    /// Output produced before the error (text or JSON lines).
    pub partial: String,
}

/// The header line naming a stream.
pub fn header(index: usize, s: &NpuStream) -> String {
    let mut h = match s.origin {
        StreamOrigin::EthosUOp {
            index,
            subgraph,
            operator,
        } => {
            format!("# ethos-u operator {index} (subgraph {subgraph}, operator {operator})")
        }
        StreamOrigin::File => format!("# command stream {index}"),
        StreamOrigin::Container => "# npuc container".to_string(),
    };
    if let Some(a) = s.accelerator {
        let _ = write!(h, ": {a}");
    }
    let _ = write!(h, ", {} words", s.words.len());
    h
}

fn op_index(i: usize, s: &NpuStream) -> usize {
    match s.origin {
        StreamOrigin::EthosUOp { index, .. } => index,
        StreamOrigin::File | StreamOrigin::Container => i,
    }
}

/// Disassembles one stream with the target that reads it ([`targets::reader`]).
pub fn disassemble(s: &NpuStream) -> Disassembly {
    targets::reader(s.accelerator).disassemble(&targets::artifact_payload(&s.words))
}

/// Text disassembly of every stream: a header line per stream, then one line per command.
pub fn text(artifact: &Artifact) -> Result<String, DisasmError> {
    let mut out = String::new();
    for (i, s) in artifact.streams.iter().enumerate() {
        let h = header(op_index(i, s), s);
        let _ = writeln!(out, "{h}");
        let d = disassemble(s);
        for c in &d.commands {
            let _ = writeln!(out, "{}", c.line);
        }
        if let Some(source) = d.error {
            return Err(DisasmError {
                header: h,
                source,
                partial: out,
            });
        }
    }
    Ok(out)
}

/// Text disassembly of one program `target` wrote, one line per command (no header).
pub fn payload_text(target: &dyn Target, payload: &TargetPayload) -> Result<String, StreamError> {
    let d = target.disassemble(payload);
    if let Some(e) = d.error {
        return Err(e);
    }
    let mut out = String::new();
    for c in &d.commands {
        let _ = writeln!(out, "{}", c.line);
    }
    Ok(out)
}

/// The JSON object of one command.
pub fn command_json(op: usize, c: &DisasmCommand) -> Value {
    let fields: Map<String, Value> = c
        .fields
        .iter()
        .map(|&(n, v)| (n.to_string(), json!(v)))
        .collect();
    json!({ "op": op, "offset": c.offset, "name": c.name, "fields": fields })
}

/// Version of the `--json` object; raised when a key changes meaning or goes away.
pub const JSON_VERSION: u32 = 1;

fn json_object(streams: Vec<Value>, commands: Vec<Value>) -> Value {
    json!({ "version": JSON_VERSION, "streams": streams, "commands": commands })
}

/// JSON disassembly of every stream: `{"version": 1, "streams": [{"op", "origin",
/// "accelerator", "words"}], "commands": [{"op", "offset", "name", "fields"}]}`.
pub fn json(artifact: &Artifact) -> Result<Value, DisasmError> {
    let mut streams = Vec::new();
    let mut all = Vec::new();
    for (i, s) in artifact.streams.iter().enumerate() {
        let op = op_index(i, s);
        let origin = match s.origin {
            StreamOrigin::EthosUOp { .. } => "ethos-u operator",
            StreamOrigin::File => "file",
            StreamOrigin::Container => "npuc container",
        };
        streams.push(json!({
            "op": op,
            "origin": origin,
            "accelerator": s.accelerator.map(|a| a.name()),
            "words": s.words.len(),
        }));
        let d = disassemble(s);
        all.extend(d.commands.iter().map(|c| command_json(op, c)));
        if let Some(source) = d.error {
            let partial =
                serde_json::to_string_pretty(&json_object(streams, all)).unwrap_or_default();
            return Err(DisasmError {
                header: header(op, s),
                source,
                partial,
            });
        }
    }
    Ok(json_object(streams, all))
}
