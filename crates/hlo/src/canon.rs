//! Canonicalization: clear the debug fields, renumber the ids, keep everything else, encode
//! deterministically.
//!
//! The described messages (see [`crate::schema`]) are opened and rewritten: fields in number
//! order (unknown ones by number too, byte for byte), a singular message seen several times
//! merged into one (protobuf's merge is concatenation on the wire), the last of a repeated
//! singular scalar kept (protobuf's rule), proto3 zero values without presence dropped, repeated
//! numbers packed, map entries sorted by key with the last of equal keys kept. What XLA writes
//! is already in this form, so for its output only the cleared fields change; two encodings of
//! the same message become the same bytes. Messages the table does not describe (shapes,
//! literals, shardings, backend configs…) are kept byte for byte. Ids are renumbered as
//! [`crate::ids`] describes, or kept when that cannot be done with certainty.

use std::collections::BTreeMap;

use prost::encoding::WireType;

use crate::HloError;
use crate::ids::{self, Ids, Role};
use crate::schema::{self, Card, FieldInfo, Kind, Msg, normalize};
use crate::wire::{self, Field};

/// What canonicalization keeps besides what can change the compiled program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Keep the debug fields (source locations, stack frames), like `--keep-locations`.
    pub keep_locations: bool,
    /// Keep module, computation and instruction ids as they are (no renumbering).
    pub keep_ids: bool,
}

/// What canonicalization saw and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub computations: usize,
    pub instructions: usize,
    /// OpMetadata source locations and stack-frame ids cleared.
    pub cleared_metadata_fields: usize,
    /// Whether the module's StackFrameIndexProto was cleared.
    pub cleared_stack_frame_index: bool,
    /// Fields the table does not know (a newer XLA's), kept as they are.
    pub unknown_fields: usize,
    /// Whether computation and instruction ids were renumbered.
    pub renumbered_ids: bool,
    /// Why they were kept although renumbering was asked for (a dangling reference, a field
    /// that may hold ids unseen); the module id is reset all the same.
    pub ids_kept: Option<String>,
}

/// A canonical HloModuleProto.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Canonical {
    /// The canonical serialized HloModuleProto.
    pub bytes: Vec<u8>,
    /// The module's name (`HloModuleProto.name`), empty when absent.
    pub name: String,
    pub report: Report,
}

impl Canonical {
    /// SHA-256 of the canonical bytes.
    pub fn digest(&self) -> [u8; 32] {
        use sha2::Digest as _;
        sha2::Sha256::digest(&self.bytes).into()
    }

    /// A readable view of the canonical module (for diffs; never hashed).
    pub fn text(&self) -> String {
        crate::text::to_text(&self.bytes)
    }
}

/// Canonicalizes a serialized `xla.HloModuleProto`.
pub fn canonicalize(input: &[u8], options: &Options) -> Result<Canonical, HloError> {
    let ids = match options.keep_ids {
        true => Renumber::Keep,
        false => match Ids::plan(input) {
            Ok(ids) => Renumber::All(ids),
            Err(why) => Renumber::ModuleOnly(why),
        },
    };
    let mut cx = Cx::new(*options, ids);
    let mut bytes = cx.message(&[(input, 0)], &Path::Root, Msg::HloModule)?;
    if let Some(why) = cx.unresolved.take() {
        // Fail closed: the whole module again, its ids as they are.
        cx = Cx::new(*options, Renumber::ModuleOnly(why));
        bytes = cx.message(&[(input, 0)], &Path::Root, Msg::HloModule)?;
    }
    cx.report.renumbered_ids = matches!(cx.ids, Renumber::All(_));
    if let Renumber::ModuleOnly(why) = cx.ids {
        cx.report.ids_kept = Some(why);
    }
    let name = wire::parse(&bytes, 0)?
        .iter()
        .find(|f| f.number == 1)
        .map(|f| String::from_utf8_lossy(f.payload()).into_owned())
        .unwrap_or_default();
    Ok(Canonical {
        bytes,
        name,
        report: cx.report,
    })
}

/// A field path, rendered only when an error needs it.
pub(crate) enum Path<'p> {
    Root,
    Field {
        parent: &'p Path<'p>,
        name: &'static str,
        index: Option<usize>,
    },
}

impl Path<'_> {
    pub(crate) fn render(&self) -> String {
        match self {
            Path::Root => String::new(),
            Path::Field {
                parent,
                name,
                index,
            } => {
                let mut s = parent.render();
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(name);
                if let Some(i) = index {
                    s.push_str(&format!("[{i}]"));
                }
                s
            }
        }
    }
}

