//! A miss explained against the nearest stored entry of the same module.

use mck_key::KeyRecord;
use mck_store::{CacheKey, Digest, ListFilter, Store};

/// Logs, at info, what moved between `record` and the most recently used entry of the same
/// module name (nothing when there is none).
pub fn explain_miss(store: &Store, key: &CacheKey, record: &KeyRecord) {
    let filter = ListFilter {
        limit: Some(1),
        ..ListFilter::module(key.name())
    };
    let Ok(nearest) = store.list(&filter) else {
        return;
    };
    let Some(nearest) = nearest.first() else {
        store.count_miss_reason("new");
        return;
    };
    if nearest.key == key.to_string() && nearest.suspect.is_some() {
        tracing::info!("compiling {key} again: a hit audit found its entry false (suspect)");
        store.count_miss_reason("suspect");
        return;
    }
    if nearest.key == key.to_string() {
        // Else only a remembered failure is both present and a miss: it is being retried.
        tracing::info!("retrying the remembered failure of {key} (--retry_failed_compilation)");
        return;
    }
    let Ok(Some(meta)) = Digest::parse(&nearest.digest).and_then(|d| store.read_metadata(&d))
    else {
        return;
    };
    if let Ok(old) = serde_json::from_value::<KeyRecord>(meta.ingredients) {
        let explanation = mck_key::explain::explain(&old, record);
        store.count_miss_reason(miss_reason(&explanation));
        tracing::info!(
            "nearest entry {}:\n{}",
            nearest.key,
            explanation.to_string().trim_end()
        );
    }
}

/// What moved, in the words of `cache stats`: the first entry that differs.
fn miss_reason(explanation: &mck_key::explain::Explanation) -> &'static str {
    match explanation.differences.first().map(|d| d.name.as_str()) {
        None => "name",
        Some("computation") => "computation",
        Some("jax_lib version" | "backend version") => "compiler",
        Some("XLA flags") => "flag",
        Some("compile_options") => "option",
        Some("accelerator_config") => "device",
        Some(_) => "other",
    }
}
