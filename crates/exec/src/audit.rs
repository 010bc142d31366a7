//! Hit audits, in one place for every caller (exec's and wrap's `--verify-hits RATE`, the
//! `verify_hits` setting, Python's `install(verify_hits=)` and `Cache.compile_once(verify_rate=)`
//! through the extension): the rate's check, the sampling, the verdict and the outcomes' names.
//!
//! - [`check_rate`] / [`parse_rate`]: a rate is a number from 0 (never) to 1 (always) (the
//!   `verify_hits` setting's own check, from `mck-settings`, re-exported here);
//! - [`sampled`]: whether a hit is audited, a function of the seed, the rate, the key and how
//!   many hits of that key the process sampled before ([`Sampler`] counts them), so one seed
//!   picks the same keys in the CLI and in Python. The seed is `MLIR_CACHE_KEY_AUDIT_SEED` when
//!   set (tests: a fixed seed gives fixed decisions), else the time and process id;
//! - [`verdict`]: a sampled hit compiles again and the fresh artefact is compared with the
//!   stored one. Equal: confirmed. Different: compile once more; two fresh artefacts that differ
//!   (or a second compile that fails) mean a nondeterministic compiler (the fresh output is
//!   served, the entry not blamed); two that agree mean a false hit: the fresh output is served,
//!   the entry marked suspect (never served again). A first compile that fails leaves the hit
//!   unaudited;
//! - [`outcome_name`] / [`parse_outcome`]: each outcome's one spelling, as run records keep it;
//! - [`audit_hit`]: exec's audit of a hit in its output file, a false hit explained from the
//!   [`Fingerprint`] of what the key leaves out.

use crate::compiler::{self, OUTPUT_MODE, Outcome};
use crate::error::ExecError;
use crate::fingerprint::Fingerprint;
use crate::request::ExecRequest;
use mck_remote::Tiered;
use mck_store::{AuditOutcome, CacheKey};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

/// The variable that fixes the sampling's seed.
pub const SEED_VAR: &str = "MLIR_CACHE_KEY_AUDIT_SEED";

/// Every outcome, in the order `cache stats` counts them.
pub const OUTCOMES: [AuditOutcome; 3] = [
    AuditOutcome::Confirmed,
    AuditOutcome::FalseHit,
    AuditOutcome::Nondeterministic,
];

/// An outcome's one spelling: in run records (`audit.outcome`), logs and Python.
pub fn outcome_name(outcome: AuditOutcome) -> &'static str {
    match outcome {
        AuditOutcome::Confirmed => "confirmed",
        AuditOutcome::FalseHit => "false hit",
        AuditOutcome::Nondeterministic => "nondeterministic",
    }
}

/// The outcome spelled `name` ([`outcome_name`]); the error lists the spellings.
pub fn parse_outcome(name: &str) -> Result<AuditOutcome, String> {
    OUTCOMES
        .into_iter()
        .find(|o| outcome_name(*o) == name)
        .ok_or_else(|| {
            let names: Vec<String> = OUTCOMES
                .iter()
                .map(|o| format!("{:?}", outcome_name(*o)))
                .collect();
            format!(
                "an audit outcome is one of {}, not {name:?}",
                names.join(", ")
            )
        })
}

pub use mck_settings::{check_rate, parse_rate};

/// The seed of this process's sampling: `MLIR_CACHE_KEY_AUDIT_SEED`, else the time and the
/// process id.
pub fn process_seed() -> String {
    std::env::var(SEED_VAR).unwrap_or_else(|_| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("{nanos}.{}", std::process::id())
    })
}

/// True when the hit on `key` is audited at `rate`, under `seed`, after `earlier` sampled hits
/// of the same key in this process (0 for the first: all an `exec` process ever sees). A
/// SHA-256 of the seed, the key and the count, read as a uniform draw in [0, 1), below `rate`.
pub fn sampled(seed: &str, rate: f64, key: &str, earlier: u64) -> bool {
    if rate <= 0.0 {
        return false;
    }
    if rate >= 1.0 {
        return true;
    }
    let hash = match earlier {
        0 => Sha256::digest(format!("{seed}\n{key}")),
        n => Sha256::digest(format!("{seed}\n{key}\n{n}")),
    };
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash[..8]);
    // The top 53 bits as a uniform fraction in [0, 1).
    let draw = (u64::from_be_bytes(first) >> 11) as f64 / (1u64 << 53) as f64;
    draw < rate
}