struct Cx {
    options: Options,
    report: Report,
    ids: Renumber,
    /// The index of the computation whose instruction ids are being read.
    scope: Option<usize>,
    /// The first reason renumbering cannot be done with certainty, found while writing.
    unresolved: Option<String>,
}

/// How ids are written.
enum Renumber {
    /// As they are (`Options::keep_ids`).
    Keep,
    /// As they are but for the module id, reset; the reason the rest is kept.
    ModuleOnly(String),
    /// Renumbered with these maps.
    All(Ids),
}

/// A map entry's key, for sorting.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum MapKey {
    Int(i64),
    Str(Vec<u8>),
}

impl Cx {
    fn new(options: Options, ids: Renumber) -> Self {
        Cx {
            options,
            report: Report::default(),
            ids,
            scope: None,
            unresolved: None,
        }
    }

    /// Notes the first reason the ids cannot be renumbered with certainty.
    fn unresolved(&mut self, why: impl FnOnce() -> String) {
        if matches!(self.ids, Renumber::All(_)) && self.unresolved.is_none() {
            self.unresolved = Some(why());
        }
    }

    /// The canonical bytes of one message given as one or more parts (a singular message seen
    /// several times).
    fn message(
        &mut self,
        parts: &[(&[u8], usize)],
        path: &Path,
        msg: Msg,
    ) -> Result<Vec<u8>, HloError> {
        let mut fields = Vec::new();
        for (buf, base) in parts {
            fields.extend(
                wire::parse(buf, *base).map_err(|e| HloError::from_wire(e, path.render()))?,
            );
        }
        if matches!(self.ids, Renumber::All(_)) {
            // An absent id is 0, and 0 is renumbered too.
            for &number in ids::implied(msg) {
                if !fields.iter().any(|f| f.number == number) {
                    fields.push(Field::new_varint(number, 0));
                }
            }
        }
        fields.sort_by_key(|f| f.number);
        let mut out = Vec::with_capacity(parts.iter().map(|(b, _)| b.len()).sum());
        let entry = matches!(msg, Msg::SequencesEntry | Msg::FrontendAttributesEntry);
        for group in fields.chunk_by(|a, b| a.number == b.number) {
            let number = group[0].number;
            let Some(info) = schema::lookup(msg, number) else {
                if ids::may_hold_ids(msg) {
                    self.unresolved(|| format!("{}: field #{number} is unknown", msg.proto_name()));
                }
                self.report.unknown_fields += group.len();
                for f in group {
                    out.extend_from_slice(&f.raw);
                }
                continue;
            };
            let here = Path::Field {
                parent: path,
                name: info.name,
                index: None,
            };
            for f in group {
                check_wire_type(info, f, &here)?;
            }
            if !self.options.keep_locations && schema::is_debug(msg, number) {
                match msg {
                    Msg::HloModule => self.report.cleared_stack_frame_index = true,
                    _ => self.report.cleared_metadata_fields += group.len(),
                }
                continue;
            }
            if msg == Msg::HloModule
                && let Some((_, name)) = ids::UNREWRITTEN.iter().find(|(n, _)| *n == number)
            {
                self.unresolved(|| format!("the module has {name}, which may refer to ids"));
            }
            match (&self.ids, ids::role(msg, number)) {
                (Renumber::Keep, _) | (_, None) => {
                    self.field(&mut out, info, group, path, entry)?
                }
                (_, Some(Role::Module)) => {}
                (Renumber::ModuleOnly(_), Some(_)) => {
                    self.field(&mut out, info, group, path, entry)?
                }
                (Renumber::All(_), Some(role)) => {
                    self.id_field(&mut out, info, role, group, &here)?
                }
            }
        }
        if entry {
            out = complete_entry(out, msg);
        }
        Ok(out)
    }

