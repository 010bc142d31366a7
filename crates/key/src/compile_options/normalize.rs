//! JAX's compile-options normalization, reproduced on the wire.
//!
//! JAX (`jax/_src/cache_key.py`, `_hash_serialized_compile_options`) deep-copies the
//! `CompileOptions` object, sets 20 debug options that cannot change the compiled program to
//! their zero value, drops excluded `env_option_overrides`, on `gpu` replaces the device
//! assignment by `0..R·C−1`, and hashes `SerializeToStringDeterministic` of the result: known
//! fields in field-number order, map entries sorted by key. We do the same edits on the bytes,
//! opening only the messages on that path, so every other field reaches the key untouched.

use std::collections::BTreeMap;
use std::fmt;

use super::OptionsError;
use super::schema::{self, Kind, Msg};
use super::text;
use super::wire::{self, Field, check_wire_type, merged_fields};

/// The 20 DebugOptions fields JAX resets to 0 / false / "" before hashing.
pub const RESET_DEBUG_OPTIONS: [&str; 20] = [
    "xla_force_host_platform_device_count",
    "xla_dump_to",
    "xla_dump_hlo_module_re",
    "xla_dump_hlo_pass_re",
    "xla_dump_hlo_as_text",
    "xla_dump_hlo_as_proto",
    "xla_dump_hlo_as_dot",
    "xla_dump_hlo_as_url",
    "xla_dump_hlo_as_html",
    "xla_dump_fusion_visualization",
    "xla_dump_hlo_snapshots",
    "xla_dump_max_hlo_modules",
    "xla_dump_module_metadata",
    "xla_dump_compress_protos",
    "xla_dump_hlo_as_long_text",
    "xla_dump_disable_metadata",
    "xla_dump_hlo_pipeline_re",
    "xla_gpu_experimental_autotune_cache_mode",
    "xla_gpu_cuda_data_dir",
    "xla_gpu_per_fusion_autotune_cache_dir",
];

/// The 26 XLA flags JAX keeps out of the key; an `env_option_overrides` entry is
/// dropped when `--` + its key is one of them.
pub const EXCLUDED_XLA_FLAGS: [&str; 26] = [
    "--xla_dump_compress_protos",
    "--xla_dump_module_metadata",
    "--xla_dump_max_hlo_modules",
    "--xla_dump_include_timestamp",
    "--xla_dump_hlo_pass_re",
    "--xla_dump_hlo_module_re",
    "--xla_dump_hlo_snapshots",
    "--xla_dump_fusion_visualization",
    "--xla_dump_hlo_as_url",
    "--xla_dump_hlo_as_proto",
    "--xla_dump_hlo_as_text",
    "--xla_dump_hlo_as_long_text",
    "--xla_dump_hlo_as_html",
    "--xla_dump_hlo_as_dot",
    "--xla_dump_to",
    "--xla_force_host_platform_device_count",
    "--xla_dump_disable_metadata",
    "--xla_dump_hlo_pipeline_re",
    "--xla_tpu_sdc_checker_streamz_metric",
    "--xla_tpu_sdc_checker_enable_sdc_event_callbacks",
    "--xla_tpu_sdc_checker_enable_coresweep_ng_callbacks",
    "--xla_tpu_sdc_checker_no_logging_if_callbacks_are_present",
    "--xla_gpu_cuda_data_dir",
    "--xla_gpu_experimental_autotune_cache_mode",
    "--xla_gpu_per_fusion_autotune_cache_dir",
    "--xla_tpu_compiler_variant",
];

/// What normalization depends on besides the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NormalizeOptions<'a> {
    /// The backend's platform name, raw and untrimmed: only exactly `"gpu"` rebuilds the
    /// device assignment.
    pub platform: &'a str,
}

/// The bytes to hash, and what normalization did to get them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Normalized {
    pub bytes: Vec<u8>,
    pub changes: Vec<Change>,
}

/// One edit normalization made, for humans: field path, old value, new value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    /// `None`: the field was absent.
    pub old: Option<String>,
    /// `None`: the field was removed.
    pub new: Option<String>,
    /// Why, when the edit is not a plain reset.
    pub note: Option<&'static str>,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_change(f, &self.path, self.old.as_deref(), self.new.as_deref())?;
        match self.note {
            Some(note) => write!(f, " ({note})"),
            None => Ok(()),
        }
    }
}

/// `path: old → new`, with `(absent)` for a missing side.
pub(super) fn write_change(
    f: &mut fmt::Formatter<'_>,
    path: &str,
    old: Option<&str>,
    new: Option<&str>,
) -> fmt::Result {
    write!(
        f,
        "{path}: {} → {}",
        old.unwrap_or("(absent)"),
        new.unwrap_or("(absent)")
    )
}