/// A process's sampling: one seed, and how many hits of each key it was asked about (a long
/// process that hits one key many times audits about `rate` of them, not all or none).
#[derive(Debug)]
pub struct Sampler {
    seed: String,
    asked: Mutex<HashMap<String, u64>>,
}

impl Sampler {
    /// A sampler with `seed`, else [`process_seed`].
    pub fn new(seed: Option<String>) -> Sampler {
        Sampler {
            seed: seed.unwrap_or_else(process_seed),
            asked: Mutex::new(HashMap::new()),
        }
    }

    /// The process's own sampler (seeded once, on first use).
    pub fn process() -> &'static Sampler {
        static PROCESS: OnceLock<Sampler> = OnceLock::new();
        PROCESS.get_or_init(|| Sampler::new(None))
    }

    /// Whether this hit on `key` is audited at `rate` ([`sampled`]); rate 0 counts nothing.
    pub fn sample(&self, rate: f64, key: &str) -> bool {
        if rate <= 0.0 {
            return false;
        }
        let earlier = {
            let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
            let count = asked.entry(key.to_owned()).or_insert(0);
            let earlier = *count;
            *count += 1;
            earlier
        };
        sampled(&self.seed, rate, key, earlier)
    }
}

/// The verdict on a hit whose artefact is `stored`: compiles with `compile` (once, or twice
/// when the first differs) and compares with `same`. Returns the outcome and the first fresh
/// artefact (what to serve unless confirmed). An error of the first compile or of a comparison
/// is returned (the hit stays unaudited); a second compile that fails makes the outcome
/// nondeterministic (the fresh output is served, the entry not blamed).
pub fn verdict<A, E>(
    stored: &A,
    mut compile: impl FnMut() -> Result<A, E>,
    mut same: impl FnMut(&A, &A) -> Result<bool, E>,
) -> Result<(AuditOutcome, A), E> {
    let first = compile()?;
    if same(&first, stored)? {
        return Ok((AuditOutcome::Confirmed, first));
    }
    let outcome = match compile() {
        Ok(second) if same(&second, &first)? => AuditOutcome::FalseHit,
        Ok(_) | Err(_) => AuditOutcome::Nondeterministic,
    };
    Ok((outcome, first))
}

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
        json!({
            "entry": key.to_string(),
            "outcome": outcome_name(self.outcome),
            "explanation": self.explanation,
        })
    }
}

/// `ingredients` with what an audit of the hit found (`audit`), for the run record.
pub(crate) fn with_audit(mut ingredients: Value, key: &CacheKey, audit: Option<Audit>) -> Value {
    if let (Some(audit), Value::Object(fields)) = (audit, &mut ingredients) {
        fields.insert("audit".into(), audit.to_json(key));
    }
    ingredients
}

