//! The files Vela writes into its `--output-dir`, from npuc's compiled models:
//!
//! * `<model>_vela.tflite` ([`crate::tflite_out`]), or with `--output-format raw`
//!   `<model>_vela.npz` ([`raw_npz`]: the arrays ExecuTorch-style flows read);
//! * `<model>_summary_<system-config>.csv` ([`summary_csv`], Vela's columns);
//! * with `--verbose-performance`, `<model>_per-layer.csv` ([`per_layer_csv`], Vela's columns).
//!
//! The figures in both CSV files are `npuc report`'s ([`crate::report`]): its cycles, MACs and
//! memory traffic, in the model's system configuration and memory mode. Column names are
//! Vela's; each row of the per-layer file is one source operator on the NPU
//! (`npuc report --per-layer`'s rows).

use crate::artifact::{Artifact, NpuStream, StreamOrigin};
use crate::compile::{CompiledModel, TensorPlacement};
use crate::npz::{self, Member, QuantRecord};
use crate::report::{Report, ReportError};
use crate::tflite_out::TfliteOutError;
use npuc_backend::cop::write_cop1;
use npuc_backend::system::{MemoryKind, MemoryMap};
use npuc_ir::Quantization;
use std::fmt::Write;

/// The name of the compiled `.tflite` Vela writes for a model file stem.
pub fn tflite_name(stem: &str) -> String {
    format!("{stem}_vela.tflite")
}

/// The name of the raw `.npz` output.
pub fn npz_name(stem: &str) -> String {
    format!("{stem}_vela.npz")
}

/// The name of the summary CSV for a system configuration.
pub fn summary_name(stem: &str, system_config: &str) -> String {
    format!("{stem}_summary_{system_config}.csv")
}

/// The name of the per-layer CSV (`--verbose-performance`).
pub fn per_layer_name(stem: &str) -> String {
    format!("{stem}_per-layer.csv")
}

/// Vela's name of a configuration in its CSV files: `Ethos_U85_256`.
pub fn accelerator_label(m: &CompiledModel) -> String {
    format!("Ethos_U85_{}", m.accelerator.macs_per_cc())
}

fn quant_record(q: Option<&Quantization>) -> QuantRecord {
    match q {
        None => QuantRecord::None,
        Some(Quantization::PerTensor { scale, zero_point }) => QuantRecord::PerTensor {
            scale: *scale as f32,
            zero_point: *zero_point as i32,
        },
        Some(Quantization::PerAxis {
            scales,
            zero_points,
            ..
        }) => QuantRecord::PerChannel {
            scales: scales.iter().map(|&s| s as f32).collect(),
            zero_points: zero_points.iter().map(|&z| z as i32).collect(),
        },
    }
}

/// Shapes padded to 6 dimensions with leading 1s, as Vela writes them (a rank above 6 keeps
/// its own length; all rows then take the longest).
fn shapes(ts: &[TensorPlacement]) -> Member {
    let rank = ts.iter().map(|t| t.shape.len()).max().unwrap_or(0).max(6);
    let mut data = Vec::new();
    for t in ts {
        data.extend(std::iter::repeat_n(1, rank - t.shape.len()));
        data.extend(t.shape.iter().map(|&d| d as i64));
    }
    Member::I64 {
        shape: vec![ts.len(), rank],
        data,
    }
}

fn column(ts: &[TensorPlacement], f: impl Fn(&TensorPlacement) -> i64) -> Member {
    Member::I64 {
        shape: vec![ts.len()],
        data: ts.iter().map(f).collect(),
    }
}

fn io_members(prefix: &str, ts: &[TensorPlacement], out: &mut Vec<(String, Member)>) {
    out.push((format!("{prefix}_shape"), shapes(ts)));
    out.push((
        format!("{prefix}_elem_size"),
        column(ts, |t| t.dtype.byte_size() as i64),
    ));
    out.push((
        format!("{prefix}_region"),
        column(ts, |t| i64::from(t.region)),
    ));
    out.push((format!("{prefix}_offset"), column(ts, |t| t.offset as i64)));
}