const NOTE_CREATED: &str = "absent in the input; JAX would fill it from XLA's flag defaults, \
                            which bytes alone cannot reproduce";

/// Normalizes a serialized `xla.CompileOptionsProto` exactly as the newest JAX does before
/// hashing it.
pub fn normalize(input: &[u8], opts: &NormalizeOptions) -> Result<Normalized, OptionsError> {
    normalize_with(input, opts, &RESET_DEBUG_OPTIONS, &EXCLUDED_XLA_FLAGS)
}

/// [`normalize`] with one JAX release's lists: the debug options it resets and the flags whose
/// `env_option_overrides` it drops.
pub fn normalize_with(
    input: &[u8],
    opts: &NormalizeOptions,
    reset_debug_options: &[&str],
    excluded_flags: &[&str],
) -> Result<Normalized, OptionsError> {
    let mut changes = Vec::new();
    let top = wire::parse(input, 0, "", Some(Msg::CompileOptions))?;
    check_known(Msg::CompileOptions, &top, "")?;
    let (build, rest): (Vec<Field>, Vec<Field>) = top.into_iter().partition(|f| f.number == 3);
    let (env, mut rest): (Vec<Field>, Vec<Field>) = rest.into_iter().partition(|f| f.number == 7);

    let path = "executable_build_options";
    let build_fields = opened(&build, path, Msg::ExecutableBuildOptions, &mut changes)?;
    let build_fields =
        normalize_build_options(build_fields, path, opts, reset_debug_options, &mut changes)?;
    rest.push(Field::new_len(3, &wire::write(&build_fields)));
    rest.extend(normalize_env_overrides(env, excluded_flags, &mut changes)?);
    wire::sort_by_number(&mut rest);
    Ok(Normalized {
        bytes: wire::write(&rest),
        changes,
    })
}

/// The fields of a singular message JAX always writes, from its occurrences; an absent one is
/// created empty, and the change says so.
fn opened<'a>(
    occurrences: &'a [Field<'_>],
    path: &str,
    msg: Msg,
    changes: &mut Vec<Change>,
) -> Result<Vec<Field<'a>>, OptionsError> {
    if occurrences.is_empty() {
        changes.push(Change {
            path: path.to_string(),
            old: None,
            new: Some("{}".to_string()),
            note: Some(NOTE_CREATED),
        });
    }
    merged_fields(&occurrences.iter().collect::<Vec<_>>(), path, msg)
}

/// The fields of the message `msg` in `f`, its known ones checked.
fn parse_known<'a>(f: &'a Field<'_>, path: &str, msg: Msg) -> Result<Vec<Field<'a>>, OptionsError> {
    let fields = wire::parse(f.payload(), f.payload_offset(), path, Some(msg))?;
    check_known(msg, &fields, path)?;
    Ok(fields)
}

/// Rejects known fields of `msg` with a wire type their kind cannot have.
fn check_known(msg: Msg, fields: &[Field], path: &str) -> Result<(), OptionsError> {
    for f in fields {
        if let Some(info) = schema::lookup(msg, f.number) {
            check_wire_type(info, f, &wire::join(path, info.name))?;
        }
    }
    Ok(())
}

fn normalize_build_options<'a>(
    fields: Vec<Field<'a>>,
    path: &str,
    opts: &NormalizeOptions,
    reset: &[&str],
    changes: &mut Vec<Change>,
) -> Result<Vec<Field<'a>>, OptionsError> {
    check_known(Msg::ExecutableBuildOptions, &fields, path)?;
    let (debug, rest): (Vec<Field>, Vec<Field>) = fields.into_iter().partition(|f| f.number == 3);
    let (assignment, mut rest): (Vec<Field>, Vec<Field>) =
        rest.into_iter().partition(|f| f.number == 9);

    let debug_path = wire::join(path, "debug_options");
    let debug_fields = opened(&debug, &debug_path, Msg::DebugOptions, changes)?;
    let debug_fields = reset_debug_options(debug_fields, &debug_path, reset, changes)?;
    rest.push(Field::new_len(3, &wire::write(&debug_fields)));

    if opts.platform == "gpu" && !assignment.is_empty() {
        let da_path = wire::join(path, "device_assignment");
        let refs: Vec<&Field> = assignment.iter().collect();
        let da_fields = merged_fields(&refs, &da_path, Msg::DeviceAssignment)?;
        let offset = assignment.first().map_or(0, |f| f.offset);
        let rebuilt = rebuild_device_assignment(&da_fields, &da_path, offset, changes)?;
        rest.push(Field::new_len(9, &rebuilt));
    } else {
        // Other platforms keep the assignment, byte for byte.
        rest.extend(assignment);
    }
    wire::sort_by_number(&mut rest);
    Ok(rest)
}

