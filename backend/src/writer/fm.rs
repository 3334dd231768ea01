//! IFM, IFM2 and OFM feature-map registers: one routine for the three groups.
//!
//! The three groups hold the same facts (precision, region, tile bases, tile sizes, strides,
//! zero point) in registers named `NPU_SET_<group>_<register>`. [`write_feature_map`] looks
//! each register up in the ISA table ([`crate::isa::COMMANDS`]) by that name, packs the values
//! into the fields the table lists for it and writes the command; a register or field the
//! group does not have (IFM2 has no DEPTH_M1, only the OFM's PRECISION has `scale_mode`) is
//! not in the table and is skipped. The order of the registers is each group's list
//! ([`FmGroup::registers`]), which fixes the bytes of the stream.

use super::CommandWriter;
use crate::isa::{
    ActivationFormat, ActivationPrecision, ActivationReverse, ActivationStorage,
    ActivationTranspose, ActivationType, BroadcastMode, Command, CommandSpec, IfmUpscaleMode,
    OfmScaleMode, Opcode, SetOpScalar, COMMANDS,
};
use std::sync::OnceLock;

/// A feature-map register group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FmGroup {
    Ifm,
    Ifm2,
    Ofm,
}

/// One register of a feature-map group (the part of its name after `NPU_SET_<group>_`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FmRegister {
    Precision,
    Region,
    Base0,
    Base1,
    Base2,
    Base3,
    HeightM1,
    WidthM1,
    DepthM1,
    Height0M1,
    Height1M1,
    Width0M1,
    StrideY,
    StrideX,
    StrideC,
    ZeroPoint,
    Upscale,
}

impl FmRegister {
    const ALL: [FmRegister; 17] = [
        FmRegister::Precision,
        FmRegister::Region,
        FmRegister::Base0,
        FmRegister::Base1,
        FmRegister::Base2,
        FmRegister::Base3,
        FmRegister::HeightM1,
        FmRegister::WidthM1,
        FmRegister::DepthM1,
        FmRegister::Height0M1,
        FmRegister::Height1M1,
        FmRegister::Width0M1,
        FmRegister::StrideY,
        FmRegister::StrideX,
        FmRegister::StrideC,
        FmRegister::ZeroPoint,
        FmRegister::Upscale,
    ];

    /// The TRM name after `NPU_SET_<group>_`.
    pub const fn trm_suffix(self) -> &'static str {
        match self {
            FmRegister::Precision => "PRECISION",
            FmRegister::Region => "REGION",
            FmRegister::Base0 => "BASE0",
            FmRegister::Base1 => "BASE1",
            FmRegister::Base2 => "BASE2",
            FmRegister::Base3 => "BASE3",
            FmRegister::HeightM1 => "HEIGHT_M1",
            FmRegister::WidthM1 => "WIDTH_M1",
            FmRegister::DepthM1 => "DEPTH_M1",
            FmRegister::Height0M1 => "HEIGHT0_M1",
            FmRegister::Height1M1 => "HEIGHT1_M1",
            FmRegister::Width0M1 => "WIDTH0_M1",
            FmRegister::StrideY => "STRIDE_Y",
            FmRegister::StrideX => "STRIDE_X",
            FmRegister::StrideC => "STRIDE_C",
            FmRegister::ZeroPoint => "ZERO_POINT",
            FmRegister::Upscale => "UPSCALE",
        }
    }
}

impl FmGroup {
    /// The TRM name of the group (`NPU_SET_<group>_...`).
    pub const fn trm_name(self) -> &'static str {
        match self {
            FmGroup::Ifm => "IFM",
            FmGroup::Ifm2 => "IFM2",
            FmGroup::Ofm => "OFM",
        }
    }

    /// The registers [`write_feature_map`] writes for the group, in stream order.
    pub const fn registers(self) -> &'static [FmRegister] {
        use FmRegister::*;
        match self {
            FmGroup::Ifm => &[
                Precision, Region, Base0, Base1, Base2, Base3, Height0M1, Height1M1, Width0M1,
                DepthM1, StrideY, StrideX, StrideC, ZeroPoint, Upscale,
            ],
            FmGroup::Ifm2 => &[
                Precision, Region, Base0, Base1, Base2, Base3, Height0M1, Height1M1, Width0M1,
                StrideY, StrideX, StrideC, ZeroPoint,
            ],
            FmGroup::Ofm => &[
                Precision, Region, Base0, Base1, Base2, Base3, HeightM1, WidthM1, DepthM1,
                Height0M1, Height1M1, Width0M1, StrideY, StrideX, StrideC, ZeroPoint,
            ],
        }
    }

    /// The instruction table's row of a register of this group, if the group has it.
    pub fn spec(self, reg: FmRegister) -> Option<&'static CommandSpec> {
        static TABLE: OnceLock<[[Option<Opcode>; 17]; 3]> = OnceLock::new();
        let table = TABLE.get_or_init(|| {
            let mut t = [[None; 17]; 3];
            for (g, group) in [FmGroup::Ifm, FmGroup::Ifm2, FmGroup::Ofm]
                .into_iter()
                .enumerate()
            {
                for (r, reg) in FmRegister::ALL.into_iter().enumerate() {
                    t[g][r] = COMMANDS
                        .iter()
                        .find(|s| {
                            s.name
                                .strip_prefix("NPU_SET_")
                                .and_then(|n| n.strip_prefix(group.trm_name()))
                                .and_then(|n| n.strip_prefix('_'))
                                == Some(reg.trm_suffix())
                        })
                        .map(|s| s.opcode);
                }
            }
            t
        });
        table[self as usize][reg as usize].map(Opcode::spec)
    }
}

