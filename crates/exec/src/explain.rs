//! A miss explained against the nearest stored entry of the same module: logged, counted by
//! reason in `cache stats`, and left in the history with its cause (what `report` groups by).

use std::sync::Arc;

use mck_key::KeyRecord;
use mck_key::explain::Explanation;
use mck_store::history::What;
use mck_store::{CacheKey, Digest, ListFilter, Store};

/// Why a key missed, as a report groups it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissCause {
    /// A stable code (`new_program`, `compiler_version`, `xla_build`, `xla_flag`,
    /// `compile_option`, `devices`, `program_changed`, `name`, `suspect`, `retry_failed`,
    /// `other`).
    pub code: &'static str,
    /// What moved, in one line.
    pub detail: String,
    /// The full explanation against the nearest entry, when there was one to compare.
    pub explanation: Option<String>,
}

/// Explains the miss of `key` (whose ingredients are `record`): logs it at info, counts its
/// reason and records its cause in the history. `None` when the nearest entry cannot be read.
pub fn explain_miss(store: &Store, key: &CacheKey, record: &KeyRecord) -> Option<MissCause> {
    explain_miss_recalling(store, key, record, |_| None)
}

/// As [`explain_miss`], with the nearest entry's record taken from `recall` (by the entry's
/// digest) when it knows it, rather than read from the entry's file: an embedder explaining
/// its own misses one after another usually stored that entry itself moments before.
pub fn explain_miss_recalling(
    store: &Store,
    key: &CacheKey,
    record: &KeyRecord,
    recall: impl Fn(&str) -> Option<Arc<KeyRecord>>,
) -> Option<MissCause> {
    let cause = find_cause(store, key, record, recall)?;
    store.count_miss_reason(stats_reason(cause.code));
    store.record_event(What::Cause {
        key: key.to_string(),
        cause: cause.code.to_owned(),
        detail: cause.detail.clone(),
    });
    match &cause.explanation {
        Some(text) => tracing::info!("{text}"),
        None => tracing::info!("miss of {key}: {}", cause.detail),
    }
    Some(cause)
}

fn find_cause(
    store: &Store,
    key: &CacheKey,
    record: &KeyRecord,
    recall: impl Fn(&str) -> Option<Arc<KeyRecord>>,
) -> Option<MissCause> {
    // Two: the first may be this key's own entry, stored meanwhile by the compile this miss
    // started (a miss explained on a thread) or by another process.
    let filter = ListFilter {
        limit: Some(2),
        ..ListFilter::module(key.name())
    };
    let listed = store.list(&filter).ok()?;
    let plain = |code, detail: String| {
        Some(MissCause {
            code,
            detail,
            explanation: None,
        })
    };
    let mut nearest = None;
    for entry in &listed {
        if entry.key != key.to_string() {
            nearest = Some(entry);
            break;
        }
        if entry.suspect.is_some() {
            return plain(
                "suspect",
                "a hit audit found its entry false (suspect)".into(),
            );
        }
        if entry.state == mck_store::EntryState::Failed {
            // A remembered failure present at a miss is being retried.
            return plain(
                "retry_failed",
                "retrying the remembered failure (--retry_failed_compilation)".into(),
            );
        }
    }
    let Some(nearest) = nearest else {
        return plain(
            "new_program",
            format!("no stored entry of module {}", key.name()),
        );
    };
    let old = match recall(&nearest.digest) {
        Some(old) => old,
        None => {
            let meta = Digest::parse(&nearest.digest)
                .and_then(|d| store.read_metadata(&d))
                .ok()??;
            Arc::new(serde_json::from_value::<KeyRecord>(meta.ingredients).ok()?)
        }
    };
    let explanation = mck_key::explain::explain(&old, record);
    let (code, detail) = what_moved(&explanation);
    Some(MissCause {
        code,
        detail,
        explanation: Some(format!(
            "nearest entry {}:\n{}",
            nearest.key,
            explanation.to_string().trim_end()
        )),
    })
}

