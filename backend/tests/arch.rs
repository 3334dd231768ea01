//! Configurations: names, CONFIG words (TRM 3.3.1.10) and microblocks (TRM 3.10.13).

use npuc_backend::arch::Accelerator;

#[test]
fn config_words_match_the_ones_vela_writes() {
    // Read from the COP1 headers of models/vela/u85_256 and u85_2048.
    assert_eq!(Accelerator::U85_256.config().config_word(), 0x2000_0118);
    assert_eq!(Accelerator::U85_2048.config().config_word(), 0x2000_261b);
    for a in Accelerator::ALL {
        assert_eq!(
            Accelerator::from_config_word(a.config().config_word()),
            Ok(a)
        );
    }
    assert!(Accelerator::from_config_word(0x1000_0118).is_err());
    assert!(Accelerator::from_config_word(0x2000_011c).is_err());
}

#[test]
fn names_parse_in_the_usual_spellings() {
    for s in [
        "ethos-u85-256",
        "ETHOS-U85-256",
        "u85-256",
        "u85_256",
        "256",
    ] {
        assert_eq!(s.parse::<Accelerator>(), Ok(Accelerator::U85_256), "{s}");
    }
    for a in Accelerator::ALL {
        assert_eq!(a.name().parse::<Accelerator>(), Ok(a));
    }
    assert!("ethos-u55-256".parse::<Accelerator>().is_err());
    assert!("ethos-u85-4096".parse::<Accelerator>().is_err());
}

#[test]
fn weight_decoders_and_scaling_units_per_configuration() {
    let wd: Vec<u32> = Accelerator::ALL
        .iter()
        .map(|a| a.config().weight_decoders)
        .collect();
    assert_eq!(wd, [1, 1, 2, 4, 4]);
    let su: Vec<u32> = Accelerator::ALL
        .iter()
        .map(|a| a.config().scaling_units)
        .collect();
    assert_eq!(su, [2, 4, 8, 16, 32]);
}

#[test]
fn microblocks_are_those_the_trm_permits() {
    for a in Accelerator::ALL {
        let c = a.config();
        for mb in c.microblocks() {
            assert!(c.microblock_permitted(mb.encoding), "{a}: {mb:?}");
            // A microblock is one cycle of 8-bit MACs: H x W x C x 8 IFM channels.
            assert_eq!(
                mb.height * mb.width * mb.depth * 8,
                c.macs_per_cc,
                "{a}: {mb:?}"
            );
        }
    }
    let c = Accelerator::U85_256.config();
    let shapes: Vec<(u32, u32, u32)> = c
        .microblocks()
        .iter()
        .map(|m| (m.height, m.width, m.depth))
        .collect();
    assert_eq!(shapes, [(1, 2, 16), (1, 4, 8), (2, 2, 8)]);
    let c = Accelerator::U85_2048.config();
    let shapes: Vec<(u32, u32, u32)> = c
        .microblocks()
        .iter()
        .map(|m| (m.height, m.width, m.depth))
        .collect();
    assert_eq!(shapes, [(2, 2, 64), (1, 4, 64), (4, 4, 16)]);
    let c = Accelerator::U85_128.config();
    let shapes: Vec<(u32, u32, u32)> = c
        .microblocks()
        .iter()
        .map(|m| (m.height, m.width, m.depth))
        .collect();
    assert_eq!(shapes, [(1, 2, 8), (1, 1, 16)]);
}