/// The PRECISION register of a group: the element type and how it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FmPrecision {
    pub activation_type: ActivationType,
    pub activation_precision: ActivationPrecision,
    pub activation_format: ActivationFormat,
    pub activation_storage: ActivationStorage,
    /// OFM only.
    pub scale_mode: OfmScaleMode,
    /// OFM only.
    pub activation_reverse: ActivationReverse,
    /// OFM only.
    pub activation_transpose: ActivationTranspose,
}

impl FmPrecision {
    /// NHWC elements of this type and precision in `storage`, written in order.
    pub fn nhwc(
        activation_type: ActivationType,
        activation_precision: ActivationPrecision,
        activation_storage: ActivationStorage,
    ) -> Self {
        FmPrecision {
            activation_type,
            activation_precision,
            activation_format: ActivationFormat::Nhwc,
            activation_storage,
            scale_mode: OfmScaleMode::default(),
            activation_reverse: ActivationReverse::default(),
            activation_transpose: ActivationTranspose::default(),
        }
    }
}

/// The values of a feature-map register group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureMapRegs {
    pub precision: FmPrecision,
    /// Region (or chaining buffer, for chained storage).
    pub region: u8,
    /// Address of tile 0 (element (0, 0, 0)).
    pub base: u64,
    /// Address of tile 2 (the rows after a ring buffer wraps; 0 when it does not).
    pub tile2_base: u64,
    /// Height, width and depth of the feature map (OFM: HEIGHT/WIDTH/DEPTH_M1; IFM: DEPTH_M1).
    pub shape: (u32, u32, u32),
    /// Height of tiles 0 and 1 and width of tile 0.
    pub tile: (u32, u32),
    /// Byte strides (y, x, c).
    pub stride: (u64, u64, u64),
    pub zero_point: i64,
    /// IFM only.
    pub upscale: IfmUpscaleMode,
}

/// The field values of one register of the group (by the TRM field names).
fn fields(reg: FmRegister, v: &FeatureMapRegs) -> Vec<(&'static str, u64)> {
    let m1 = |x: u32| u64::from(x) - 1;
    let address = |a: u64| vec![("addr_hi", a >> 32), ("addr_lo", a & 0xffff_ffff)];
    let p = &v.precision;
    match reg {
        FmRegister::Precision => vec![
            ("activation_type", u64::from(p.activation_type.raw())),
            (
                "activation_precision",
                u64::from(p.activation_precision.raw()),
            ),
            ("activation_format", u64::from(p.activation_format.raw())),
            ("scale_mode", u64::from(p.scale_mode.raw())),
            ("activation_reverse", u64::from(p.activation_reverse.raw())),
            (
                "activation_transpose",
                u64::from(p.activation_transpose.raw()),
            ),
            ("activation_storage", u64::from(p.activation_storage.raw())),
        ],
        FmRegister::Region => vec![("region", u64::from(v.region))],
        FmRegister::Base0 => address(v.base),
        FmRegister::Base2 => address(v.tile2_base),
        FmRegister::Base1 | FmRegister::Base3 => address(0),
        FmRegister::HeightM1 => vec![("height_m1", m1(v.shape.0))],
        FmRegister::WidthM1 => vec![("width_m1", m1(v.shape.1))],
        FmRegister::DepthM1 => vec![("depth_m1", m1(v.shape.2))],
        FmRegister::Height0M1 | FmRegister::Height1M1 => vec![("height_m1", m1(v.tile.0))],
        FmRegister::Width0M1 => vec![("width_m1", m1(v.tile.1))],
        FmRegister::StrideY => address(v.stride.0),
        FmRegister::StrideX => address(v.stride.1),
        FmRegister::StrideC => address(v.stride.2),
        FmRegister::ZeroPoint => vec![("zero_point", v.zero_point as u64)],
        FmRegister::Upscale => vec![("mode", u64::from(v.upscale.raw()))],
    }
}