/// Audits a hit on `key` whose stored artefact is now in the request's output, if sampled
/// ([`Sampler::process`]). The output ends holding what the audit serves;
/// `stored_ingredients` are the entry's.
pub fn audit_hit(
    store: &Tiered,
    request: &ExecRequest,
    key: &CacheKey,
    stored_ingredients: &Value,
) -> Result<Option<Audit>, ExecError> {
    if !Sampler::process().sample(request.verify_hits, &key.to_string()) {
        return Ok(None);
    }
    let stored = std::fs::read(&request.output).map_err(|e| {
        ExecError::other(anyhow::anyhow!(
            "cannot read {}: {e}",
            request.output.display()
        ))
    })?;
    tracing::info!("auditing the hit on {key}: compiling again (--verify-hits)");
    let found = verdict(&stored, || fresh(request), |a, b| Ok(a == b));
    let (outcome, first) = match found {
        Ok(found) => found,
        Err(why) => {
            tracing::warn!(
                "the audit of {key} could not compile ({why}); serving the stored artefact unaudited"
            );
            mck_store::write_file(&request.output, &stored, OUTPUT_MODE)?;
            return Ok(None);
        }
    };
    let audit = match outcome {
        AuditOutcome::Confirmed => {
            tracing::info!("hit audit of {key}: confirmed (the fresh artefact is the stored one)");
            Audit {
                outcome,
                explanation: None,
            }
        }
        AuditOutcome::FalseHit => false_hit(store, request, key, stored_ingredients),
        AuditOutcome::Nondeterministic => {
            tracing::warn!(
                "hit audit of {key}: the compiler is nondeterministic for this input (two \
                 fresh compiles differ); serving the fresh output, the entry is not blamed"
            );
            mck_store::write_file(&request.output, &first, OUTPUT_MODE)?;
            Audit {
                outcome,
                explanation: None,
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
        let key = format!("m-{}", "a".repeat(64));
        for seed in ["", "27", "x"] {
            assert!(!sampled(seed, 0.0, &key, 0));
            assert!(sampled(seed, 1.0, &key, 0));
        }
        let sampler = Sampler::new(Some("27".into()));
        assert!(!sampler.sample(0.0, &key));
        assert!(sampler.sample(1.0, &key));
    }

    #[test]
    fn a_rate_is_from_zero_to_one() {
        assert_eq!(check_rate(0.0), Ok(0.0));
        assert_eq!(check_rate(1.0), Ok(1.0));
        assert_eq!(parse_rate(" 0.25 "), Ok(0.25));
        for bad in [-0.1, 1.5, f64::NAN, f64::INFINITY] {
            let e = check_rate(bad).unwrap_err();
            assert!(e.starts_with("expected a rate between 0 and 1"), "{e}");
        }
        for bad in ["often", "", "-1", "2", "NaN"] {
            let e = parse_rate(bad).unwrap_err();
            assert!(e.ends_with(&format!("got {bad:?}")), "{e}");
        }
    }

    #[test]
    fn the_sampler_counts_hits_per_key() {
        let key = "m-key";
        let sampler = Sampler::new(Some("27".into()));
        let drawn: Vec<bool> = (0..64).map(|_| sampler.sample(0.5, key)).collect();
        let expected: Vec<bool> = (0..64).map(|n| sampled("27", 0.5, key, n)).collect();
        assert_eq!(drawn, expected);
        // The first hit of another key is that key's first draw.
        assert_eq!(
            sampler.sample(0.5, "m-other"),
            sampled("27", 0.5, "m-other", 0)
        );
    }

    #[test]
    fn each_outcome_has_one_spelling() {
        let names: Vec<&str> = OUTCOMES.iter().map(|o| outcome_name(*o)).collect();
        assert_eq!(names, ["confirmed", "false hit", "nondeterministic"]);
        for outcome in OUTCOMES {
            assert_eq!(parse_outcome(outcome_name(outcome)), Ok(outcome));
            let key = CacheKey::parse(&format!("m-{}", "a".repeat(64))).unwrap();
            let audit = Audit {
                outcome,
                explanation: None,
            };
            assert_eq!(audit.to_json(&key)["outcome"], outcome_name(outcome));
        }
        // No other spelling is read: "false_hit" was never written anywhere.
        for other in ["false_hit", "False hit", "false-hit", "confirmed "] {
            assert!(parse_outcome(other).is_err(), "{other}");
        }
    }

    /// A compiler giving the artefacts in `runs` in turn (`None`: a failed compile).
    fn compiler(runs: &[Option<&'static str>]) -> impl FnMut() -> Result<&'static str, String> {
        let mut runs = runs.iter().copied();
        move || runs.next().flatten().ok_or_else(|| "failed".to_owned())
    }

    /// What a compiler gives in turn, and the verdict.
    type Case = (
        &'static [Option<&'static str>],
        Result<(AuditOutcome, &'static str), String>,
    );

    #[test]
    fn the_verdict() {
        let same = |a: &&str, b: &&str| Ok::<_, String>(a == b);
        let cases: [Case; 5] = [
            (&[Some("s")], Ok((AuditOutcome::Confirmed, "s"))),
            (&[Some("f"), Some("f")], Ok((AuditOutcome::FalseHit, "f"))),
            (
                &[Some("f"), Some("g")],
                Ok((AuditOutcome::Nondeterministic, "f")),
            ),
            (
                &[Some("f"), None],
                Ok((AuditOutcome::Nondeterministic, "f")),
            ),
            (&[None], Err("failed".to_owned())),
        ];
        for (runs, want) in cases {
            assert_eq!(verdict(&"s", compiler(runs), same), want, "{runs:?}");
        }
        // A comparison that fails leaves the hit unaudited.
        let refused = verdict(&"s", compiler(&[Some("f")]), |_, _| {
            Err("no program".to_owned())
        });
        assert_eq!(refused, Err("no program".to_owned()));
    }
}