    fn field(
        &mut self,
        out: &mut Vec<u8>,
        info: &FieldInfo,
        group: &[Field],
        path: &Path,
        entry: bool,
    ) -> Result<(), HloError> {
        let number = info.number;
        let here = Path::Field {
            parent: path,
            name: info.name,
            index: None,
        };
        match (info.card, info.kind) {
            (Card::One, Kind::Msg(sub)) => {
                let parts: Vec<_> = group
                    .iter()
                    .map(|f| (f.payload(), f.payload_offset()))
                    .collect();
                let inner = self.message(&parts, &here, sub)?;
                wire::put_len(out, number, &inner);
            }
            (Card::One, Kind::Opaque(_)) => {
                let payload: Vec<u8> = group
                    .iter()
                    .flat_map(|f| f.payload().iter().copied())
                    .collect();
                wire::put_len(out, number, &payload);
            }
            (Card::One, _) => {
                if let Some(last) = group.last() {
                    scalar(out, info, last, &here, entry)?;
                }
            }
            (Card::Many, Kind::Msg(sub)) => {
                for (i, f) in group.iter().enumerate() {
                    match sub {
                        Msg::HloComputation => {
                            self.report.computations += 1;
                            self.scope = Some(i);
                        }
                        Msg::HloInstruction => self.report.instructions += 1,
                        _ => {}
                    }
                    let at = Path::Field {
                        parent: path,
                        name: info.name,
                        index: Some(i),
                    };
                    let inner = self.message(&[(f.payload(), f.payload_offset())], &at, sub)?;
                    wire::put_len(out, number, &inner);
                }
            }
            (Card::Map, Kind::Msg(sub)) => {
                // Entries canonicalized, the last of equal keys kept, sorted by key.
                let mut entries = BTreeMap::new();
                for (i, f) in group.iter().enumerate() {
                    let at = Path::Field {
                        parent: path,
                        name: info.name,
                        index: Some(i),
                    };
                    let inner = self.message(&[(f.payload(), f.payload_offset())], &at, sub)?;
                    entries.insert(map_key(&inner, sub), inner);
                }
                for inner in entries.values() {
                    wire::put_len(out, number, inner);
                }
            }
            (_, Kind::Opaque(_) | Kind::Bytes) => {
                for f in group {
                    wire::put_len(out, number, f.payload());
                }
            }
            (_, Kind::Str) => {
                for f in group {
                    utf8(f, &here)?;
                    wire::put_len(out, number, f.payload());
                }
            }
            // Repeated numbers.
            (_, _) => packed(out, info, group, &here)?,
        }
        Ok(())
    }
}

impl Cx {
    /// Writes an id field renumbered: one value (always, ids are never 0) or a packed run.
    fn id_field(
        &mut self,
        out: &mut Vec<u8>,
        info: &FieldInfo,
        role: Role,
        group: &[Field],
        path: &Path,
    ) -> Result<(), HloError> {
        let Renumber::All(ids) = &self.ids else {
            return Ok(());
        };
        let mut values = varints(info, group, path)?;
        if info.card == Card::One {
            values = values.split_off(values.len().saturating_sub(1));
        }
        let mut scope = self.scope;
        let mut unresolved = None;
        for v in values.iter_mut() {
            let new = match role {
                Role::Module => None,
                Role::Computation => ids.computation(*v).map(|(_, new)| new),
                Role::ScheduleKey => ids.computation(*v).map(|(index, new)| {
                    scope = Some(index);
                    new
                }),
                Role::Instruction => ids.instruction(scope, *v),
            };
            match new {
                Some(new) => *v = new,
                None => unresolved = Some(*v),
            }
        }
        self.scope = scope;
        if let Some(old) = unresolved {
            self.unresolved(|| format!("{}: id {old} refers to nothing", path.render()));
        }
        if info.card == Card::One {
            if let Some(&v) = values.first() {
                wire::put_varint(out, info.number, v);
            }
        } else if !values.is_empty() {
            let mut payload = Vec::new();
            for v in values {
                wire::put_raw_varint(&mut payload, v);
            }
            wire::put_len(out, info.number, &payload);
        }
        Ok(())
    }
}

/// Rejects a known field whose wire type its kind cannot have (repeated numbers may be packed).
fn check_wire_type(info: &FieldInfo, f: &Field, path: &Path) -> Result<(), HloError> {
    info.check(f.wire_type).map_err(|reason| HloError::NotHlo {
        reason,
        offset: f.offset,
        path: path.render(),
    })
}

