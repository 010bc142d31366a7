//! Where canonicalization time goes: each step timed on its own, for
//! `mlir-cache-key canon --timings` and the benchmarks.

use super::{CanonError, Options, StepTimes, canonicalize_steps, clone_module};
use crate::mlir::ops::OpRef;
use crate::mlir::{self, parse_module};
use melior::Context;

use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

/// Seconds spent in each step of one canonicalization of one module.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Timings {
    pub parse: Duration,
    /// Cloning the parsed module (library path only; the CLI owns its module).
    pub clone: Duration,
    /// Finding and stripping embedded kernels (includes the op walk).
    pub kernels: Duration,
    pub strip_debuginfo: Duration,
    /// Writing bytecode into memory.
    pub write: Duration,
    /// SHA-256 over the written bytes.
    pub hash: Duration,
    /// The production path: bytecode streamed straight into SHA-256.
    pub write_and_hash_streamed: Duration,
    pub canonical_bytes: usize,
}

impl Timings {
    /// Rows of (step, seconds) in pipeline order.
    pub fn rows(&self) -> Vec<(&'static str, Duration)> {
        vec![
            ("parse", self.parse),
            ("clone", self.clone),
            ("kernels", self.kernels),
            ("strip-debuginfo", self.strip_debuginfo),
            ("write", self.write),
            ("hash", self.hash),
            ("write+hash (streamed)", self.write_and_hash_streamed),
        ]
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed())
}

/// Parses `source` and canonicalizes a clone of it, timing every step.
pub fn measure(
    context: &Context,
    source: &[u8],
    name: &str,
    options: &Options,
) -> Result<Timings, CanonError> {
    let (module, parse) = timed(|| parse_module(context, source, name));
    let module = module?;
    let (clone, clone_time) = timed(|| clone_module(&module));
    let clone = clone?;
    // SAFETY: `clone` outlives `op`.
    let op = unsafe { OpRef::from_raw(clone.as_operation().to_raw()) };
    let mut steps = StepTimes::default();
    canonicalize_steps(op, options, &mut steps)?;
    let (bytes, write) = timed(|| {
        let mut bytes = Vec::new();
        mlir::write_bytecode(clone.as_operation(), &mut |c| bytes.extend_from_slice(c))
            .map(|()| bytes)
    });
    let bytes = bytes?;
    let (_, hash) = timed(|| Sha256::digest(&bytes));
    let (streamed, write_and_hash_streamed) = timed(|| {
        let mut hasher = Sha256::new();
        mlir::write_bytecode(clone.as_operation(), &mut |c| hasher.update(c))
            .map(|()| hasher.finalize())
    });
    streamed?;
    Ok(Timings {
        parse,
        clone: clone_time,
        kernels: steps.kernels,
        strip_debuginfo: steps.strip_debuginfo,
        write,
        hash,
        write_and_hash_streamed,
        canonical_bytes: bytes.len(),
    })
}