/// Vela's raw output (`--output-format raw`) of a model compiled whole onto the NPU: the
/// `.npz` archive with `cmd_data` (the COP1 driver payload), `weight_data` (region 0),
/// `weight_region`, `scratch_shape`/`_region`/`_size` (region 1), `scratch_fast_*` (region 2),
/// `input_shape` (padded to 6 dimensions), `input_elem_size`, `input_region`, `input_offset`,
/// the same for `output` and `variable` (none), and `input_quantization`,
/// `output_quantization`, `variable_quantization`. Fails only for a stream too long for a
/// COP1 payload.
pub fn raw_npz(m: &CompiledModel) -> Result<Vec<u8>, TfliteOutError> {
    let payload = write_cop1(
        m.config_word,
        crate::tflite_out::write::ETHOS_U85_ID_WORD,
        &m.payload.command_words()?,
    )
    .ok_or_else(|| TfliteOutError::Write("the command stream is too long".into()))?;
    let size = |n: u64| n as i64;
    let mut members: Vec<(String, Member)> = vec![
        ("cmd_data".into(), Member::Bytes(payload)),
        ("weight_data".into(), Member::Bytes(m.read_only.clone())),
        ("weight_region".into(), Member::I64Scalar(0)),
        (
            "scratch_shape".into(),
            Member::I64 {
                shape: vec![1],
                data: vec![size(m.arena_size)],
            },
        ),
        ("scratch_region".into(), Member::I64Scalar(1)),
        ("scratch_size".into(), Member::I64Scalar(size(m.arena_size))),
        (
            "scratch_fast_shape".into(),
            Member::I64 {
                shape: vec![1],
                data: vec![size(m.fast_size)],
            },
        ),
        ("scratch_fast_region".into(), Member::I64Scalar(2)),
        (
            "scratch_fast_size".into(),
            Member::I64Scalar(size(m.fast_size)),
        ),
    ];
    io_members("input", &m.inputs, &mut members);
    io_members("output", &m.outputs, &mut members);
    for k in ["shape", "elem_size", "region", "offset"] {
        members.push((format!("variable_{k}"), Member::Empty));
    }
    let quant = |ts: &[TensorPlacement]| {
        Member::Quantizations(ts.iter().map(|t| quant_record(t.quant.as_ref())).collect())
    };
    members.push(("input_quantization".into(), quant(&m.inputs)));
    members.push(("output_quantization".into(), quant(&m.outputs)));
    members.push(("variable_quantization".into(), Member::Empty));
    Ok(npz::write(&members))
}

/// `npuc report` of compiled models (one stream each) in their memory system.
pub fn report(models: &[&CompiledModel], map: &MemoryMap) -> Result<Report, ReportError> {
    let streams = models
        .iter()
        .enumerate()
        .map(|(i, m)| {
            Ok(NpuStream {
                origin: StreamOrigin::Container,
                words: m.payload.command_words().map_err(|e| ReportError {
                    stream: i,
                    problem: e.into(),
                })?,
                payload: None,
                accelerator: Some(m.accelerator),
                op: None,
                regions: Some(crate::compile::region_sizes(m)),
                read_only: Some(m.read_only.clone()),
            })
        })
        .collect::<Result<_, ReportError>>()?;
    crate::report::report(
        &Artifact { streams },
        &crate::targets::ArtifactReaders::new(map.clone(), models.first().map(|m| m.accelerator)),
    )
}

/// A float as Python's `repr` writes it (`100.0`, `7.363636363636363`), as in Vela's CSVs.
fn py(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e16 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

fn percentage(part: f64, whole: f64) -> f64 {
    if whole == 0.0 {
        100.0
    } else {
        part * 100.0 / whole
    }
}

fn memory_label(k: MemoryKind) -> &'static str {
    match k {
        MemoryKind::Sram => "sram",
        MemoryKind::Dram => "dram",
        MemoryKind::OnChipFlash => "on_chip_flash",
        MemoryKind::OffChipFlash => "off_chip_flash",
    }
}

fn memory_display(k: MemoryKind) -> &'static str {
    match k {
        MemoryKind::Sram => "SRAM",
        MemoryKind::Dram => "DRAM",
        MemoryKind::OnChipFlash => "On-chip Flash",
        MemoryKind::OffChipFlash => "Off-chip Flash",
    }
}

/// The column of memory `k` (Vela's order, [`MemoryKind::ALL`]).
fn memory_index(k: MemoryKind) -> usize {
    MemoryKind::ALL.iter().position(|&m| m == k).unwrap_or(0)
}

/// An operation's cycles on memory `k`.
fn memory_cycles(o: &crate::arch_interface::OpEstimate, k: MemoryKind) -> u64 {
    o.memory
        .iter()
        .zip(&o.memory_cycles)
        .find(|((m, _, _), _)| m == k.name())
        .map_or(0, |(_, &c)| c)
}

/// Bytes per memory: feature map read, written, weight read, written.
#[derive(Default, Clone, Copy)]
struct Traffic {
    fm_read: u64,
    fm_write: u64,
    weight_read: u64,
    weight_write: u64,
}

