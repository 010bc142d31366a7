//! One compilation through the cache: replay, or compile once and store; at an address, the
//! fingerprint check before and the record after.

use crate::audit::{audit_hit, with_audit};
use crate::compiler::{self, OUTPUT_MODE, Outcome};
use crate::compiler_check;
use crate::error::ExecError;
use crate::explain::explain_miss;
use crate::request::{AtAddress, ExecRequest};
use crate::site::{ConflictReport, Site};
use mck_key::{CanonicalSource, KeyRecord, Readable};
use mck_remote::{Compiled, Served, Tiered};
use mck_store::{CacheKey, Digest, Streamed};
use std::io::Write as _;

/// How an exec ended.
#[derive(Debug)]
pub enum Finished {
    /// The compiler's status (0 for a hit; a replayed failure's own status; 128 + signal when
    /// killed), and how the result was served.
    Status { code: i32, served: Served },
    /// The address holds another fingerprint: nothing was compiled or overwritten.
    Conflict(ConflictReport),
}

/// Compiles `request` through `store` under `record`'s key, recording the result at `at`.
pub fn run(
    store: &Tiered,
    request: &ExecRequest,
    record: &KeyRecord,
    at: Option<AtAddress>,
) -> Result<Finished, ExecError> {
    run_with_text(store, request, record, at, None)
}

/// As [`run`], for a `record` computed without the canonical text: `text` renders it only
/// on a miss, to explain it and to keep it in the new entry (a hit never renders it). At an
/// address it is rendered first: a conflict's explanation shows the text.
pub fn run_with_text(
    store: &Tiered,
    request: &ExecRequest,
    record: &KeyRecord,
    at: Option<AtAddress>,
    text: Option<&dyn CanonicalSource>,
) -> Result<Finished, ExecError> {
    // At an address the text is rendered now (for a conflict's explanation), else on a miss.
    let (addressed, text) = match (&at, text) {
        (Some(_), Some(source)) => (Some(with_text(record, source)), None),
        (_, text) => (None, text),
    };
    let record = addressed.as_ref().unwrap_or(record);
    let key = CacheKey::from_parts(&record.module_name, Digest::parse(&record.sha256)?)?;
    if let Some(at) = &at {
        store.local().history().set_run(&at.run);
    }
    let site = match at {
        Some(at) => match Site::check(store.local(), at, &key, record, request.lock_timeout)? {
            Ok(site) => site,
            Err(conflict) => return Ok(Finished::Conflict(conflict)),
        },
        None => None,
    };
    let mut compiler_status = 1;
    // A hit is streamed straight to the output; only a miss goes on to compile.
    let found = match store.get_to(&key, &request.output, OUTPUT_MODE)? {
        Streamed::Written {
            key, ingredients, ..
        } => Some(Served::Written { key, ingredients }),
        Streamed::Failed(f) => Some(Served::CachedFailure(f)),
        Streamed::Miss => None,
    };
    let audit = match &found {
        Some(Served::Written { key, ingredients }) => audit_hit(store, request, key, ingredients)?,
        _ => None,
    };
    // The record as stored and committed: with the canonical text only when a miss renders it.
    let (served, ingredients) = match found {
        Some(found) => (found, with_audit(ingredients_of(record)?, &key, audit)),
        None => {
            let full = text.map(|source| with_text(record, source));
            let ingredients = stored_ingredients(full.as_ref().unwrap_or(record), request)?;
            let compiled = compile(
                store,
                request,
                &key,
                full.as_ref().unwrap_or(record),
                &ingredients,
                &mut compiler_status,
            )?;
            (compiled, ingredients)
        }
    };
    let code = match &served {
        Served::Fresh(Compiled::Abandoned(_)) => compiler_status,
        served => replay(served, request)?,
    };
    finish(store, site, &key, &ingredients, code, served)
}

fn ingredients_of(record: &KeyRecord) -> Result<serde_json::Value, ExecError> {
    serde_json::to_value(record).map_err(ExecError::other)
}

