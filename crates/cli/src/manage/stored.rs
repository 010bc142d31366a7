//! A stored entry's record, found by key (`<name>-<64 hex>`) or by address: `cache show` (with
//! the mark of a suspect entry) and `why KEY1 KEY2`.

use super::output::utc;
use super::show_exec::ExecShown;
use crate::error::CliError;
use anyhow::anyhow;
use mck_key::{KeyRecord, Readable};
use mck_runs::Registry;
use mck_settings::RegistrySettings;
use mck_store::{CacheKey, Digest, EntryMeta, EntryState, Store, Suspect};
use std::fmt::Write as _;

/// Version of the `cache show --json` shape.
pub const SHOW_SCHEMA: &str = "mlir-cache-key.entry.v1";

/// Entries of one module looked through for a key stored under its XLA build's own place.
const MAX_BUILD_VARIANTS_SCANNED: usize = 1000;

/// The entry `what` names: a key, a bare 64-hex digest, or an address holding one. A JAX key
/// whose entries the Python package keeps per XLA build names the most recently used of them.
pub fn find(
    store: &Store,
    registry: &RegistrySettings,
    what: &str,
) -> Result<Option<EntryMeta>, CliError> {
    let digest = if let Ok(key) = CacheKey::parse(what) {
        if let Some(meta) = store.read_metadata(key.digest())? {
            return Ok(Some(meta));
        }
        return stored_per_build(store, &key);
    } else if let Ok(d) = Digest::parse(what) {
        Some(d)
    } else {
        match Registry::open(store, registry)?.address(what)? {
            Some(entry) => Some(Digest::parse(&entry.digest)?),
            None => None,
        }
    };
    match digest {
        Some(d) => Ok(store.read_metadata(&d)?),
        None => Ok(None),
    }
}

/// The most recently used entry of `key`'s module whose record is `key`'s: where the Python
/// package keeps it for one XLA build (`python/src/xla_build.rs`).
fn stored_per_build(store: &Store, key: &CacheKey) -> Result<Option<EntryMeta>, CliError> {
    let filter = mck_store::ListFilter {
        limit: Some(MAX_BUILD_VARIANTS_SCANNED),
        ..mck_store::ListFilter::module(key.name())
    };
    for entry in store.list(&filter)? {
        let Some(meta) = store.read_metadata(&Digest::parse(&entry.digest)?)? else {
            continue;
        };
        let recorded = meta.ingredients.get("sha256").and_then(|s| s.as_str());
        if recorded == Some(key.digest().as_str()) && meta.ingredients.get("xla_build").is_some() {
            return Ok(Some(meta));
        }
    }
    Ok(None)
}

/// As [`find`], an error when nothing is stored there.
pub fn require(
    store: &Store,
    registry: &RegistrySettings,
    what: &str,
) -> Result<EntryMeta, CliError> {
    find(store, registry, what)?.ok_or_else(|| {
        CliError::no_input(anyhow!(
            "{what} is neither a stored key nor an address of the cache {}",
            store.layout().root().display()
        ))
    })
}

/// The key record kept with an entry.
pub fn record(meta: &EntryMeta) -> Result<KeyRecord, CliError> {
    serde_json::from_value(meta.ingredients.clone()).map_err(|e| {
        CliError::input(anyhow!(
            "the entry {} keeps no key record (stored by `cache put` without --record?): {e}",
            meta.key
        ))
    })
}

#[derive(serde::Serialize)]
struct Shown<'a> {
    schema: &'static str,
    #[serde(flatten)]
    meta: &'a EntryMeta,
    /// An exec entry's compiler, arguments, environment and input.
    #[serde(skip_serializing_if = "Option::is_none")]
    exec: Option<ExecShown>,
    /// Why a hit audit stopped serving the entry (never served again), if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    suspect: Option<&'a Suspect>,
}

/// `cache show` as JSON.
pub fn json(meta: &EntryMeta, suspect: Option<&Suspect>) -> Result<String, CliError> {
    super::output::json_text(&Shown {
        schema: SHOW_SCHEMA,
        meta,
        exec: ExecShown::of(&meta.ingredients),
        suspect,
    })
}

/// The marker that stops `meta`'s entry from being served, if one does.
pub fn suspect_of(store: &Store, meta: &EntryMeta) -> Result<Option<Suspect>, CliError> {
    Ok(match CacheKey::parse(&meta.key) {
        Ok(key) => store.suspect(&key)?,
        Err(_) => None,
    })
}

/// `cache show` as text: the entry, an exec entry's compilation, then its record's trace.
pub fn text(meta: &EntryMeta, suspect: Option<&Suspect>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "key          {}", meta.key);
    let _ = writeln!(
        out,
        "state        {}",
        match meta.state {
            EntryState::Ok => "ok".to_owned(),
            EntryState::Failed => format!(
                "failed (exit status {})",
                meta.failure
                    .as_ref()
                    .and_then(|f| f.exit_status)
                    .map_or("?".to_owned(), |s| s.to_string())
            ),
        }
    );
    let _ = writeln!(
        out,
        "artefact     {} bytes, sha256 {}",
        meta.artefact_size, meta.payload_sha256
    );
    let _ = writeln!(out, "created      {}", utc(meta.created_ms));
    if let Some(suspect) = suspect {
        let _ = writeln!(
            out,
            "suspect      not served since {}: {}",
            utc(suspect.marked_ms),
            suspect.reason.replace('\n', "\n             ")
        );
    }
    if let Some(exec) = ExecShown::of(&meta.ingredients) {
        out.push_str(&exec.text());
    }
    match serde_json::from_value::<KeyRecord>(meta.ingredients.clone()) {
        Ok(record) => {
            out.push_str("ingredients:\n");
            out.push_str(&explain_lines(&record));
        }
        Err(_) if meta.ingredients.is_null() => out.push_str("ingredients: none recorded\n"),
        Err(_) => {
            out.push_str("ingredients:\n");
            out.push_str(&serde_json::to_string_pretty(&meta.ingredients).unwrap_or_default());
            out.push('\n');
        }
    }
    out
}

/// JAX's log lines for a key: flag decisions in hash order, then the trace.
pub fn explain_lines(record: &KeyRecord) -> String {
    let mut out = String::new();
    if let Some(Readable::Flags { included, excluded }) =
        record.entry("XLA flags").map(|e| &e.readable)
    {
        let mut decisions: Vec<(&String, bool)> = included
            .iter()
            .map(|f| (f, true))
            .chain(excluded.iter().map(|f| (f, false)))
            .collect();
        decisions.sort();
        for (flag, kept) in decisions {
            let verb = if kept { "Including" } else { "Not including" };
            out.push_str(&format!("{verb} XLA flag in cache key: {flag}\n"));
        }
    }
    for line in record.trace_lines() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}
