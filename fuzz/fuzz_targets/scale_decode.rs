//! Arbitrary bytes as a scale and bias stream (TRM §3.7): decoding never
//! panics, and whatever decodes re-encodes to the same bytes. The first byte
//! selects the accumulator format, microblock depth and channel reverse, the
//! second the OFM depth; the rest is the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use npuc_codecs::scale::{decode_scale_stream, encode_scale_stream, AccFormat, ScaleStreamParams};

fuzz_target!(|data: &[u8]| {
    let (sel, depth, stream) = match data {
        [a, b, rest @ ..] => (*a, usize::from(*b), rest),
        _ => return,
    };
    let params = ScaleStreamParams {
        acc: if sel & 1 == 0 { AccFormat::I32 } else { AccFormat::I48 },
        microblock_depth: [8, 16, 32, 64, 128, 24, 0, 256][usize::from((sel >> 1) & 7)],
        reverse_c: sel & 16 != 0,
    };
    if let Ok(records) = decode_scale_stream(stream, depth, &params) {
        assert_eq!(records.len(), depth);
        assert_eq!(encode_scale_stream(&records, &params).unwrap(), stream);
    }
});