/// The ingredients a new entry keeps: the key record, and beside it (`exec`) what `cache show`
/// tells about the compiler that the key holds only as a digest: its path as resolved and its
/// version line when the compiler check gives one; and the fingerprint of what the key leaves
/// out (`fingerprint.rs`), for a hit audit's explanation. Entries stored before have no `exec`.
fn stored_ingredients(
    record: &KeyRecord,
    request: &ExecRequest,
) -> Result<serde_json::Value, ExecError> {
    let mut ingredients = ingredients_of(record)?;
    if let serde_json::Value::Object(fields) = &mut ingredients {
        let fingerprint = crate::fingerprint::Fingerprint::take(request);
        // The fingerprint resolved the compiler already (PATH lookup, absolute path).
        let compiler = serde_json::json!({
            "path": fingerprint.compiler_path,
            "version": compiler_check::version_line(&request.compiler_check),
        });
        fields.insert(
            "exec".into(),
            serde_json::json!({ "compiler": compiler, "fingerprint": fingerprint }),
        );
    }
    Ok(ingredients)
}

/// `record` with the canonical text its source renders (unless too large to keep).
fn with_text(record: &KeyRecord, source: &dyn CanonicalSource) -> KeyRecord {
    let mut full = record.clone();
    if let Some(Readable::Computation { text, .. }) =
        full.entries.first_mut().map(|e| &mut e.readable)
    {
        let rendered = source.text();
        *text = (rendered.len() <= crate::key::MAX_RECORDED_TEXT).then_some(rendered);
    }
    full
}

/// Compiles after a miss, once per key across processes.
fn compile(
    store: &Tiered,
    request: &ExecRequest,
    key: &CacheKey,
    record: &KeyRecord,
    ingredients: &serde_json::Value,
    compiler_status: &mut i32,
) -> Result<Served, ExecError> {
    store.compile_after_miss(key, ingredients, request.lock_timeout, || {
        explain_miss(store.local(), key, record);
        let outcome = compiler::run(&request.command, &request.output)?;
        *compiler_status = outcome.exit_code();
        match &outcome {
            Outcome::Success(_) => tracing::info!("Compiler status PASS"),
            Outcome::Failed(_) => {
                tracing::info!("Compiler status FAIL (exit status {compiler_status})")
            }
            Outcome::Killed(signal) => {
                tracing::info!("Compiler status FAIL (killed by signal {signal})")
            }
        }
        Ok::<_, ExecError>(match outcome {
            Outcome::Success(bytes) => Compiled::Success(bytes),
            Outcome::Failed(failure) => Compiled::Failed(failure),
            Outcome::Killed(signal) => {
                Compiled::Abandoned(format!("the compiler was killed by signal {signal}"))
            }
        })
    })
}

/// Records the result at the address, if any, and says how the exec ended.
pub(crate) fn finish(
    store: &Tiered,
    mut site: Option<Site>,
    key: &CacheKey,
    ingredients: &serde_json::Value,
    code: i32,
    served: Served,
) -> Result<Finished, ExecError> {
    if let Some(site) = site.as_mut() {
        match served.state() {
            Some(state) => {
                if let Some(conflict) = site.commit(store.local(), key, ingredients, state)? {
                    return Ok(Finished::Conflict(conflict));
                }
            }
            None => site.abandon(),
        }
    }
    Ok(Finished::Status { code, served })
}

/// Runs the compiler with caching off.
pub fn run_uncached(request: &ExecRequest) -> Result<i32, ExecError> {
    Ok(compiler::run(&request.command, &request.output)?.exit_code())
}

/// Writes a cached artefact to the output, or prints a replayed failure's stderr; returns the
/// exit status to report.
pub(crate) fn replay(served: &Served, request: &ExecRequest) -> Result<i32, ExecError> {
    Ok(match served {
        Served::Cached(artefact) => {
            mck_store::write_hit_output(&request.output, &artefact.bytes, OUTPUT_MODE)?;
            0
        }
        Served::CachedFailure(cached) => {
            tracing::warn!(
                "replaying the remembered failure of {} (--retry_failed_compilation compiles again)",
                cached.key
            );
            let _ = std::io::stderr().write_all(cached.failure.stderr.as_bytes());
            cached.failure.exit_status.unwrap_or(1)
        }
        Served::Fresh(Compiled::Success(_)) | Served::Written { .. } => 0,
        Served::Fresh(Compiled::Failed(failure)) => failure.exit_status.unwrap_or(1),
        Served::Fresh(Compiled::Abandoned(_)) => 1,
    })
}