/// Sets the `reset` fields to their zero value; each ends up present exactly once.
fn reset_debug_options<'a>(
    fields: Vec<Field<'a>>,
    path: &str,
    reset: &[&str],
    changes: &mut Vec<Change>,
) -> Result<Vec<Field<'a>>, OptionsError> {
    check_known(Msg::DebugOptions, &fields, path)?;
    let mut fields = fields;
    for &name in reset {
        let Some(info) = schema::lookup_name(Msg::DebugOptions, name) else {
            continue; // the table test guarantees all 20 are present
        };
        let old = fields
            .iter()
            .rev()
            .find(|f| f.number == info.number)
            .map(|f| text::render(info.kind, f.payload()));
        fields.retain(|f| f.number != info.number);
        let zero = match info.kind {
            Kind::Str | Kind::Bytes => Field::new_len(info.number, &[]),
            _ => Field::new_varint(info.number, 0),
        };
        let new = text::render(info.kind, zero.payload());
        if old.as_deref() != Some(new.as_str()) {
            changes.push(Change {
                path: wire::join(path, name),
                old,
                new: Some(new),
                note: None,
            });
        }
        fields.push(zero);
    }
    wire::sort_by_number(&mut fields);
    Ok(fields)
}

/// The replacement JAX builds on gpu: `DeviceAssignment.create(arange(R*C).reshape(R, C))`,
/// serialized as XLA does: one `computation_devices` per computation, each listing its
/// replicas' ids, so computation `c` gets `c, C + c, 2C + c, …`.
fn rebuild_device_assignment(
    fields: &[Field],
    path: &str,
    offset: usize,
    changes: &mut Vec<Change>,
) -> Result<Vec<u8>, OptionsError> {
    check_known(Msg::DeviceAssignment, fields, path)?;
    let bad = |reason: String| OptionsError::BadDeviceAssignment {
        reason,
        offset,
        path: path.to_string(),
    };
    let last = |n: u32| {
        fields
            .iter()
            .rev()
            .find(|f| f.number == n)
            .and_then(Field::varint)
            .map_or(0, |v| i64::from(v as i32))
    };
    let (replicas, computations) = (last(1), last(2));
    let mut old: Vec<Vec<i64>> = Vec::new();
    for (i, f) in fields.iter().filter(|f| f.number == 3).enumerate() {
        let p = format!("{path}.computation_devices[{i}]");
        let device = parse_known(f, &p, Msg::ComputationDevice)?;
        old.push(replica_ids(&device, &p)?);
    }
    // XLA's DeviceAssignment::Deserialize refuses these, so JAX would fail before hashing.
    if replicas <= 0 || computations <= 0 {
        return Err(bad(format!(
            "replica_count {replicas} and computation_count {computations} must be positive"
        )));
    }
    if old.len() as i64 != computations {
        return Err(bad(format!(
            "{} computation_devices for computation_count {computations}",
            old.len()
        )));
    }
    if let Some(ids) = old.iter().find(|ids| ids.len() as i64 != replicas) {
        return Err(bad(format!(
            "{} replica_device_ids for replica_count {replicas}",
            ids.len()
        )));
    }
    let (r, c) = (replicas as usize, computations as usize);
    let new: Vec<Vec<i64>> = (0..c)
        .map(|ci| (0..r).map(|ri| (ri * c + ci) as i64).collect())
        .collect();
    if new != old {
        changes.push(Change {
            path: path.to_string(),
            old: Some(matrix(&old, r)),
            new: Some(matrix(&new, r)),
            note: Some("rebuilt for platform gpu"),
        });
    }
    let mut out = Vec::new();
    wire::put_varint(&mut out, 1, replicas as u64);
    wire::put_varint(&mut out, 2, computations as u64);
    for ids in &new {
        let mut packed = Vec::new();
        for &id in ids {
            wire::put_raw_varint(&mut packed, id as u64);
        }
        let mut device = Vec::new();
        wire::put_len(&mut device, 1, &packed);
        wire::put_len(&mut out, 3, &device);
    }
    Ok(out)
}

