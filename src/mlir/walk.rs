//! The one walk canonicalization makes over a module (the shim's walk.cpp):
//! it finds the custom calls, replaces every location by `loc(unknown)` as
//! upstream strip-debuginfo does, and, for a borrowed module, saves what
//! canonicalization in place changes so that it can be put back. Saving and
//! restoring costs a few percent of cloning the module and destroying the clone.

use super::ffi;
use super::ops::{OpRef, location_text};
use std::ptr::NonNull;

/// A `stablehlo.custom_call` found by the walk.
#[derive(Clone, Copy)]
pub(crate) struct CustomCall<'m> {
    pub(crate) op: OpRef<'m>,
    /// Index in pre-order among all operations of the module (itself 0).
    pub(crate) position: usize,
    /// The location the op had before the walk stripped it.
    location: mlir_sys::MlirLocation,
}

impl CustomCall<'_> {
    /// The op's location before stripping, as MLIR prints it.
    pub(crate) fn location_text(&self) -> String {
        location_text(self.location)
    }
}

/// What the walk does besides finding the custom calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WalkMode {
    /// Replace every operation and block-argument location by `loc(unknown)`.
    pub(crate) strip_locations: bool,
    /// Save what canonicalization changes, to put it back ([`Snapshot`]).
    pub(crate) save: bool,
}

/// What canonicalization in place changed in one module; put back when
/// dropped (or by [`Snapshot::restore`]). Holds nothing to put back unless the
/// walk saved.
pub(crate) struct Snapshot(Option<NonNull<ffi::MckWalk>>);

/// Walks `root` once in pre-order (see [`WalkMode`]): its custom calls, and
/// the snapshot that puts back what was saved.
pub(crate) fn walk<'m>(root: OpRef<'m>, mode: WalkMode) -> (Vec<CustomCall<'m>>, Snapshot) {
    // SAFETY: a live operation; the shim owns the result until mckWalkFinish.
    let raw = unsafe { ffi::mckWalk(root.to_raw(), mode.strip_locations, mode.save) };
    let mut count = 0;
    // SAFETY: `raw` is live; the array holds `count` entries until finished.
    let found = unsafe {
        let data = ffi::mckWalkCustomCalls(raw, &mut count);
        if count == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(data, count)
        }
    };
    let custom_calls = found
        .iter()
        .map(|call| CustomCall {
            // SAFETY: nested operations live as long as the module.
            op: unsafe { OpRef::from_raw(call.op) },
            position: call.position,
            location: call.location,
        })
        .collect();
    (custom_calls, Snapshot(NonNull::new(raw)))
}

/// How many times the walk ran on the calling thread (canonicalization runs
/// on its caller's thread), so that a test can count the walks of one call.
pub fn walks_on_this_thread() -> u64 {
    // SAFETY: reads a thread-local counter.
    unsafe { ffi::mckWalksOnThisThread() }
}

impl Snapshot {
    /// Puts the module back as it was; false when an operation's attributes
    /// did not read back exactly as saved.
    pub(crate) fn restore(mut self) -> bool {
        self.restore_now()
    }

    fn restore_now(&mut self) -> bool {
        match self.0.take() {
            // SAFETY: taken from this module, whose operations are all still there
            // (canonicalization only rewrites attributes and locations); freed here.
            Some(raw) => unsafe { ffi::mckWalkFinish(raw.as_ptr()) },
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
