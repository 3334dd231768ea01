//! Reads Vela 5.2's `--verbose-register-command-stream` listing (format in models/README.md).
//!
//! ```text
//! Register command stream: 75 words
//!   Offset: Payload Param Code - Command                        Param, Fields
//! // Conv2D , subOps:[ ... ]
//! 0x000004: 43bce63c 0028 4024 - NPU_SET_OFM_SCALE                 40, shift = 40, dbl_rnd = 0, round_mode = ROUND_MODE_OFM_DOUBLE_SYMMETRIC, scale = 1136453180
//! 0x00000c:          0001 0105 - NPU_SET_IFM_PRECISION              1, activation_type = ACTIVATION_TYPE_SIGNED, ...
//! ```

/// One listed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedCommand {
    /// Byte offset in the stream.
    pub offset: usize,
    /// The command words as listed (header first).
    pub words: Vec<u32>,
    /// Instruction name.
    pub name: String,
    /// `field = value` pairs, values as printed.
    pub fields: Vec<(String, String)>,
}

/// One stream of the listing.
#[derive(Debug, Clone, Default)]
pub struct ListedStream {
    /// Word count from the header line.
    pub words: usize,
    /// Commands in order.
    pub commands: Vec<ListedCommand>,
}

/// Parses a whole listing file; panics with the line number on an unexpected line.
pub fn parse(text: &str) -> Vec<ListedStream> {
    let mut streams: Vec<ListedStream> = Vec::new();
    for (no, line) in text.lines().enumerate() {
        if let Some(rest) = line.strip_prefix("Register command stream: ") {
            let n = rest
                .trim_end_matches(" words")
                .parse()
                .unwrap_or_else(|_| panic!("line {}: {line}", no + 1));
            streams.push(ListedStream {
                words: n,
                commands: Vec::new(),
            });
            continue;
        }
        if !line.starts_with("0x") {
            continue;
        }
        let stream = streams
            .last_mut()
            .unwrap_or_else(|| panic!("line {}: command before any stream header", no + 1));
        stream.commands.push(
            parse_command(line).unwrap_or_else(|| panic!("line {}: cannot read {line:?}", no + 1)),
        );
    }
    streams
}

fn parse_command(line: &str) -> Option<ListedCommand> {
    let (offset, rest) = line.split_once(':')?;
    let offset = usize::from_str_radix(offset.trim_start_matches("0x"), 16).ok()?;
    let (hex, rest) = rest.split_once(" - ")?;
    let hex: Vec<&str> = hex.split_whitespace().collect();
    let words = match hex.as_slice() {
        [param, code] => vec![u32::from_str_radix(&format!("{param}{code}"), 16).ok()?],
        [payload, param, code] => vec![
            u32::from_str_radix(&format!("{param}{code}"), 16).ok()?,
            u32::from_str_radix(payload, 16).ok()?,
        ],
        _ => return None,
    };
    let rest = rest.trim();
    let (name, after) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let fields = match after.split_once(',') {
        Some((_param, fields)) => fields
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect(),
        None => Vec::new(),
    };
    Some(ListedCommand {
        offset,
        words,
        name: name.to_string(),
        fields,
    })
}
