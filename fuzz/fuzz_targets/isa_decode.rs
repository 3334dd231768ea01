//! Arbitrary bytes as a command stream: decoding never panics, and whatever decodes re-encodes to
//! the same words.
#![no_main]

use libfuzzer_sys::fuzz_target;
use npuc_backend::isa::{decode_stream, encode_stream, words_from_bytes};

fuzz_target!(|data: &[u8]| {
    let usable = &data[..data.len() / 4 * 4];
    let Ok(words) = words_from_bytes(usable) else { return };
    let mut end = 0;
    for d in npuc_backend::isa::stream::StreamDecoder::new(&words) {
        let Ok(d) = d else { break };
        let _ = npuc_backend::isa::disasm::line(&d);
        end = d.offset / 4 + d.opcode().spec().kind.words();
    }
    if let Ok(cmds) = decode_stream(&words[..end]) {
        let typed: Vec<_> = cmds.iter().map(|d| d.command).collect();
        assert_eq!(encode_stream(&typed).unwrap(), words[..end]);
    }
});
