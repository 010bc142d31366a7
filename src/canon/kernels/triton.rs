//! Triton GPU kernels: raw MLIR bytecode in the `ir` entry of the
//! `mhlo.backend_config` dictionary. JAX leaves them alone, so their keys
//! never match across checkouts; we strip them under the lossless rule.
//!
//! A Triton call without that shape is left as is with a diagnostic rather
//! than failing: JAX accepts such modules, so we must not reject them.

use super::payload::{self, Outcome};
use super::{KernelAction, KernelReport, Site};
use crate::mlir::ops::{Attr, OpRef};

const ATTRIBUTE: &str = "mhlo.backend_config";
const ENTRY: &[u8] = b"ir";

pub(super) fn strip(site: &Site<'_>) -> KernelReport {
    let left = |reason: &str| {
        site.report(
            None,
            KernelAction::LeftAsIs {
                reason: reason.to_string(),
            },
        )
    };
    let Some(entries) = site
        .op
        .attribute(ATTRIBUTE)
        .and_then(|a| a.dictionary_entries())
    else {
        return left("no mhlo.backend_config dictionary");
    };
    let Some(ir) = ir_of(&entries) else {
        return left("mhlo.backend_config has no string entry \"ir\"");
    };
    let Some(info) = payload::info(ir) else {
        return left("the \"ir\" entry is not MLIR bytecode");
    };
    match payload::strip(site.op, ir, &info) {
        Outcome::Stripped(stripped, method) => {
            let replacement = site.op.string_attribute(&stripped);
            let rebuilt: Vec<_> = entries
                .iter()
                .map(|&(name, value)| (name, if name == ENTRY { replacement } else { value }))
                .collect();
            site.op
                .set_attribute(ATTRIBUTE, site.op.dictionary_attribute(&rebuilt));
            site.report(Some(info), KernelAction::Stripped { method })
        }
        Outcome::LeftAsIs(reason) => site.report(Some(info), KernelAction::LeftAsIs { reason }),
    }
}

/// The kernel bytes of a Triton call's `mhlo.backend_config` entries.
fn ir_of<'m>(entries: &[(&[u8], Attr<'m>)]) -> Option<&'m [u8]> {
    entries
        .iter()
        .find(|(name, _)| *name == ENTRY)
        .and_then(|(_, value)| value.string_bytes())
}

/// The kernel bytes of the Triton call `op`, if it has them.
pub(super) fn ir_entry<'m>(op: OpRef<'m>) -> Option<&'m [u8]> {
    ir_of(&op.attribute(ATTRIBUTE)?.dictionary_entries()?)
}