/// `replica_device_ids` of one computation, packed or not.
fn replica_ids(device: &[Field], path: &str) -> Result<Vec<i64>, OptionsError> {
    let mut ids = Vec::new();
    for f in device.iter().filter(|f| f.number == 1) {
        match f.varint() {
            Some(v) => ids.push(v as i64),
            None => {
                let payload = f.payload();
                let mut pos = 0;
                while pos < payload.len() {
                    let id = wire::packed_varint(payload, &mut pos, f.payload_offset(), path)?;
                    ids.push(id as i64);
                }
            }
        }
    }
    Ok(ids)
}

/// `[[r0c0, r0c1], [r1c0, r1c1]]`: rows are replicas, as in JAX's `(R, C)` array.
fn matrix(by_computation: &[Vec<i64>], replicas: usize) -> String {
    let rows: Vec<String> = (0..replicas)
        .map(|r| {
            let row: Vec<String> = by_computation
                .iter()
                .map(|ids| ids.get(r).map_or_else(|| "?".to_string(), i64::to_string))
                .collect();
            format!("[{}]", row.join(", "))
        })
        .collect();
    format!("[{}]", rows.join(", "))
}

/// Drops excluded entries, keeps the last entry per key, and writes entries sorted by key
/// (what deterministic serialization does), each as `key` then `value`.
fn normalize_env_overrides<'a>(
    entries: Vec<Field<'a>>,
    excluded_flags: &[&str],
    changes: &mut Vec<Change>,
) -> Result<Vec<Field<'a>>, OptionsError> {
    let path = "env_option_overrides";
    let mut by_key: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut input_order = Vec::new();
    for (i, f) in entries.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let fields = parse_known(f, &p, Msg::EnvOptionOverridesEntry)?;
        let key = fields
            .iter()
            .rev()
            .find(|e| e.number == 1)
            .map_or_else(Vec::new, |e| e.payload().to_vec());
        let value: Vec<u8> = fields
            .iter()
            .filter(|e| e.number == 2)
            .flat_map(|e| e.payload().iter().copied())
            .collect();
        input_order.push(key.clone());
        by_key.insert(key, value);
    }
    let mut out = Vec::new();
    let mut kept = Vec::new();
    for (key, value) in by_key {
        let flag = [b"--".as_slice(), &key].concat();
        if excluded_flags.iter().any(|x| x.as_bytes() == flag) {
            changes.push(Change {
                path: format!("{path}[{}]", text::quote(&key)),
                old: Some(option_override_text(&value)),
                new: None,
                note: Some("excluded flag"),
            });
            continue;
        }
        let mut entry = Vec::new();
        wire::put_len(&mut entry, 1, &key);
        wire::put_len(&mut entry, 2, &value);
        out.push(Field::new_len(7, &entry));
        kept.push(key);
    }
    input_order.retain(|k| kept.contains(k));
    input_order.dedup();
    if input_order != kept {
        changes.push(Change {
            path: path.to_string(),
            old: None,
            new: None,
            note: Some("entries reordered by key"),
        });
    }
    Ok(out)
}

/// An OptionOverrideProto value for a change line (`bool_field: true`), best effort.
fn option_override_text(value: &[u8]) -> String {
    let Ok(fields) = wire::parse(value, 0, "", Some(Msg::OptionOverride)) else {
        return "{?}".to_string();
    };
    let parts: Vec<String> = fields
        .iter()
        .map(|f| match schema::lookup(Msg::OptionOverride, f.number) {
            Some(info) => format!("{}: {}", info.name, text::render(info.kind, f.payload())),
            None => format!("#{}", f.number),
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reset_field_is_in_the_table_with_a_zeroable_kind() {
        for name in RESET_DEBUG_OPTIONS {
            let info = schema::lookup_name(Msg::DebugOptions, name).expect(name);
            assert_eq!(info.card, schema::Card::One, "{name}");
            assert!(
                matches!(info.kind, Kind::Bool | Kind::Int32 | Kind::Enum | Kind::Str),
                "{name}"
            );
        }
    }

    #[test]
    fn every_reset_field_is_an_excluded_flag() {
        for name in RESET_DEBUG_OPTIONS {
            let flag = format!("--{name}");
            assert!(EXCLUDED_XLA_FLAGS.contains(&flag.as_str()), "{flag}");
        }
    }

    #[test]
    fn matrix_rows_are_replicas() {
        // R=2, C=3: computation c holds [c, 3 + c]
        let by_computation = vec![vec![0, 3], vec![1, 4], vec![2, 5]];
        assert_eq!(matrix(&by_computation, 2), "[[0, 1, 2], [3, 4, 5]]");
    }
}
