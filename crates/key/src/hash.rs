//! Feeding the eight entries into one SHA-256, recording as we go, as one JAX release's
//! recipe says.

use super::compile_options::{self, NormalizeOptions};
use super::flags;
use super::recipe::{AcceleratorHash, JaxRecipe};
use super::record::{ENTRY_NAMES, EntryRecord, KeyRecord, RECORD_FORMAT, Readable};
use super::strings::python_strip;
use super::{Accelerator, CompileOptionsInput, Computation, KeyError, KeyInputs};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

/// Feeds entries into the running hash and a fresh per-entry hash at once,
/// so the trace costs one extra SHA-256 pass and no second canonicalization.
struct Feeder {
    running: Sha256,
    entries: Vec<EntryRecord>,
}

impl Feeder {
    fn entry<E>(
        &mut self,
        feed: impl FnOnce(&mut dyn FnMut(&[u8])) -> Result<Readable, E>,
    ) -> Result<(), E> {
        let mut alone = Sha256::new();
        let running = &mut self.running;
        let readable = feed(&mut |chunk| {
            running.update(chunk);
            alone.update(chunk);
        })?;
        let name = ENTRY_NAMES[self.entries.len()];
        self.entries.push(EntryRecord {
            name: name.to_string(),
            entry_sha256: hex::encode(alone.finalize()),
            running_sha256: hex::encode(self.running.clone().finalize()),
            readable,
        });
        Ok(())
    }
}

/// Feeds `text` as JAX's `_hash_string` does: UTF-8, Python-stripped.
fn feed_trimmed(sink: &mut dyn FnMut(&[u8]), text: &str) {
    sink(python_strip(text.as_bytes()));
}

/// How much of the readable record [`compute_with`] builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// Everything, the compile options' text view included.
    Full,
    /// The compile options' text view left empty: it is `compile_options::to_text` of the
    /// entry's `hashed` bytes, and `why` reads `hashed`. For callers that key many programs and
    /// keep every record (the JAX integration), where the text is most of the record's size.
    WithoutOptionsText,
}

/// Computes the key of `computation` under `inputs` as `recipe`'s JAX releases do, with its
/// full record. The computation must already be canonicalized the recipe's way.
pub fn compute(
    computation: Computation<'_>,
    inputs: &KeyInputs,
    recipe: &JaxRecipe,
) -> Result<KeyRecord, KeyError> {
    compute_with(computation, inputs, recipe, Detail::Full)
}

/// [`compute`], with as much of the readable record as `detail` asks for. The key is the same.
pub fn compute_with(
    computation: Computation<'_>,
    inputs: &KeyInputs,
    recipe: &JaxRecipe,
    detail: Detail,
) -> Result<KeyRecord, KeyError> {
    let mut feeder = Feeder {
        running: Sha256::new(),
        entries: Vec::with_capacity(ENTRY_NAMES.len()),
    };

    feeder.entry(|sink| -> Result<_, KeyError> {
        let mut bytes = 0u64;
        let text = match computation {
            Computation::Module {
                module,
                record_text,
            } => {
                module
                    .write_to(&mut |chunk| {
                        bytes += chunk.len() as u64;
                        sink(chunk);
                    })
                    .map_err(KeyError::Computation)?;
                record_text.then(|| module.text())
            }
            Computation::Bytes(raw) => {
                bytes = raw.len() as u64;
                sink(raw);
                None
            }
        };
        Ok(Readable::Computation { bytes, text })
    })?;

    feeder.entry(|sink| -> Result<_, KeyError> {
        // JAX hashes the version untrimmed.
        sink(inputs.compiler_version.as_bytes());
        Ok(Readable::CompilerVersion {
            version: inputs.compiler_version.clone(),
        })
    })?;

    feeder.entry(|sink| -> Result<_, KeyError> {
        feed_trimmed(sink, &inputs.platform);
        feed_trimmed(sink, &inputs.platform_version);
        if recipe.hashes_runtime_type {
            feed_trimmed(sink, &inputs.runtime_type);
        }
        Ok(Readable::Backend {
            platform: inputs.platform.clone(),
            platform_version: inputs.platform_version.clone(),
            runtime_type: recipe
                .hashes_runtime_type
                .then(|| inputs.runtime_type.clone()),
        })
    })?;

    feeder.entry(|sink| -> Result<_, KeyError> {
        let selection = flags::select(&inputs.flags, recipe.excluded_xla_flags);
        for flag in &selection.included {
            feed_trimmed(sink, flag);
        }
        Ok(Readable::Flags {
            included: selection.included,
            excluded: selection.excluded,
        })
    })?;

    feeder.entry(|sink| compile_options_entry(sink, inputs, recipe, detail))?;

    feeder.entry(|sink| accelerator_entry(sink, &inputs.accelerator, recipe))?;

    feeder.entry(|sink| -> Result<_, KeyError> {
        feed_trimmed(sink, &inputs.compression);
        Ok(Readable::Compression {
            name: inputs.compression.clone(),
        })
    })?;

    feeder.entry(|sink| -> Result<_, KeyError> {
        feed_trimmed(sink, &inputs.custom_hook);
        Ok(Readable::CustomHook {
            value: inputs.custom_hook.clone(),
        })
    })?;

    let sha256 = feeder
        .entries
        .last()
        .map(|e| e.running_sha256.clone())
        .unwrap_or_default();
    Ok(KeyRecord {
        format: RECORD_FORMAT,
        key: format!("{}-{sha256}", inputs.module_name),
        module_name: inputs.module_name.clone(),
        sha256,
        recipe: recipe.name.to_string(),
        entries: feeder.entries,
        xla_build: None,
    })
}

