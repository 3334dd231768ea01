//! The committed ISA module is exactly what the generator makes from the committed table.

#[test]
fn committed_generated_modules_are_up_to_date() {
    let files = npuc_isa_gen::generate_all_from_repo().expect("the ISA table is consistent");
    assert_eq!(files.len(), 2, "generated.rs and the codecs' isa_fields.rs");
    for (path, expected) in files {
        let path = npuc_isa_gen::repo_root().join(path);
        let committed = std::fs::read_to_string(&path).expect("the generated file exists");
        assert!(
            committed == expected,
            "{} is stale: run `cargo run -p npuc-isa-gen`",
            path.display()
        );
    }
}

#[test]
fn table_has_all_111_instructions() {
    let root = npuc_isa_gen::repo_root();
    let commands = std::fs::read_to_string(root.join(npuc_isa_gen::COMMANDS_CSV)).unwrap();
    let enums = std::fs::read_to_string(root.join(npuc_isa_gen::ENUMS_CSV)).unwrap();
    let t = npuc_isa_gen::table::read(&commands, &enums).unwrap();
    let cmd0 = t
        .commands
        .iter()
        .filter(|c| c.kind == npuc_isa_gen::table::Kind::Cmd0)
        .count();
    let cmd1 = t
        .commands
        .iter()
        .filter(|c| c.kind == npuc_isa_gen::table::Kind::Cmd1)
        .count();
    assert_eq!((cmd0, cmd1), (63, 48));
}

#[test]
fn overlapping_fields_are_rejected() {
    let header = "name,stream,opcode_hex,header_low16_hex,opcode_source,description,payload_fields,reserved_bits,enum_values,constraints,trm_section,trm_table,trm_figure\n";
    let row = "NPU_X,cmd0,0x100,0x0100,x,desc,\"a[17:16]=unsigned integer, a; b[16]=unsigned integer, b\",[13:10] [31:18],,,1,1,1\n";
    let e = npuc_isa_gen::table::read(
        &format!("{header}{row}"),
        "enum_type,value_trm,value_dec,name,description,used_by,trm_source\n",
    )
    .unwrap_err();
    assert!(e.to_string().contains("overlaps"), "{e}");
}

#[test]
fn uncovered_bits_are_rejected() {
    let header = "name,stream,opcode_hex,header_low16_hex,opcode_source,description,payload_fields,reserved_bits,enum_values,constraints,trm_section,trm_table,trm_figure\n";
    let row =
        "NPU_X,cmd0,0x100,0x0100,x,desc,\"a[16]=unsigned integer, a\",[13:10] [31:18],,,1,1,1\n";
    let e = npuc_isa_gen::table::read(
        &format!("{header}{row}"),
        "enum_type,value_trm,value_dec,name,description,used_by,trm_source\n",
    )
    .unwrap_err();
    assert!(e.to_string().contains("neither field nor reserved"), "{e}");
}

#[test]
fn names_follow_the_trm() {
    use npuc_isa_gen::emit::camel;
    assert_eq!(camel("NPU_SET_IFM_BASE0"), "SetIfmBase0");
    assert_eq!(camel("NPU_SET_OFM_BLK_DEPTH_M1"), "SetOfmBlkDepthM1");
    assert_eq!(camel("pooling_mode_t"), "PoolingMode");
    assert_eq!(camel("u1x2"), "U1x2");
}