/// The first ingredient that moved, as a cause code and a line saying what moved in it.
fn what_moved(explanation: &Explanation) -> (&'static str, String) {
    if let Some(line) = explanation.xla_build_line() {
        return ("xla_build", line);
    }
    let Some(first) = explanation.differences.first() else {
        return ("name", "only the module name differs".into());
    };
    let said = first.details.first().map(|d| d.trim());
    let code = match first.name.as_str() {
        "computation" => "program_changed",
        "jax_lib version" | "backend version" => "compiler_version",
        "XLA flags" => "xla_flag",
        "compile_options" => "compile_option",
        "accelerator_config" => "devices",
        _ => "other",
    };
    let detail = match (code, said) {
        ("xla_flag", Some(line)) => flag_change(line),
        (_, Some(line)) => format!("{}: {line}", first.name),
        (_, None) => format!("{} changed", first.name),
    };
    (code, detail)
}

/// `- f (only in A)` / `+ f (only in B)` / `~ f: a → b` in the words of a report.
fn flag_change(line: &str) -> String {
    if let Some(rest) = line.strip_prefix("- ") {
        format!("XLA flag removed: {}", bare(rest))
    } else if let Some(rest) = line.strip_prefix("+ ") {
        format!("XLA flag added: {}", bare(rest))
    } else if let Some(rest) = line.strip_prefix("~ ") {
        let name = rest.split(':').next().unwrap_or(rest);
        format!("XLA flag changed: {name}")
    } else {
        format!("XLA flags: {line}")
    }
}

fn bare(flag: &str) -> &str {
    flag.trim_end_matches(" (only in A)")
        .trim_end_matches(" (only in B)")
}

/// The reason `cache stats` counts (its older, coarser names).
fn stats_reason(code: &str) -> &'static str {
    match code {
        "new_program" => "new",
        "suspect" => "suspect",
        "retry_failed" => "retry",
        "program_changed" => "computation",
        "compiler_version" => "compiler",
        "xla_flag" => "flag",
        "compile_option" => "option",
        "devices" => "device",
        "xla_build" => "xla_build",
        "name" => "name",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(key: &str, build: &str) -> KeyRecord {
        KeyRecord {
            format: 1,
            key: key.to_owned(),
            module_name: "jit_f".to_owned(),
            sha256: key.rsplit('-').next().unwrap_or_default().to_owned(),
            recipe: "r".to_owned(),
            entries: Vec::new(),
            xla_build: Some(build.to_owned()),
        }
    }

    /// The nearest entry's record comes from `recall` when it knows that entry's digest, and
    /// from the entry's file otherwise: the two differ here (as they never do in use) so that
    /// the explanation shows which was read.
    #[test]
    fn the_nearest_record_is_recalled_by_digest_before_its_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let settings = mck_store::Settings {
            cache_dir: dir.path().to_owned(),
            ..mck_store::Settings::default()
        };
        let store = Store::open(&settings).unwrap();
        let stored = CacheKey::parse(&format!("jit_f-{}", "a".repeat(64))).unwrap();
        let missed = CacheKey::parse(&format!("jit_f-{}", "b".repeat(64))).unwrap();
        let on_file = record(&stored.to_string(), "sha256:old");
        store
            .put(&stored, b"x", &serde_json::to_value(&on_file).unwrap())
            .unwrap();
        let now = record(&missed.to_string(), "sha256:new");

        let read = explain_miss(&store, &missed, &now).unwrap();
        assert_eq!(read.code, "xla_build", "{read:?}");

        let asked = std::sync::Mutex::new(Vec::new());
        let recalled = explain_miss_recalling(&store, &missed, &now, |digest| {
            asked.lock().unwrap().push(digest.to_owned());
            Some(Arc::new(record(&stored.to_string(), "sha256:new")))
        })
        .unwrap();
        assert_eq!(recalled.code, "name", "{recalled:?}");
        assert_eq!(*asked.lock().unwrap(), [stored.digest().as_str()]);

        let unknown = explain_miss_recalling(&store, &missed, &now, |_| None).unwrap();
        assert_eq!(unknown.code, "xla_build", "{unknown:?}");
    }

    #[test]
    fn flag_changes_are_named_with_their_direction() {
        assert_eq!(
            flag_change("+ --xla_cpu_fast (only in B)"),
            "XLA flag added: --xla_cpu_fast"
        );
        assert_eq!(
            flag_change("- --xla_a=1 (only in A)"),
            "XLA flag removed: --xla_a=1"
        );
        assert_eq!(
            flag_change("~ --xla_b: --xla_b=1 → --xla_b=2"),
            "XLA flag changed: --xla_b"
        );
    }
}
