//! A miss explained against the nearest stored entry of the same module: logged, counted by
//! reason in `cache stats`, and left in the history with its cause (what `report` groups by).

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
    let cause = find_cause(store, key, record)?;
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

fn find_cause(store: &Store, key: &CacheKey, record: &KeyRecord) -> Option<MissCause> {
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
    let meta = Digest::parse(&nearest.digest)
        .and_then(|d| store.read_metadata(&d))
        .ok()??;
    let old = serde_json::from_value::<KeyRecord>(meta.ingredients).ok()?;
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
