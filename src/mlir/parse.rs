//! Parsing MLIR text or bytecode into a module, with errors that name the
//! input, the line and the column, and say what to do about pretty-printed
//! ops of dialects this MLIR lacks.

use super::ffi;
use crate::bytecode::OpNameInfo;
use melior::Context;
use melior::ir::Module;
use mlir_sys::MlirStringRef;
use std::ffi::c_void;
use std::fmt;
use std::io::Read;

/// Magic bytes at the start of every MLIR bytecode file.
const BYTECODE_MAGIC: &[u8] = b"ML\xefR";

#[derive(Debug, thiserror::Error)]
pub struct ParseError {
    /// The input's name as given (a path, or `<stdin>`).
    pub input: String,
    /// MLIR's diagnostics, rendered as `NAME:LINE:COL: error: ...`.
    pub diagnostics: String,
    /// What the user can do about it, when we recognize the problem.
    pub hint: Option<String>,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let diagnostics = self.diagnostics.trim_end();
        if diagnostics.is_empty() {
            write!(f, "{}: cannot parse as an MLIR module", self.input)?;
        } else {
            write!(f, "cannot parse {}:\n{diagnostics}", self.input)?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

/// Returns true when `source` is MLIR bytecode rather than text.
pub fn is_bytecode(source: &[u8]) -> bool {
    source.starts_with(BYTECODE_MAGIC)
}

/// Parses `source` (MLIR text or bytecode) as a module named `name` in
/// diagnostics. Bytecode is validated by our reader first, then read by MLIR
/// in a child process when [`super::isolate_bytecode_reads`] asked for it.
pub fn parse_module<'c>(
    context: &'c Context,
    source: &[u8],
    name: &str,
) -> Result<Module<'c>, ParseError> {
    parse_with(context, source, name, true)
}

/// Reads bytecode to explain it (`why` inside a kernel), never to key it: validated
/// dialect-free as by [`parse_module`], but read even when its writer had operations registered
/// that this context lacks, whose properties MLIR may then misread; the flag says whether that
/// may have happened. Not read in the isolated child, which refuses such bytecode.
pub(crate) fn read_to_explain<'c>(
    context: &'c Context,
    source: &[u8],
    name: &str,
) -> Result<(Module<'c>, bool), ParseError> {
    let op_names = validated_op_names(source, name)?;
    let may_misread = refuse_misreadable_properties(context, &op_names, name).is_err();
    Ok((parse_checked(context, source, name)?, may_misread))
}

/// [`parse_module`] without the child process (the child's own side).
fn parse_in_process<'c>(
    context: &'c Context,
    source: &[u8],
    name: &str,
) -> Result<Module<'c>, ParseError> {
    parse_with(context, source, name, false)
}

/// The child's side: reads bytecode from stdin and parses it in-process,
/// printing MLIR's diagnostics, then hands the module to `then`: the caller
/// runs there what it will run on the module itself, so that a crash in a
/// later step happens here too. Returns the exit status.
pub fn read_bytecode_child(name: &str, then: impl FnOnce(Module<'_>)) -> u8 {
    let mut bytes = Vec::new();
    if std::io::stdin().read_to_end(&mut bytes).is_err() {
        return 1;
    }
    let context = super::context::new_context();
    match parse_in_process(&context, &bytes, name) {
        Ok(module) => {
            then(module);
            0
        }
        Err(e) => {
            print!("{}", e.diagnostics);
            super::isolate::REJECTED as u8
        }
    }
}

/// Bytecode is checked dialect-free, then (when `in_child`) read by MLIR in the isolated
/// child first; then `source` is parsed here.
fn parse_with<'c>(
    context: &'c Context,
    source: &[u8],
    name: &str,
    in_child: bool,
) -> Result<Module<'c>, ParseError> {
    if is_bytecode(source) {
        check_bytecode(context, source, name)?;
        if in_child {
            super::isolate::check_in_child(source, name).map_err(|diagnostics| ParseError {
                input: name.to_string(),
                hint: hint_for(&diagnostics),
                diagnostics,
            })?;
        }
    }
    parse_checked(context, source, name)
}

/// Parses `source` with MLIR; bytecode must have passed [`check_bytecode`].
fn parse_checked<'c>(
    context: &'c Context,
    source: &[u8],
    name: &str,
) -> Result<Module<'c>, ParseError> {
    if source.iter().all(u8::is_ascii_whitespace) {
        return Err(ParseError {
            input: name.to_string(),
            diagnostics: String::new(),
            hint: Some("the input is empty; expected MLIR text or bytecode".to_string()),
        });
    }
    unsafe extern "C" fn collect(text: MlirStringRef, data: *mut c_void) {
        // SAFETY: `data` is the `String` below; `text` is valid for the call.
        unsafe {
            let out = &mut *(data as *mut String);
            let bytes = std::slice::from_raw_parts(text.data.cast::<u8>(), text.length);
            out.push_str(&String::from_utf8_lossy(bytes));
        }
    }
    // The bytecode reader wants its buffer aligned like the resources inside
    // it; a fresh 64-byte-aligned copy satisfies every alignment MLIR emits.
    let aligned;
    let source = if is_bytecode(source) {
        aligned = AlignedBytes::copy_of(source);
        aligned.as_slice()
    } else {
        source
    };
    let mut diagnostics = String::new();
    // SAFETY: `source`, `name` and `diagnostics` outlive the call; the parsed
    // module is owned by the returned `Module`.
    let module = unsafe {
        let raw = ffi::mckParseModule(
            context.to_raw(),
            string_ref(source),
            string_ref(name.as_bytes()),
            Some(collect),
            (&mut diagnostics as *mut String).cast(),
        );
        Module::from_option_raw(raw)
    };
    module.ok_or_else(|| {
        let hint = hint_for(&diagnostics);
        ParseError {
            input: name.to_string(),
            diagnostics,
            hint,
        }
    })
}

