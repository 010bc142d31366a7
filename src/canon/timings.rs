//! Where canonicalization time goes: each step timed on its own, for
//! `mlir-cache-key canon --timings` and the benchmarks.

use super::{CanonError, Options, StepTimes, canonicalize_steps, walk_mode};
use crate::mlir::ops::OpRef;
use crate::mlir::walk::walk;
use crate::mlir::{self, parse_module};
use melior::Context;

use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

/// Seconds spent in each step of one canonicalization of one module.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Timings {
    pub parse: Duration,
    /// The one walk: saving the locations and replacing them (strip-debuginfo),
    /// finding the custom calls and saving their attributes.
    pub walk: Duration,
    /// Stripping embedded kernels.
    pub kernels: Duration,
    /// Writing bytecode into memory.
    pub write: Duration,
    /// SHA-256 over the written bytes.
    pub hash: Duration,
    /// The production path: bytecode streamed straight into SHA-256.
    pub write_and_hash_streamed: Duration,
    /// Putting the module back as it was (library path only).
    pub restore: Duration,
    pub canonical_bytes: usize,
}

impl Timings {
    /// Rows of (step, seconds) in pipeline order.
    pub fn rows(&self) -> Vec<(&'static str, Duration)> {
        vec![
            ("parse", self.parse),
            ("walk+strip-debuginfo", self.walk),
            ("kernels", self.kernels),
            ("write", self.write),
            ("hash", self.hash),
            ("write+hash (streamed)", self.write_and_hash_streamed),
            ("restore", self.restore),
        ]
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed())
}

/// Parses `source` and canonicalizes it the library's way (in place, then put
/// back), timing every step.
pub fn measure(
    context: &Context,
    source: &[u8],
    name: &str,
    options: &Options,
) -> Result<Timings, CanonError> {
    let (module, parse) = timed(|| parse_module(context, source, name));
    let module = module?;
    // SAFETY: `module` outlives `op`.
    let op = unsafe { OpRef::from_raw(module.as_operation().to_raw()) };
    let ((custom_calls, snapshot), walk_time) = timed(|| walk(op, walk_mode(options, true)));
    let mut steps = StepTimes::default();
    canonicalize_steps(op, &custom_calls, options, &mut steps)?;
    let (bytes, write) = timed(|| {
        let mut bytes = Vec::new();
        mlir::write_bytecode(module.as_operation(), &mut |c| bytes.extend_from_slice(c))
            .map(|()| bytes)
    });
    let bytes = bytes?;
    let (_, hash) = timed(|| Sha256::digest(&bytes));
    let (streamed, write_and_hash_streamed) = timed(|| {
        let mut hasher = Sha256::new();
        mlir::write_bytecode(module.as_operation(), &mut |c| hasher.update(c))
            .map(|()| hasher.finalize())
    });
    streamed?;
    let (_, restore) = timed(|| snapshot.restore());
    Ok(Timings {
        parse,
        walk: walk_time,
        kernels: steps.kernels,
        write,
        hash,
        write_and_hash_streamed,
        restore,
        canonical_bytes: bytes.len(),
    })
}
