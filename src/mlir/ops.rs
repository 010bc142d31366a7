//! Raw operation and attribute access for the canonicalizer's surgery.
//!
//! melior exposes string attributes as `&str`, but MLIR strings are bytes (a
//! Triton kernel is raw bytecode inside a string attribute), so this module
//! works on mlir-sys handles. Handles borrow the module they come from.

use mlir_sys::*;
use std::ffi::c_void;
use std::marker::PhantomData;

/// An operation inside a module borrowed for `'m`.
#[derive(Clone, Copy)]
pub(crate) struct OpRef<'m> {
    raw: MlirOperation,
    _module: PhantomData<&'m ()>,
}

/// An attribute owned by the context of a module borrowed for `'m`.
#[derive(Clone, Copy)]
pub(crate) struct Attr<'m> {
    raw: MlirAttribute,
    _module: PhantomData<&'m ()>,
}

fn string_ref(bytes: &[u8]) -> MlirStringRef {
    MlirStringRef {
        data: bytes.as_ptr().cast(),
        length: bytes.len(),
    }
}

/// # Safety
/// `s` must point at `length` readable bytes that live for `'a`.
unsafe fn bytes_of<'a>(s: MlirStringRef) -> &'a [u8] {
    if s.length == 0 {
        return &[];
    }
    unsafe { std::slice::from_raw_parts(s.data.cast::<u8>(), s.length) }
}

impl<'m> OpRef<'m> {
    /// # Safety
    /// `raw` must be a live operation that outlives `'m`.
    pub(crate) unsafe fn from_raw(raw: MlirOperation) -> Self {
        Self {
            raw,
            _module: PhantomData,
        }
    }

    pub(crate) fn to_raw(self) -> MlirOperation {
        self.raw
    }

    /// The attribute `name`, inherent (properties) or discardable.
    pub(crate) fn attribute(self, name: &str) -> Option<Attr<'m>> {
        // SAFETY: live operation; a null result means absent.
        let raw = unsafe { mlirOperationGetAttributeByName(self.raw, string_ref(name.as_bytes())) };
        (!raw.ptr.is_null()).then_some(Attr {
            raw,
            _module: PhantomData,
        })
    }

    /// Sets the attribute `name` (replacing an inherent one in place).
    pub(crate) fn set_attribute(self, name: &str, value: Attr<'m>) {
        // SAFETY: live operation and attribute of the same context.
        unsafe { mlirOperationSetAttributeByName(self.raw, string_ref(name.as_bytes()), value.raw) }
    }

    /// A new string attribute holding `bytes`, in this operation's context.
    pub(crate) fn string_attribute(self, bytes: &[u8]) -> Attr<'m> {
        // SAFETY: MLIR copies the bytes into the context.
        let raw =
            unsafe { mlirStringAttrGet(mlirOperationGetContext(self.raw), string_ref(bytes)) };
        Attr {
            raw,
            _module: PhantomData,
        }
    }

    /// A new dictionary attribute with these entries, in this operation's context.
    pub(crate) fn dictionary_attribute(self, entries: &[(&[u8], Attr<'m>)]) -> Attr<'m> {
        // SAFETY: the named attributes are built from live handles of this
        // context; MLIR copies the array.
        unsafe {
            let context = mlirOperationGetContext(self.raw);
            let named: Vec<MlirNamedAttribute> = entries
                .iter()
                .map(|(name, value)| {
                    mlirNamedAttributeGet(mlirIdentifierGet(context, string_ref(name)), value.raw)
                })
                .collect();
            Attr {
                raw: mlirDictionaryAttrGet(context, named.len() as isize, named.as_ptr()),
                _module: PhantomData,
            }
        }
    }
}

impl<'m> Attr<'m> {
    /// The bytes of a string attribute; `None` for any other attribute.
    pub(crate) fn string_bytes(self) -> Option<&'m [u8]> {
        // SAFETY: live attribute; string storage is owned by the context.
        unsafe {
            mlirAttributeIsAString(self.raw).then(|| bytes_of(mlirStringAttrGetValue(self.raw)))
        }
    }

    /// The entries of a dictionary attribute in order; `None` for any other.
    pub(crate) fn dictionary_entries(self) -> Option<Vec<(&'m [u8], Attr<'m>)>> {
        // SAFETY: live attribute; indices are within the element count.
        unsafe {
            if !mlirAttributeIsADictionary(self.raw) {
                return None;
            }
            let count = mlirDictionaryAttrGetNumElements(self.raw);
            Some(
                (0..count)
                    .map(|i| {
                        let named = mlirDictionaryAttrGetElement(self.raw, i);
                        (
                            bytes_of(mlirIdentifierStr(named.name)),
                            Attr {
                                raw: named.attribute,
                                _module: PhantomData,
                            },
                        )
                    })
                    .collect(),
            )
        }
    }
}

/// A location as MLIR prints it, e.g. `loc("a.py":3:1)` (locations are uniqued in their context,
/// which outlives every module that uses them).
pub(crate) fn location_text(location: MlirLocation) -> String {
    let mut out = String::new();
    // SAFETY: a location of a live context; the printer callback appends to `out`.
    unsafe {
        mlirLocationPrint(
            location,
            Some(append_text),
            (&mut out as *mut String).cast(),
        )
    };
    out
}

unsafe extern "C" fn append_text(text: MlirStringRef, data: *mut c_void) {
    // SAFETY: `data` is a `String` owned by the caller; `text` is valid now.
    unsafe {
        let out = &mut *(data as *mut String);
        out.push_str(&String::from_utf8_lossy(bytes_of(text)));
    }
}

/// Prints `op` as MLIR text (generic form when `generic`). With `debug_info`,
/// every location is printed inline after its operation or block argument
/// (local scope: no `#loc` aliases, so a line diff shows the location that
/// moved next to its operation); otherwise without locations.
pub(crate) fn print_operation(
    op: melior::ir::OperationRef<'_, '_>,
    generic: bool,
    debug_info: bool,
) -> String {
    let op = op.to_raw();
    let mut out = String::new();
    // SAFETY: the borrow keeps the operation alive; flags are created and destroyed here.
    unsafe {
        let flags = mlirOpPrintingFlagsCreate();
        if generic {
            mlirOpPrintingFlagsPrintGenericOpForm(flags);
        }
        if debug_info {
            mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
            mlirOpPrintingFlagsUseLocalScope(flags);
        }
        mlirOperationPrintWithFlags(
            op,
            flags,
            Some(append_text),
            (&mut out as *mut String).cast(),
        );
        mlirOpPrintingFlagsDestroy(flags);
    }
    // With debug info the printer ends at the top-level location, without the
    // newline it prints otherwise: one form for both.
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}
