//! Unstable pointers: `CustomSPMDPartitioning` custom calls carry a process
//! address in `backend_config` that differs on every run.

use crate::mlir::walk::CustomCall;

const TARGET: &[u8] = b"CustomSPMDPartitioning";
const REPLACEMENT: &[u8] = b"REMOVED";

/// Replaces each such `backend_config` by `"REMOVED"`; returns how many.
pub(super) fn neutralize(custom_calls: &[CustomCall<'_>]) -> usize {
    let mut removed = 0;
    for &CustomCall { op, .. } in custom_calls {
        let target = op
            .attribute("call_target_name")
            .and_then(|a| a.string_bytes());
        if target == Some(TARGET) {
            op.set_attribute("backend_config", op.string_attribute(REPLACEMENT));
            removed += 1;
        }
    }
    removed
}
