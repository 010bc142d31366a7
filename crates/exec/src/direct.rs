//! Direct mode: a manifest from the raw input (and everything else the exec key covers, see
//! [`crate::direct_key`]) to the canonical key, so exec of unchanged bytes skips parsing.
//! A manifest is a store entry (`direct-<64 hex>`, a small JSON artefact): verified, evicted
//! and shared through the remote tier like any entry. It only names a key; what is served is
//! that key's own entry, so a manifest never yields a hit the canonical path would not, and a
//! manifest whose target is gone is a miss.

use crate::audit::{audit_hit, with_audit};
use crate::compiler::OUTPUT_MODE;
use crate::error::ExecError;
use crate::request::{AtAddress, ExecRequest};
use crate::run::{Finished, finish, replay};
use crate::site::Site;
use mck_key::{KeyRecord, Readable};
use mck_remote::{Served, Tiered};
use mck_store::{CacheKey, Lookup, Streamed};
use serde::{Deserialize, Serialize};

/// A manifest's artefact.
#[derive(Serialize, Deserialize)]
struct Manifest {
    /// The canonical key.
    key: String,
    /// Its record (without the canonical text), for an address's fingerprint check.
    record: KeyRecord,
}

/// Serves `request` through the manifest under `manifest`: `None` when there is no usable
/// manifest or its target entry is gone (then take the canonical path). `at` gives the
/// address for the canonical key's record, if the result is to be recorded at one.
pub fn run_direct<E: From<ExecError>>(
    store: &Tiered,
    request: &ExecRequest,
    manifest: &CacheKey,
    at: impl FnOnce(&KeyRecord) -> Result<Option<AtAddress>, E>,
) -> Result<Option<Finished>, E> {
    let Lookup::Hit(found) = store.get(manifest).map_err(ExecError::from)? else {
        return Ok(None);
    };
    let Some((key, record)) = parse(&found.bytes) else {
        tracing::warn!("ignoring the unreadable direct-mode manifest {manifest}");
        return Ok(None);
    };
    let at = at(&record)?;
    if let Some(at) = &at {
        store.local().history().set_run(&at.run);
    }
    let site = match at {
        Some(at) => match Site::check(store.local(), at, &key, &record, request.lock_timeout)? {
            Ok(site) => site,
            Err(conflict) => return Ok(Some(Finished::Conflict(conflict))),
        },
        None => None,
    };
    // Streamed straight to the output: a hit never holds the artefact whole.
    let served = match store
        .get_to(&key, &request.output, OUTPUT_MODE)
        .map_err(ExecError::from)?
    {
        Streamed::Written {
            key, ingredients, ..
        } => Served::Written { key, ingredients },
        Streamed::Failed(f) => Served::CachedFailure(f),
        Streamed::Miss => {
            tracing::info!("the manifest {manifest} names {key}, which is gone");
            if let Some(site) = site {
                site.abandon();
            }
            return Ok(None);
        }
    };
    tracing::info!("direct hit: {manifest} → {key}");
    store.local().record_direct_hit();
    let ingredients = match &served {
        Served::Written { ingredients, .. } => {
            let audit = audit_hit(store, request, &key, ingredients)?;
            with_audit(ingredients.clone(), &key, audit)
        }
        Served::CachedFailure(f) => f.ingredients.clone(),
        _ => unreachable!("streamed, not compiled"),
    };
    let code = replay(&served, request)?;
    Ok(Some(finish(store, site, &key, &ingredients, code, served)?))
}

/// After the canonical path left an entry under `record`'s key, points `manifest` at it.
/// Failing to store a manifest is logged: the result is still good.
pub fn remember_direct(store: &Tiered, manifest: &CacheKey, record: &KeyRecord) {
    let mut record = record.clone();
    if let Some(Readable::Computation { text, .. }) =
        record.entries.first_mut().map(|e| &mut e.readable)
    {
        *text = None;
    }
    let key = format!("{}-{}", record.module_name, record.sha256);
    let manifest_json = Manifest { key, record };
    let put = serde_json::to_vec(&manifest_json)
        .map_err(|e| e.to_string())
        .and_then(|bytes| {
            let why = serde_json::json!({ "direct_manifest_for": manifest_json.key });
            store.put(manifest, &bytes, &why).map_err(|e| e.to_string())
        });
    if let Err(e) = put {
        tracing::warn!("could not store the direct-mode manifest {manifest}: {e}");
    }
}

/// The canonical key and record a manifest names; `None` if they do not agree.
fn parse(bytes: &[u8]) -> Option<(CacheKey, KeyRecord)> {
    let m: Manifest = serde_json::from_slice(bytes).ok()?;
    let key = CacheKey::parse(&m.key).ok()?;
    (key.digest().as_str() == m.record.sha256 && key.name() == m.record.module_name)
        .then_some((key, m.record))
}
