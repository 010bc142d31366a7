//! A dialect-free, lossless location stripper for MLIR bytecode.
//!
//! Kernels embedded in JAX-lowered modules (Mosaic, Triton) are bytecode from a
//! newer MLIR with dialects we do not have, so they cannot be parsed and
//! re-emitted; yet their debug locations must not enter a compilation-cache
//! key. This module rewrites such bytecode directly: location attributes
//! become `UnknownLoc` and strings used only by them become empty. When every
//! byte that can hold an index is decoded, what remains is then renumbered as
//! MLIR's writer numbers the module without locations, so the result does not
//! depend on how many locations there were; otherwise every index stays in
//! place so no undecodable byte needs to change. When it cannot prove a
//! rewrite lossless it says why and the caller keeps the original bytes: a
//! cache miss, never a false hit.
//!
//! Property blobs are each op's own encoding. For the ops of Triton kernels
//! (the `tt` dialect and the upstream dialects it uses, as built into jaxlib
//! 0.12) a table of their inherent attributes decodes them exactly, so their
//! references are known; other blobs are treated as possibly referencing
//! anything.
//!
//! Layout: `encoding` (format constants), `varint` and `reader` (primitives),
//! `sections`, `strings`, `dialects`, `attrs`, `properties` (the section, and
//! blobs decoded by the table), `resources`, `ir` (parsing), `values` (value
//! numbering), `model` (the parsed payload and its reference graph), `validate`
//! (the check before MLIR reads a payload), `analysis` (what is alive),
//! `strip` (the rewrite), `numbering` (the writer's attribute order, replayed)
//! and `renumber` (the canonical tables and every rewritten index); `listing`
//! reads the operations as text for explaining differences, and changes nothing.

mod analysis;
mod attrs;
mod dialects;
pub mod encoding;
mod error;
mod ir;
mod listing;
mod model;
mod numbering;
mod ops;
mod properties;
mod reader;
mod renumber;
mod resources;
mod sections;
mod strings;
mod strip;
mod validate;
mod values;
pub mod varint;

pub use error::BytecodeError;
pub use listing::{Change, OpDifference, OpView, Place, first_difference, ops};
pub use ops::{OpNameInfo, op_names};
pub use sections::{Header, SectionInfo};
pub use validate::{Invalid, Validated, validate};

use std::ops::Range;

use model::Parsed;
use strip::Pass;

/// What stripping produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StripOutput {
    /// The payload without debug locations. May equal the input when it had none.
    Stripped(Vec<u8>),
    /// No lossless rewrite could be proven; the caller keeps the original bytes.
    Unchanged {
        /// Why, precise enough to act on.
        reason: String,
    },
}

impl StripOutput {
    /// The stripped payload, or `None` when the original bytes are kept.
    pub fn stripped(self) -> Option<Vec<u8>> {
        match self {
            StripOutput::Stripped(bytes) => Some(bytes),
            StripOutput::Unchanged { .. } => None,
        }
    }
}

/// The result of [`strip_locations`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripReport {
    /// The rewritten payload, or why there is none.
    pub output: StripOutput,
    /// Bytecode version of the payload.
    pub version: u64,
    /// Producer string of the payload.
    pub producer: String,
    /// Attribute entries rewritten to `UnknownLoc` (locations and the entries
    /// reachable only through them).
    pub locations_replaced: usize,
    /// Strings emptied because only debug locations used them.
    pub strings_emptied: usize,
    /// Observations: kept entries and why, how undecodable bytes were handled.
    pub notes: Vec<String>,
    /// Property blobs decoded exactly by the property table.
    pub blobs_decoded: usize,
    /// Property blobs not decoded, each with why (their bytes are then
    /// treated as possibly holding any reference).
    pub blobs_undecoded: Vec<String>,
    /// Which input bytes the rewrite dropped as debug info (empty when
    /// `Unchanged`): for explaining a key, and for tests.
    pub debug: DebugMap,
}

/// The input bytes that stripping treated as debug info, as absolute ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DebugMap {
    /// Attribute entries rewritten to `UnknownLoc`: index and entry bytes.
    pub attrs_replaced: Vec<(usize, Range<usize>)>,
    /// Strings emptied: index and stored bytes (with the terminator).
    pub strings_emptied: Vec<(usize, Range<usize>)>,
    /// Line and column varints of the replaced file locations.
    pub location_scalars: Vec<Range<usize>>,
    /// Location indices of operations and block arguments, which all come
    /// to name the one `UnknownLoc` when the payload is renumbered (empty
    /// when indices stay in place).
    pub location_refs: Vec<Range<usize>>,
}

