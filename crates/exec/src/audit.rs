//! Hit audits (`--verify-hits RATE`): a sampled hit runs the compiler too and compares the fresh
//! artefact with the stored one. Equal: confirmed. Different: compile once more; two fresh
//! artefacts that differ mean a nondeterministic compiler (the fresh output is served, the entry
//! not blamed); two that agree mean a false hit: the fresh output is served, the entry marked
//! suspect (never served again) and what the key left out named from the fingerprints.
//!
//! Sampling hashes the key with a seed: `MLIR_CACHE_KEY_AUDIT_SEED` when set (tests: a fixed
//! seed per call gives a fixed decision), else the time and process id.

use crate::compiler::{self, Outcome};
use crate::error::ExecError;
use crate::fingerprint::Fingerprint;
use crate::request::ExecRequest;
use mck_remote::Tiered;
use mck_store::{AuditOutcome, CacheKey};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// The variable that fixes the sampling's seed.
pub const SEED_VAR: &str = "MLIR_CACHE_KEY_AUDIT_SEED";

/// What an audit found, for the run record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Audit {
    pub outcome: AuditOutcome,
    /// For a false hit: what differs between the storing run and this one.
    pub explanation: Option<String>,
}

impl Audit {
    /// The audit as the run record keeps it (`audit` beside the key record).
    pub fn to_json(&self, key: &CacheKey) -> Value {
        let outcome = match self.outcome {
            AuditOutcome::Confirmed => "confirmed",
            AuditOutcome::FalseHit => "false hit",
            AuditOutcome::Nondeterministic => "nondeterministic",
        };
        json!({ "entry": key.to_string(), "outcome": outcome, "explanation": self.explanation })
    }
}

/// True when this hit on `key` is to be audited at `rate`.
pub fn sampled(rate: f64, key: &CacheKey) -> bool {
    if rate <= 0.0 {
        return false;
    }
    if rate >= 1.0 {
        return true;
    }
    let seed = std::env::var(SEED_VAR).unwrap_or_else(|_| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("{nanos}.{}", std::process::id())
    });
    let hash = Sha256::digest(format!("{seed}\n{key}"));
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash[..8]);
    // The top 53 bits as a uniform fraction in [0, 1).
    let draw = (u64::from_be_bytes(first) >> 11) as f64 / (1u64 << 53) as f64;
    draw < rate
}

/// Audits a hit on `key` whose stored artefact is now in the request's output, if sampled.
/// The output ends holding what the audit serves; `stored_ingredients` are the entry's.
pub fn audit_hit(
    store: &Tiered,
    request: &ExecRequest,
    key: &CacheKey,
    stored_ingredients: &Value,
) -> Result<Option<Audit>, ExecError> {
    if !sampled(request.verify_hits, key) {
        return Ok(None);
    }
    let stored = std::fs::read(&request.output).map_err(|e| {
        ExecError::other(anyhow::anyhow!(
            "cannot read {}: {e}",
            request.output.display()
        ))
    })?;
    tracing::info!("auditing the hit on {key}: compiling again (--verify-hits)");
    let restore = |why: String| -> Result<Option<Audit>, ExecError> {
        tracing::warn!(
            "the audit of {key} could not compile ({why}); serving the stored artefact unaudited"
        );
        mck_store::write_file(&request.output, &stored, crate::run::OUTPUT_MODE)?;
        Ok(None)
    };
    let first = match fresh(request) {
        Ok(bytes) => bytes,
        Err(why) => return restore(why),
    };
    let audit = if first == stored {
        tracing::info!("hit audit of {key}: confirmed (the fresh artefact is the stored one)");
        Audit {
            outcome: AuditOutcome::Confirmed,
            explanation: None,
        }
    } else {
        match fresh(request) {
            Ok(second) if second == first => false_hit(store, request, key, stored_ingredients),
            Ok(_) | Err(_) => {
                tracing::warn!(
                    "hit audit of {key}: the compiler is nondeterministic for this input (two \
                     fresh compiles differ); serving the fresh output, the entry is not blamed"
                );
                mck_store::write_file(&request.output, &first, crate::run::OUTPUT_MODE)?;
                Audit {
                    outcome: AuditOutcome::Nondeterministic,
                    explanation: None,
                }
            }
        }
    };
    store.local().record_audit(audit.outcome);
    Ok(Some(audit))
}

/// Two fresh compiles agree and differ from the entry: say why, stop serving it.
fn false_hit(
    store: &Tiered,
    request: &ExecRequest,
    key: &CacheKey,
    stored_ingredients: &Value,
) -> Audit {
    let now = Fingerprint::take(request);
    let lines = match Fingerprint::recorded(stored_ingredients) {
        Some(then) => now.differences(&then),
        None => vec!["the entry has no fingerprint of its compile's environment (stored by an older version)".to_owned()],
    };
    let explanation = match lines.is_empty() {
        true => "nothing recorded differs between the storing run and this one (the environment, working directory, compiler and named files are the same)".to_owned(),
        false => lines.join("\n"),
    };
    tracing::warn!(
        "false hit on {key}: the stored artefact is not what the compiler makes now; serving the \
         fresh output and no longer serving the entry at {}. What differs from the run that stored it:\n{explanation}",
        store.local().layout().entry_path(key.digest()).display()
    );
    let reason = format!("false hit found by a hit audit: {explanation}");
    if let Err(e) = store.local().mark_suspect(key, &reason) {
        tracing::warn!("cannot mark {key} suspect: {e}");
    }
    Audit {
        outcome: AuditOutcome::FalseHit,
        explanation: Some(explanation),
    }
}

/// One fresh compile: its artefact, or why there is none (a compiler that cannot even run
/// leaves the hit unaudited, not the exec failed).
fn fresh(request: &ExecRequest) -> Result<Vec<u8>, String> {
    match compiler::run(&request.command, &request.output) {
        Ok(Outcome::Success(bytes)) => Ok(bytes),
        Ok(Outcome::Failed(f)) => Err(format!("exit status {}", f.exit_status.unwrap_or(1))),
        Ok(Outcome::Killed(signal)) => Err(format!("killed by signal {signal}")),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_bounds_always_and_never_hold() {
        let key = CacheKey::parse(&format!("m-{}", "a".repeat(64))).unwrap();
        assert!(!sampled(0.0, &key));
        assert!(sampled(1.0, &key));
    }
}