/// The column of the memory named `name` (a region's memory in the report's description).
fn memory_index_named(name: &str) -> usize {
    MemoryKind::ALL
        .iter()
        .position(|m| m.name() == name)
        .unwrap_or(0)
}

fn traffic(report: &Report) -> [Traffic; 4] {
    let mut t = [Traffic::default(); 4];
    for o in &report.ops {
        let regions = &o.estimate.regions;
        // A DMA reading the read-only region stages weights; other DMAs move feature maps.
        let weight_dma = o.estimate.dma && regions.first().is_some_and(|c| c.read > 0);
        for (r, c) in regions.iter().enumerate() {
            let k = memory_index_named(report.target.region_memory(r));
            let stream = c.stream_read.min(c.read);
            if weight_dma {
                t[k].weight_read += c.read;
                t[k].weight_write += c.written;
            } else {
                t[k].weight_read += stream;
                t[k].fm_read += c.read - stream;
                t[k].fm_write += c.written;
            }
        }
    }
    t
}

/// Vela's `<model>_summary_<system-config>.csv` for the compiled models of one network
/// (`network`: the model file stem; `report`: [`report`] of them in the memory system `map`;
/// `npu_operators`: source operators placed on the NPU).
pub fn summary_csv(
    network: &str,
    models: &[&CompiledModel],
    report: &Report,
    map: &MemoryMap,
    npu_operators: usize,
) -> String {
    let sys = &map.system;
    let first = models.first();
    let mems = MemoryKind::ALL;
    let mut labels: Vec<String> = [
        "experiment",
        "network",
        "accelerator_configuration",
        "system_config",
        "memory_mode",
        "core_clock",
        "arena_cache_size",
    ]
    .map(String::from)
    .to_vec();
    labels.extend(mems.map(|k| format!("{}_bandwidth", memory_label(k))));
    labels.extend(
        [
            "weights_storage_area",
            "feature_map_storage_area",
            "inferences_per_second",
            "batch_size",
            "inference_time",
            "passes_before_fusing",
            "passes_after_fusing",
        ]
        .map(String::from),
    );
    labels.extend(mems.map(|k| format!("{}_memory_used", memory_label(k))));
    labels.push("total_original_weights".into());
    labels.push("total_npu_encoded_weights".into());
    for k in mems {
        let l = memory_label(k);
        for s in [
            "feature_map_read_bytes",
            "feature_map_write_bytes",
            "weight_read_bytes",
            "weight_write_bytes",
            "total_bytes",
        ] {
            labels.push(format!("{l}_{s}"));
        }
    }
    labels.extend(["nn_macs", "nn_tops"].map(String::from));
    for c in [
        "npu",
        "sram_access",
        "dram_access",
        "on_chip_flash_access",
        "off_chip_flash_access",
        "total",
    ] {
        labels.push(format!("cycles_{c}"));
    }

    let cycles = report.total.cycles as f64;
    let time = cycles / sys.core_clock;
    let fps = if time > 0.0 { 1.0 / time } else { f64::NAN };
    let mut used = [0u64; 4];
    for m in models {
        used[memory_index(map.region_memory(0))] += m.read_only.len() as u64;
        used[memory_index(map.region_memory(1))] += m.arena_size;
        used[memory_index(map.region_memory(2))] += m.fast_size;
    }
    let sum = |f: &dyn Fn(&CompiledModel) -> u64| models.iter().map(|m| f(m)).sum::<u64>();
    let mut v: Vec<String> = vec![
        "default".into(),
        network.into(),
        first.map(|m| accelerator_label(m)).unwrap_or_default(),
        sys.name.clone(),
        map.mode.name.clone(),
        py(sys.core_clock),
        // No arena_cache_size: the whole memory, which Vela records as 2^40 bytes.
        py(map.mode.arena_cache_size.unwrap_or(1 << 40) as f64 / 1024.0),
    ];
    v.extend(mems.map(|k| py(sys.bytes_per_cycle(k) * sys.core_clock / 1024f64.powi(3))));
    v.push(memory_display(map.constants).into());
    v.push(memory_display(map.arena).into());
    v.push(py(fps));
    v.push("1".into());
    v.push(py(time));
    v.push(npu_operators.to_string());
    v.push(report.ops.len().to_string());
    v.extend(used.map(|b| py(b as f64 / 1024.0)));
    v.push(sum(&|m| m.weights.weights).to_string());
    v.push(sum(&|m| m.weights.weight_stream_bytes + m.weights.scale_stream_bytes).to_string());
    for t in traffic(report) {
        let total = t.fm_read + t.fm_write + t.weight_read + t.weight_write;
        for x in [t.fm_read, t.fm_write, t.weight_read, t.weight_write, total] {
            v.push(x.to_string());
        }
    }
    let macs = report.total.macs;
    v.push(macs.to_string());
    v.push(py(macs as f64 * 2.0 * fps / 1e12));
    let npu: u64 = report.ops.iter().map(|o| o.estimate.compute_cycles).sum();
    v.push(npu.to_string());
    for k in mems {
        let c: u64 = report
            .ops
            .iter()
            .map(|o| memory_cycles(&o.estimate, k))
            .sum();
        v.push(c.to_string());
    }
    v.push(report.total.cycles.to_string());
    format!("{}\n{}\n", labels.join(","), v.join(","))
}

