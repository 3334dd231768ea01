//! Standalone RESCALEs: the per-tensor and per-channel forms of TFLite's requantizations
//! (`plain`) and TOSA's other modes (`other_modes`: unsigned types, per-channel scales on wide
//! data).

pub(super) mod other_modes;
pub(super) mod plain;