/// What MLIR's reader must not see: bytecode our reader finds malformed, and
/// bytecode it would misread.
fn check_bytecode(context: &Context, source: &[u8], name: &str) -> Result<(), ParseError> {
    let op_names = validated_op_names(source, name)?;
    refuse_misreadable_properties(context, &op_names, name)
}

/// The operation names of bytecode our reader finds well-formed; an error otherwise.
fn validated_op_names(source: &[u8], name: &str) -> Result<Vec<OpNameInfo>, ParseError> {
    let malformed = |detail: String| {
        // The prefix says it already.
        let detail = detail
            .strip_prefix("malformed bytecode ")
            .unwrap_or(&detail)
            .to_string();
        ParseError {
            input: name.to_string(),
            diagnostics: format!("{name}: malformed MLIR bytecode: {detail}"),
            hint: None,
        }
    };
    match crate::bytecode::validate(source) {
        Ok(valid) => Ok(valid.op_names),
        // Nested deeper than our walker follows, which is not malformed: MLIR reads it (in the
        // isolated child first), after the checks that do not walk the IR.
        Err(e) if matches!(e.error, crate::bytecode::BytecodeError::TooDeep { .. }) => {
            crate::bytecode::op_names(source).map_err(|e| malformed(e.to_string()))
        }
        Err(e) => Err(malformed(e.to_string())),
    }
}

/// Refuses bytecode whose writer had an op registered that this context does
/// not: its properties are in that dialect's own encoding, and MLIR would read
/// them back wrongly without saying so (a misread module must never be keyed).
fn refuse_misreadable_properties(
    context: &Context,
    ops: &[OpNameInfo],
    name: &str,
) -> Result<(), ParseError> {
    let known = |op_name: &str| {
        let dialect = op_name.split('.').next().unwrap_or_default();
        // The reader loads registered dialects on demand; do the same first.
        // SAFETY: live context; the name is copied by MLIR.
        unsafe {
            mlir_sys::mlirContextGetOrLoadDialect(context.to_raw(), string_ref(dialect.as_bytes()))
        };
        context.is_registered_operation(op_name)
    };
    let Some(op) = ops
        .iter()
        .find(|op| op.registered == Some(true) && !known(&op.name))
    else {
        return Ok(());
    };
    let dialect = op.name.split('.').next().unwrap_or_default();
    Err(ParseError {
        input: name.to_string(),
        diagnostics: format!(
            "{name}: bytecode written with '{}' registered: its properties are in the '{dialect}' \
             dialect's own encoding, which MLIR 22 (without that dialect) would misread",
            op.name
        ),
        hint: Some(
            "pass the module as generic MLIR text, or as bytecode written without that dialect \
             registered (e.g. mlir-opt --allow-unregistered-dialect --emit-bytecode on the generic \
             text) or at bytecode version 4 or lower (--emit-bytecode-version=4)"
                .to_string(),
        ),
    })
}

fn string_ref(bytes: &[u8]) -> MlirStringRef {
    MlirStringRef {
        data: bytes.as_ptr().cast(),
        length: bytes.len(),
    }
}

/// Recognizes a pretty-printed op of a dialect this MLIR does not have.
fn hint_for(diagnostics: &str) -> Option<String> {
    let start = diagnostics.find("custom op '")? + "custom op '".len();
    let op = &diagnostics[start..start + diagnostics[start..].find('\'')?];
    let dialect = op.split('.').next().unwrap_or(op);
    Some(format!(
        "'{op}' is in the pretty (custom) form, which needs the '{dialect}' dialect; MLIR 22 \
         does not have it, so its ops parse only in the generic form (\"{op}\"(...)). \
         Print the module in generic form: from JAX, \
         module.operation.get_asm(print_generic_op_form=True, enable_debug_info=True); \
         from an MLIR tool that has the dialect, --mlir-print-op-generic"
    ))
}

/// A heap copy of bytes at 64-byte alignment.
struct AlignedBytes {
    blocks: Vec<Aligned64>,
    len: usize,
}

#[derive(Clone)]
#[repr(C, align(64))]
struct Aligned64([u8; 64]);

impl AlignedBytes {
    fn copy_of(bytes: &[u8]) -> Self {
        let mut blocks = vec![Aligned64([0; 64]); bytes.len().div_ceil(64)];
        for (block, chunk) in blocks.iter_mut().zip(bytes.chunks(64)) {
            block.0[..chunk.len()].copy_from_slice(chunk);
        }
        Self {
            blocks,
            len: bytes.len(),
        }
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: `blocks` is a contiguous array of 64-byte blocks with no
        // padding (repr(C), size 64) holding at least `len` initialized bytes.
        unsafe { std::slice::from_raw_parts(self.blocks.as_ptr().cast::<u8>(), self.len) }
    }
}