/// Entry 6: the topology in the recipe's form, or (when the backend has none) the device kinds.
fn accelerator_entry(
    sink: &mut dyn FnMut(&[u8]),
    accelerator: &Accelerator,
    recipe: &JaxRecipe,
) -> Result<Readable, KeyError> {
    let mismatch = |given: &str| KeyError::AcceleratorForm {
        recipe: recipe.name,
        given: given.to_string(),
        wanted: recipe.accelerator,
    };
    Ok(match accelerator {
        Accelerator::TopologyFingerprint(fingerprint) => {
            if recipe.accelerator != AcceleratorHash::Fingerprint {
                return Err(mismatch("a topology fingerprint"));
            }
            sink(&fingerprint.to_be_bytes());
            Readable::Accelerator {
                topology_fingerprint: Some(*fingerprint),
                topology_serialized: None,
                device_kinds: Vec::new(),
            }
        }
        Accelerator::TopologySerialized(bytes) => {
            if recipe.accelerator != AcceleratorHash::Serialized {
                return Err(mismatch("a serialized topology"));
            }
            sink(bytes);
            Readable::Accelerator {
                topology_fingerprint: None,
                topology_serialized: Some(STANDARD.encode(bytes)),
                device_kinds: Vec::new(),
            }
        }
        Accelerator::DeviceKinds(kinds) => {
            for kind in kinds {
                feed_trimmed(sink, kind);
            }
            Readable::Accelerator {
                topology_fingerprint: None,
                topology_serialized: None,
                device_kinds: kinds.clone(),
            }
        }
    })
}

fn compile_options_entry(
    sink: &mut dyn FnMut(&[u8]),
    inputs: &KeyInputs,
    recipe: &JaxRecipe,
    detail: Detail,
) -> Result<Readable, KeyError> {
    let error = |input: &str| {
        let input = input.to_string();
        move |source| KeyError::CompileOptions { input, source }
    };
    Ok(match &inputs.compile_options {
        CompileOptionsInput::None => Readable::CompileOptions {
            format: "none".into(),
            hashed: String::new(),
            text: Vec::new(),
            changes: Vec::new(),
        },
        CompileOptionsInput::Proto { name, bytes } => {
            let (normalized, readable) =
                proto_options(bytes, &inputs.platform, recipe, detail).map_err(error(name))?;
            sink(&normalized);
            readable
        }
        CompileOptionsInput::Json {
            name,
            bytes,
            ignored_keys,
        } => {
            let canonical =
                compile_options::canonical_json(bytes, ignored_keys).map_err(error(name))?;
            sink(&canonical);
            Readable::CompileOptions {
                format: "json".into(),
                hashed: String::from_utf8_lossy(&canonical).into_owned(),
                text: Vec::new(),
                changes: ignored_keys
                    .iter()
                    .map(|k| match ignored_value(bytes, k) {
                        Some(value) => format!("ignored key {k}: {value}"),
                        None => format!("ignored key {k}"),
                    })
                    .collect(),
            }
        }
    })
}

/// The value at dotted `path` of JSON `bytes`, compact and bounded, for the record: what was
/// left out of the key is shown, not hashed.
fn ignored_value(bytes: &[u8], path: &str) -> Option<String> {
    let root: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let value = path.split('.').try_fold(&root, |v, part| v.get(part))?;
    let mut text = value.to_string();
    if text.len() > 500 {
        let cut = (0..=500)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text.truncate(cut);
        text.push('…');
    }
    Some(text)
}