/// The layer maps of compiled models (one stream each, in order), as npuc records them in
/// its outputs ([`crate::layers`]); `None` when a stream and its schedule do not match.
pub fn layer_maps(models: &[&CompiledModel]) -> Option<crate::container::LayerMaps> {
    let mut streams = Vec::new();
    for m in models {
        let (operators, attributed) = crate::layers::operator_entries(m);
        if !attributed {
            return None;
        }
        streams.push(crate::container::StreamLayers { operators });
    }
    Some(crate::container::LayerMaps {
        version: crate::layers::LAYERS_VERSION,
        streams,
        cpu_operators: Vec::new(),
    })
}

/// Vela's `<model>_per-layer.csv`: one row per source operator on the NPU
/// ([`Report::per_layer`], in execution order; a fused operator's row, without cost, after
/// the row of the operator it is fused into, as Vela lists a fused activation). "Original
/// Operator" is the source operator (TFLite builtin or TOSA operator), "NNG Operator" the
/// kernels of its NPU operations, "Op Cycles" its share of the total (the rows add up to it),
/// "NPU" its compute cycles, "* AC" its cycles on each memory, "Util% (MAC)" its MACs over
/// what its kernel commands' cycles allow, "Staging Usage" the highest SRAM byte its commands
/// touch ("Peak%" against the highest of any row), "Name" its output tensor.
pub fn per_layer_csv(report: &Report, layers: &crate::report::PerLayer) -> String {
    let mut s = String::from(
        "Original Operator,NNG Operator,Target,Staging Usage,Peak% (Staging),Op Cycles,\
         Network% (cycles),NPU,SRAM AC,DRAM AC,OnFlash AC,OffFlash AC,MAC Count,\
         Network% (MAC),Util% (MAC),Name\n",
    );
    let total = &report.total;
    let staging_peak = layers
        .rows
        .iter()
        .map(|r| r.figures.peak_sram)
        .max()
        .unwrap_or(0);
    for r in &layers.rows {
        let f = &r.figures;
        let nng = match &r.fused_into {
            Some(_) => r.source.operator.clone(),
            None => r.kernels.join(" "),
        };
        let util = if r.kernel_cycles == 0 {
            100.0
        } else {
            r.mac_utilisation
        };
        let _ = write!(
            s,
            "{},{},NPU,{},{},{},{},{},",
            csv_field(&r.source.operator),
            csv_field(&nng),
            f.peak_sram,
            py(percentage(f.peak_sram as f64, staging_peak as f64)),
            r.cycles,
            py(percentage(r.cycles as f64, total.cycles as f64)),
            r.npu_cycles
        );
        for k in MemoryKind::ALL {
            let c = r.memory_cycles.iter().find(|(m, _)| m == k.name());
            let _ = write!(s, "{},", c.map_or(0, |&(_, c)| c));
        }
        let _ = writeln!(
            s,
            "{},{},{},{}",
            f.macs,
            py(percentage(f.macs as f64, total.macs as f64)),
            py(util),
            csv_field(&r.source.output)
        );
    }
    s
}

/// A CSV field, quoted when it holds a comma, quote or newline.
fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_written_as_python_writes_them() {
        assert_eq!(py(100.0), "100.0");
        assert_eq!(py(1e9), "1000000000.0");
        assert_eq!(py(7.363636363636363), "7.363636363636363");
        assert_eq!(py(0.0), "0.0");
    }

    #[test]
    fn file_names_are_velas() {
        assert_eq!(tflite_name("m"), "m_vela.tflite");
        assert_eq!(npz_name("m"), "m_vela.npz");
        assert_eq!(summary_name("m", "Sys"), "m_summary_Sys.csv");
        assert_eq!(per_layer_name("m"), "m_per-layer.csv");
    }
}