/// Packs field values into `spec`'s command; fields the instruction does not have are
/// skipped, values are cut to their field's width (as the register holds them).
fn command(spec: &CommandSpec, values: &[(&str, u64)]) -> Command {
    let mut raw = u64::from(spec.header());
    for &(name, value) in values {
        if let Some(f) = spec.field(name) {
            raw |= (value & f.value_mask()) << f.lo;
        }
    }
    // Every enum value packed here is a typed enum's own encoding, so none is reserved.
    Command::from_raw(spec.opcode, raw).expect("feature-map fields hold valid enum values")
}

/// Writes `group`'s registers with the values `v` (unchanged registers are skipped).
pub fn write_feature_map(w: &mut CommandWriter, group: FmGroup, v: &FeatureMapRegs) {
    for &reg in group.registers() {
        if let Some(spec) = group.spec(reg) {
            w.set(command(spec, &fields(reg, v)));
        }
    }
}

/// Writes only the PRECISION register of `group`.
pub fn write_precision(w: &mut CommandWriter, group: FmGroup, p: &FmPrecision) {
    let v = FeatureMapRegs {
        precision: *p,
        region: 0,
        base: 0,
        tile2_base: 0,
        shape: (1, 1, 1),
        tile: (1, 1),
        stride: (0, 0, 0),
        zero_point: 0,
        upscale: IfmUpscaleMode::default(),
    };
    if let Some(spec) = group.spec(FmRegister::Precision) {
        w.set(command(spec, &fields(FmRegister::Precision, &v)));
    }
}

/// The registers of a scalar operand (OP_SCALAR): its precision with storage `none` (no
/// memory is read), its zero point and the value.
pub fn write_scalar(
    w: &mut CommandWriter,
    group: FmGroup,
    p: &FmPrecision,
    zero_point: i64,
    value: i32,
) {
    let p = FmPrecision {
        activation_storage: ActivationStorage::None,
        ..*p
    };
    write_precision(w, group, &p);
    if let Some(spec) = group.spec(FmRegister::ZeroPoint) {
        w.set(command(spec, &[("zero_point", zero_point as u64)]));
    }
    w.set(Command::SetOpScalar(SetOpScalar { scalar: value }));
}

/// The broadcast mode of a feature map broadcast along (height, width, depth).
pub fn broadcast(b: (bool, bool, bool)) -> BroadcastMode {
    let bits = u32::from(b.0) | (u32::from(b.1) << 1) | (u32::from(b.2) << 2);
    BroadcastMode::from_raw(bits).unwrap_or(BroadcastMode::None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{SetIfm2StrideC, SetIfmDepthM1, SetOfmHeightM1};

    fn regs() -> FeatureMapRegs {
        FeatureMapRegs {
            precision: FmPrecision::nhwc(
                ActivationType::Signed,
                ActivationPrecision::B8,
                ActivationStorage::Tile2x2,
            ),
            region: 1,
            base: 0x1_0000_0040,
            tile2_base: 0,
            shape: (4, 5, 6),
            tile: (4, 5),
            stride: (30, 6, 1),
            zero_point: -3,
            upscale: IfmUpscaleMode::None,
        }
    }

    #[test]
    fn every_register_of_every_group_is_in_the_isa_table() {
        for g in [FmGroup::Ifm, FmGroup::Ifm2, FmGroup::Ofm] {
            for &r in g.registers() {
                assert!(g.spec(r).is_some(), "{:?} {:?}", g, r);
            }
        }
        assert!(FmGroup::Ifm2.spec(FmRegister::DepthM1).is_none());
        assert!(FmGroup::Ofm.spec(FmRegister::Upscale).is_none());
    }

    #[test]
    fn each_group_writes_its_own_registers_with_the_values() {
        for (g, n) in [(FmGroup::Ifm, 15), (FmGroup::Ifm2, 13), (FmGroup::Ofm, 16)] {
            let mut w = CommandWriter::default();
            write_feature_map(&mut w, g, &regs());
            assert_eq!(w.commands.len(), n, "{g:?}");
            // Written again with the same values: nothing new.
            write_feature_map(&mut w, g, &regs());
            assert_eq!(w.commands.len(), n, "{g:?}");
        }
        let mut w = CommandWriter::default();
        write_feature_map(&mut w, FmGroup::Ifm, &regs());
        assert!(w
            .commands
            .contains(&Command::SetIfmDepthM1(SetIfmDepthM1 { depth_m1: 5 })));
        let mut w = CommandWriter::default();
        write_feature_map(&mut w, FmGroup::Ofm, &regs());
        assert!(w
            .commands
            .contains(&Command::SetOfmHeightM1(SetOfmHeightM1 { height_m1: 3 })));
        let mut w = CommandWriter::default();
        write_feature_map(&mut w, FmGroup::Ifm2, &regs());
        assert!(w
            .commands
            .contains(&Command::SetIfm2StrideC(SetIfm2StrideC {
                addr_hi: 0,
                addr_lo: 1
            })));
    }
}