/// The normalized bytes of serialized compile options and their readable entry, remembered for
/// the last few distinct inputs: a process keys many programs with the same options, and the
/// normalization and its text cost more than hashing a small module. The entry is as `detail`
/// asks: the text view is not even copied when left out.
fn proto_options(
    raw: &[u8],
    platform: &str,
    recipe: &JaxRecipe,
    detail: Detail,
) -> Result<(Vec<u8>, Readable), compile_options::OptionsError> {
    type Memo = Vec<(Vec<u8>, String, &'static str, Vec<u8>, Readable)>;
    const REMEMBERED: usize = 8;
    static MEMO: std::sync::Mutex<Memo> = std::sync::Mutex::new(Vec::new());
    if let Ok(memo) = MEMO.lock()
        && let Some((_, _, _, bytes, readable)) = memo
            .iter()
            .find(|(r, p, n, _, _)| r == raw && p == platform && *n == recipe.name)
    {
        return Ok((bytes.clone(), as_detailed(readable, detail)));
    }
    let normalized = compile_options::normalize_with(
        raw,
        &NormalizeOptions { platform },
        recipe.reset_debug_options,
        recipe.excluded_xla_flags,
    )?;
    let text = compile_options::to_text(&normalized.bytes)?;
    let readable = Readable::CompileOptions {
        format: "proto".into(),
        hashed: STANDARD.encode(&normalized.bytes),
        text: text.lines().map(str::to_string).collect(),
        changes: normalized.changes.iter().map(ToString::to_string).collect(),
    };
    if let Ok(mut memo) = MEMO.lock() {
        if memo.len() == REMEMBERED {
            memo.remove(0);
        }
        memo.push((
            raw.to_vec(),
            platform.to_string(),
            recipe.name,
            normalized.bytes.clone(),
            readable.clone(),
        ));
    }
    Ok((normalized.bytes, as_detailed(&readable, detail)))
}

/// A copy of a compile-options entry with what `detail` keeps.
fn as_detailed(readable: &Readable, detail: Detail) -> Readable {
    match (readable, detail) {
        (
            Readable::CompileOptions {
                format,
                hashed,
                changes,
                ..
            },
            Detail::WithoutOptionsText,
        ) => Readable::CompileOptions {
            format: format.clone(),
            hashed: hashed.clone(),
            text: Vec::new(),
            changes: changes.clone(),
        },
        _ => readable.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTIONS: &[u8] =
        include_bytes!("../../../tests/data/parity/07a_gpu_assign_1/compile_options.pb");

    #[test]
    fn remembered_options_equal_fresh_ones_and_keep_platforms_apart() {
        let fresh = |platform: &str| {
            let n = compile_options::normalize(OPTIONS, &NormalizeOptions { platform }).unwrap();
            n.bytes
        };
        for _ in 0..2 {
            for platform in ["gpu", "cpu"] {
                let (bytes, readable) =
                    proto_options(OPTIONS, platform, JaxRecipe::newest(), Detail::Full).unwrap();
                assert_eq!(bytes, fresh(platform), "{platform}");
                let Readable::CompileOptions { hashed, .. } = readable else {
                    panic!("not a compile-options entry");
                };
                assert_eq!(STANDARD.decode(hashed).unwrap(), bytes);
            }
        }
        // The gpu rebuild of the device assignment makes the two platforms differ.
        assert_ne!(fresh("gpu"), fresh("cpu"));
        let mut other = OPTIONS.to_vec();
        other.truncate(other.len() / 2);
        assert!(
            proto_options(&other, "gpu", JaxRecipe::newest(), Detail::Full).is_err(),
            "a cut proto is not a remembered one"
        );
    }

    #[test]
    fn a_record_without_the_options_text_has_the_same_key_and_text_rebuilt_from_hashed() {
        let options = |record: &KeyRecord| match &record.entries[4].readable {
            Readable::CompileOptions { hashed, text, .. } => (hashed.clone(), text.clone()),
            other => panic!("entry 4 is {other:?}"),
        };
        let inputs = KeyInputs {
            compile_options: CompileOptionsInput::Proto {
                name: "options".into(),
                bytes: OPTIONS.to_vec(),
            },
            platform: "gpu".into(),
            ..KeyInputs::default()
        };
        for _ in 0..2 {
            // Fresh, then remembered.
            let computation = || Computation::Bytes(b"module");
            let full = compute(computation(), &inputs, JaxRecipe::newest()).unwrap();
            let lean = compute_with(
                computation(),
                &inputs,
                JaxRecipe::newest(),
                Detail::WithoutOptionsText,
            )
            .unwrap();
            assert_eq!(lean.key, full.key);
            let ((hashed, text), (lean_hashed, lean_text)) = (options(&full), options(&lean));
            assert_eq!(lean_hashed, hashed);
            assert!(lean_text.is_empty());
            let rebuilt = compile_options::to_text(&STANDARD.decode(hashed).unwrap()).unwrap();
            assert_eq!(rebuilt.lines().collect::<Vec<_>>(), text);
            assert!(text.len() > 10, "the full record has the text view");
        }
    }
}