fn scalar(
    out: &mut Vec<u8>,
    info: &FieldInfo,
    f: &Field,
    path: &Path,
    entry: bool,
) -> Result<(), HloError> {
    let keep_zero = info.presence || entry;
    match info.kind {
        Kind::Bool | Kind::Int32 | Kind::Int64 | Kind::Uint32 | Kind::Uint64 | Kind::Enum => {
            let v = normalize(info.kind, varint(f, path)?);
            if v != 0 || keep_zero {
                wire::put_varint(out, info.number, v);
            }
        }
        Kind::Float | Kind::Double => {
            // +0.0 is the default; -0.0 is a value.
            if f.payload().iter().any(|&b| b != 0) || keep_zero {
                wire::put_fixed(out, info.number, f.wire_type, f.payload());
            }
        }
        Kind::Str | Kind::Bytes => {
            if info.kind == Kind::Str {
                utf8(f, path)?;
            }
            if !f.payload().is_empty() || keep_zero {
                wire::put_len(out, info.number, f.payload());
            }
        }
        // Messages are written by the caller.
        Kind::Msg(_) | Kind::Opaque(_) => {}
    }
    Ok(())
}

/// All values of a repeated number, packed and unpacked occurrences alike, as one packed field.
fn packed(
    out: &mut Vec<u8>,
    info: &FieldInfo,
    group: &[Field],
    path: &Path,
) -> Result<(), HloError> {
    let width = match info.kind {
        Kind::Float => 4,
        Kind::Double => 8,
        _ => 0,
    };
    let mut payload = Vec::new();
    if width == 0 {
        for v in varints(info, group, path)? {
            wire::put_raw_varint(&mut payload, v);
        }
    }
    for f in group.iter().filter(|_| width > 0) {
        if f.wire_type == WireType::LengthDelimited && f.payload().len() % width != 0 {
            return Err(HloError::NotHlo {
                reason: format!(
                    "packed values of {} bytes in {} bytes",
                    width,
                    f.payload().len()
                ),
                offset: f.payload_offset(),
                path: path.render(),
            });
        }
        payload.extend_from_slice(f.payload());
    }
    if !payload.is_empty() {
        wire::put_len(out, info.number, &payload);
    }
    Ok(())
}

/// The values of a varint field, packed and unpacked occurrences alike, each read as its kind.
fn varints(info: &FieldInfo, group: &[Field], path: &Path) -> Result<Vec<u64>, HloError> {
    let mut values = Vec::new();
    for f in group {
        if f.wire_type != WireType::LengthDelimited {
            values.push(normalize(info.kind, varint(f, path)?));
            continue;
        }
        let mut pos = 0;
        while pos < f.payload().len() {
            let v = wire::read_varint(f.payload(), &mut pos, f.payload_offset())
                .map_err(|e| HloError::from_wire(e, path.render()))?;
            values.push(normalize(info.kind, v));
        }
    }
    Ok(values)
}

fn varint(f: &Field, path: &Path) -> Result<u64, HloError> {
    f.varint().ok_or_else(|| HloError::BadVarint {
        offset: f.payload_offset(),
        path: path.render(),
    })
}

fn utf8(f: &Field, path: &Path) -> Result<(), HloError> {
    match std::str::from_utf8(f.payload()) {
        Ok(_) => Ok(()),
        Err(e) => Err(HloError::NotHlo {
            reason: "a string that is not UTF-8".into(),
            offset: f.payload_offset() + e.valid_up_to(),
            path: path.render(),
        }),
    }
}

/// A map entry always carries its key and value (as protobuf writes them), even when the input
/// left a default out.
fn complete_entry(out: Vec<u8>, msg: Msg) -> Vec<u8> {
    let Ok(fields) = wire::parse(&out, 0) else {
        return out;
    };
    let has = |n: u32| fields.iter().any(|f| f.number == n);
    if has(1) && has(2) {
        return out;
    }
    let mut full = Vec::with_capacity(out.len() + 4);
    if !has(1) {
        match msg {
            Msg::SequencesEntry => wire::put_varint(&mut full, 1, 0),
            _ => wire::put_len(&mut full, 1, b""),
        }
    }
    let (before, after): (Vec<&Field>, Vec<&Field>) = fields.iter().partition(|f| f.number < 2);
    for f in before {
        full.extend_from_slice(&f.raw);
    }
    if !has(2) {
        wire::put_len(&mut full, 2, b"");
    }
    for f in after {
        full.extend_from_slice(&f.raw);
    }
    full
}

/// The key of a canonical map entry (absent: the default).
fn map_key(entry: &[u8], msg: Msg) -> MapKey {
    let key = wire::parse(entry, 0)
        .ok()
        .and_then(|fields| fields.into_iter().find(|f| f.number == 1));
    match msg {
        Msg::SequencesEntry => MapKey::Int(key.and_then(|f| f.varint()).unwrap_or(0) as i64),
        _ => MapKey::Str(key.map(|f| f.payload().to_vec()).unwrap_or_default()),
    }
}