impl DebugMap {
    /// Whether input byte `offset` lies in something that was dropped.
    pub fn contains(&self, offset: usize) -> bool {
        self.attrs_replaced
            .iter()
            .chain(&self.strings_emptied)
            .map(|(_, r)| r)
            .chain(&self.location_refs)
            .any(|r| r.contains(&offset))
    }
}

/// Knobs of [`strip_locations_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StripOptions {
    /// Use the upstream writer's invariant that every numbered attribute, type
    /// and string is referenced at least once to prove that undecodable bytes
    /// do not reference debug-only entries (needed for bytecode with property
    /// blobs, such as Triton kernels). It holds for bytecode written by MLIR;
    /// a hand-crafted payload can violate it undetectably.
    pub use_writer_invariant: bool,
    /// Decode the property blobs of the operations in the property table (the
    /// dialects of Triton kernels, as built into jaxlib 0.12) exactly, so that
    /// their references are known rather than possible. Off: every blob is
    /// undecodable bytes, as for unknown dialects.
    pub use_property_table: bool,
}

impl Default for StripOptions {
    fn default() -> Self {
        StripOptions {
            use_writer_invariant: true,
            use_property_table: true,
        }
    }
}

/// Reads the container: magic, version, producer and the section table.
pub fn inspect(payload: &[u8]) -> Result<Header, BytecodeError> {
    sections::parse_container(payload)
}

/// Replaces every debug location of `payload` by `UnknownLoc`, with the
/// default [`StripOptions`].
pub fn strip_locations(payload: &[u8]) -> Result<StripReport, BytecodeError> {
    strip_locations_with(payload, &StripOptions::default())
}

/// Replaces every debug location of `payload` by `UnknownLoc`.
///
/// Errors mean the payload is malformed or of an unsupported version. The
/// output is a fixed point: stripping it again gives the same bytes (checked,
/// and reported as `Unchanged` in the unlikely case it does not hold).
pub fn strip_locations_with(
    payload: &[u8],
    options: &StripOptions,
) -> Result<StripReport, BytecodeError> {
    let parsed = parse(payload, options)?;
    let mut report = StripReport {
        output: StripOutput::Unchanged {
            reason: String::new(),
        },
        version: parsed.header.version,
        producer: parsed.header.producer.clone(),
        locations_replaced: 0,
        strings_emptied: 0,
        notes: Vec::new(),
        blobs_decoded: parsed.blob_reads.iter().filter(|r| r.is_ok()).count(),
        blobs_undecoded: parsed.undecoded_blobs(),
        debug: DebugMap::default(),
    };
    match strip::run(&parsed, options.use_writer_invariant)? {
        Pass::Unchanged(reason) => report.output = StripOutput::Unchanged { reason },
        Pass::Stripped {
            bytes,
            replaced,
            emptied,
            notes,
            debug,
        } => {
            report.notes = notes;
            match fixed_point(&bytes, options) {
                Ok(()) => {
                    report.debug = debug;
                    report.locations_replaced = replaced;
                    report.strings_emptied = emptied;
                    report.output = StripOutput::Stripped(bytes);
                }
                Err(reason) => report.output = StripOutput::Unchanged { reason },
            }
        }
    }
    Ok(report)
}

/// Parses `payload`, with its property blobs decoded if `options` say so.
fn parse<'a>(payload: &'a [u8], options: &StripOptions) -> Result<Parsed<'a>, BytecodeError> {
    let mut parsed = Parsed::parse(payload)?;
    if !options.use_property_table {
        for read in &mut parsed.blob_reads {
            *read = Err("the property table is not used".into());
        }
    }
    Ok(parsed)
}

/// Checks that stripping `bytes` again changes nothing.
fn fixed_point(bytes: &[u8], options: &StripOptions) -> Result<(), String> {
    let again =
        parse(bytes, options).map_err(|e| format!("the rewritten payload does not parse: {e}"))?;
    match strip::run(&again, options.use_writer_invariant) {
        Ok(Pass::Stripped { bytes: twice, .. }) if twice == bytes => Ok(()),
        Ok(Pass::Stripped { .. }) => {
            Err("stripping the rewritten payload again would change it further".into())
        }
        Ok(Pass::Unchanged(reason)) => Err(format!(
            "the rewritten payload cannot be stripped again: {reason}"
        )),
        Err(e) => Err(format!("the rewritten payload does not parse: {e}")),
    }
}
