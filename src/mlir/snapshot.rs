//! Canonicalization in place, undone: what the library does with a module it
//! borrows. Saving every location and the attributes of the ops that
//! canonicalization rewrites, then putting them back, costs a few percent of
//! cloning the module and destroying the clone (see the shim's snapshot.cpp).

use super::ffi;
use super::ops::OpRef;
use std::ptr::NonNull;

/// What canonicalization in place may change in one module; put back when
/// dropped (or by [`Snapshot::restore`]).
pub(crate) struct Snapshot(Option<NonNull<ffi::MckSnapshot>>);

impl Snapshot {
    /// Saves the locations in `root` and the attributes of `rewritten`, the only
    /// operations whose attributes canonicalization may change.
    pub(crate) fn take(root: OpRef<'_>, rewritten: &[OpRef<'_>]) -> Self {
        let raw: Vec<_> = rewritten.iter().map(|op| op.to_raw()).collect();
        // SAFETY: live operations of one module; the shim copies what it needs.
        let taken = unsafe { ffi::mckSnapshotTake(root.to_raw(), raw.as_ptr(), raw.len()) };
        Self(NonNull::new(taken))
    }

    /// Puts the module back as it was; false when an operation's attributes
    /// did not read back exactly as saved.
    pub(crate) fn restore(mut self) -> bool {
        self.restore_now()
    }

    fn restore_now(&mut self) -> bool {
        match self.0.take() {
            // SAFETY: taken from this module, whose operations are all still there
            // (canonicalization only rewrites attributes and locations); freed here.
            Some(raw) => unsafe { ffi::mckSnapshotRestore(raw.as_ptr()) },
            None => true,
        }
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        if !self.restore_now() {
            tracing::error!("a borrowed module's attributes did not read back as they were");
        }
    }
}
