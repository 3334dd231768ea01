//! `npuc disasm` agrees with Vela's own listing, command by command and field by field, on
//! every committed Vela-compiled fixture (models/vela/*/*_vela.tflite with its .cmd.txt).

mod common;

use npuc::artifact::Artifact;
use npuc_backend::isa::stream::{DecodeError, StreamDecoder};
use npuc_backend::isa::{disasm::joined_value, Decoded, FieldKind, FieldSpec};

/// Decodes one stream fully with the U85's decoder (the ISA table under test).
fn decode(s: &npuc::artifact::NpuStream) -> Result<Vec<Decoded>, DecodeError> {
    StreamDecoder::new(&s.words).collect()
}

/// What Vela prints for one of our fields (its enum spelling, joined addresses, signed values).
fn vela_spelling(d: &npuc_backend::isa::Decoded, listed_field: &str) -> Option<String> {
    let spec = d.opcode().spec();
    if listed_field == "addr" {
        return joined_value(spec, d.raw).map(|v| format!("{v:#x}"));
    }
    let f: &FieldSpec = spec.field(listed_field)?;
    Some(match f.kind {
        FieldKind::Enum(id) => {
            let e = id.spec();
            let ty = e.name.trim_end_matches("_t").to_ascii_uppercase();
            format!("{ty}_{}", e.name_of(f.extract(d.raw))?.to_ascii_uppercase())
        }
        _ => f.extract(d.raw).to_string(),
    })
}

/// Whether Vela's printed value equals our field: Vela prints some signed fields
/// sign-extended (resize offsets) and others as raw bits (the scalar), so for signed fields
/// the bits are compared.
fn same_value(d: &npuc_backend::isa::Decoded, field: &str, ours: &str, listed: &str) -> bool {
    if ours == listed {
        return true;
    }
    let spec = d.opcode().spec();
    match spec.field(field) {
        Some(f) if f.kind == FieldKind::Signed => listed
            .parse::<i64>()
            .is_ok_and(|v| (v as u64) & f.value_mask() == f.extract(d.raw)),
        _ => false,
    }
}

/// Vela 5.2's listing prints a negative `NPU_SET_OP_SCALAR.scalar` as 2^32 + v - 1, one less
/// than the bits it encodes (e.g. word c3c3c3c4 listed as 3284386755). The listed words are
/// compared separately and are authoritative; this recognises exactly that misprint
/// (docs/decisions.md, "Vela listing quirks").
fn vela_scalar_misprint(d: &npuc_backend::isa::Decoded, field: &str, listed: &str) -> bool {
    let spec = d.opcode().spec();
    let Some(f) = spec.field(field) else {
        return false;
    };
    spec.name == "NPU_SET_OP_SCALAR"
        && f.value(d.raw) < 0
        && listed.parse::<u64>() == Ok(f.extract(d.raw) - 1)
}

#[test]
fn disassembly_matches_vela_listing_on_every_fixture() {
    let fixtures = common::vela_artifacts();
    assert!(
        fixtures.len() >= 20,
        "expected the committed Vela fixtures, found {}",
        fixtures.len()
    );
    let mut commands = 0;
    let mut fields = 0;
    let mut compared_files = 0;
    let mut misprints = 0;
    for (config, name, path) in &fixtures {
        let listing_path = path.with_file_name(format!("{name}.cmd.txt"));
        let Ok(listing) = std::fs::read_to_string(&listing_path) else {
            continue;
        };
        compared_files += 1;
        let listed = common::vela_listing::parse(&listing);
        let Some(artifact) = common::read_vela_artifact(config, name, path) else {
            assert!(
                listed.is_empty(),
                "{config}/{name}: Vela lists streams but the model has no ethos-u operator"
            );
            continue;
        };
        assert_eq!(
            artifact.streams.len(),
            listed.len(),
            "{config}/{name}: number of NPU operators"
        );
        for (k, (stream, listed)) in artifact.streams.iter().zip(&listed).enumerate() {
            let at = format!("{config}/{name} stream {k}");
            assert_eq!(stream.words.len(), listed.words, "{at}: word count");
            let decoded = decode(stream).unwrap_or_else(|e| panic!("{at}: {e}"));
            assert_eq!(decoded.len(), listed.commands.len(), "{at}: command count");
            for (d, l) in decoded.iter().zip(&listed.commands) {
                let here = format!("{at} offset {:#x}", l.offset);
                assert_eq!(d.offset, l.offset, "{here}");
                assert_eq!(d.opcode().spec().name, l.name, "{here}");
                let ours: Vec<u32> =
                    stream.words[d.offset / 4..d.offset / 4 + l.words.len()].to_vec();
                assert_eq!(ours, l.words, "{here}: words");
                for (field, value) in &l.fields {
                    let mine = vela_spelling(d, field)
                        .unwrap_or_else(|| panic!("{here}: no field {field}"));
                    if vela_scalar_misprint(d, field, value) {
                        misprints += 1;
                        continue;
                    }
                    assert!(
                        same_value(d, field, &mine, value),
                        "{here}: {} field {field}: ours {mine}, Vela {value}",
                        l.name
                    );
                    fields += 1;
                }
                commands += 1;
            }
        }
    }
    assert!(
        compared_files >= 20,
        "only {compared_files} listings compared"
    );
    eprintln!("compared {commands} commands and {fields} fields in {compared_files} listings ({misprints} known Vela misprints)");
}

#[test]
fn every_fixture_decodes_with_no_unknown_word() {
    for (config, name, path) in common::vela_artifacts() {
        let Some(artifact) = common::read_vela_artifact(&config, &name, &path) else {
            continue;
        };
        for s in &artifact.streams {
            decode(s).unwrap_or_else(|e| panic!("{config}/{name}: {e}"));
            let expected = match config.as_str() {
                c if c.starts_with("u85_2048") => "ethos-u85-2048",
                _ => "ethos-u85-256",
            };
            assert_eq!(
                s.accelerator.map(|a| a.name()),
                Some(expected),
                "{config}/{name}"
            );
        }
    }
}

#[test]
fn json_fields_are_the_raw_bit_ranges() {
    let path = common::models_dir().join("vela/u85_256/conv2d_3x3_relu_vela.tflite");
    let artifact = Artifact::read(&path).unwrap();
    let json = npuc::disasm::json(&artifact).unwrap();
    assert_eq!(json["version"], npuc::disasm::JSON_VERSION);
    let all = json["commands"].as_array().unwrap();
    let words: usize = all
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap();
            let spec = npuc_backend::isa::COMMANDS
                .iter()
                .find(|s| s.name == name)
                .unwrap();
            assert_eq!(c["op"], 0);
            assert_eq!(c["fields"].as_object().unwrap().len(), spec.fields.len());
            spec.kind.words()
        })
        .sum();
    assert_eq!(words, artifact.streams[0].words.len());
    let ifm_base = all
        .iter()
        .find(|c| c["name"] == "NPU_SET_IFM_BASE0")
        .unwrap();
    assert!(ifm_base["fields"]["addr_hi"].is_u64() && ifm_base["fields"]["addr_lo"].is_u64());
}

#[test]
fn snapshot_of_one_disassembly() {
    let path = common::models_dir().join("vela/u85_256/conv2d_3x3_relu_vela.tflite");
    let text = npuc::disasm::text(&Artifact::read(&path).unwrap()).unwrap();
    insta::assert_snapshot!("conv2d_3x3_relu_u85_256", text);
}
