//! Module, computation and instruction ids, renumbered in an order that does not depend on them.
//!
//! Ids are names, not semantics: XLA takes `HloModuleProto.id` from a per-process counter, and
//! a frontend that lowered other graphs first numbers computations and instructions from
//! elsewhere. Renumbered, twins share bytes. The canonical numbering: the module id is 0;
//! computations are 1, 2, … and the instructions of computation `c` are `c << 32 | 1`,
//! `c << 32 | 2`, … (XLA's own scheme, a computation's id in the high half), each in the order
//! of their old ids: the order depends on how the ids compare, never on their values. It is
//! kept because XLA's loader (`HloModule::CreateFromProto`, `HloComputation::CreateFromProto`)
//! orders computations and instructions by id, so the renumbered module loads exactly as the
//! original did; renumbered in proto order, a module whose ids are not in proto order (XLA's
//! own output often is not) would reach a compiler that reads HLO directly with its
//! instructions in another order. XLA's own numbering is already dense: for its output only
//! the module id changes. Every reference is rewritten with the same map (see [`role`]); the
//! input/output alias, buffer donor and cross-program prefetch configs name parameter
//! numbers, not ids, and stay as they are.
//!
//! Never a false hit: when a reference does not resolve (a dangling or duplicate id), or the
//! module holds a field that might hold ids unseen (a field the table does not know, debug
//! attributes), the ids are kept as they are and [`crate::Report::ids_kept`] says why.

use std::collections::HashMap;

use crate::schema::Msg;
use crate::wire;

/// What an id field refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// `HloModuleProto.id`: refers to nothing; written as 0 (left out).
    Module,
    /// A computation id.
    Computation,
    /// A schedule sequence's key: a computation id, and the scope of the sequence's
    /// instruction ids.
    ScheduleKey,
    /// An instruction id of the computation in scope.
    Instruction,
}

/// Every field of the described messages that holds an id, with what it refers to.
const ID_FIELDS: [(Msg, u32, Role); 10] = [
    (Msg::HloModule, 5, Role::Module),                // id
    (Msg::HloModule, 6, Role::Computation),           // entry_computation_id
    (Msg::HloComputation, 5, Role::Computation),      // id
    (Msg::HloComputation, 6, Role::Instruction),      // root_id
    (Msg::HloInstruction, 35, Role::Instruction),     // id
    (Msg::HloInstruction, 36, Role::Instruction),     // operand_ids
    (Msg::HloInstruction, 37, Role::Instruction),     // control_predecessor_ids
    (Msg::HloInstruction, 38, Role::Computation),     // called_computation_ids
    (Msg::SequencesEntry, 1, Role::ScheduleKey),      // key
    (Msg::InstructionSequence, 1, Role::Instruction), // instruction_ids
];

/// What the field `number` of `msg` refers to, if it holds ids.
pub(crate) fn role(msg: Msg, number: u32) -> Option<Role> {
    ID_FIELDS
        .iter()
        .find(|(m, n, _)| *m == msg && *n == number)
        .map(|&(_, _, role)| role)
}

/// The singular id fields a message of `msg` refers with even when they are absent (proto3
/// reads an absent int64 as 0, and XLA's text parser leaves ids of 0 out).
pub(crate) fn implied(msg: Msg) -> &'static [u32] {
    match msg {
        Msg::HloModule => &[6],
        Msg::HloComputation => &[5, 6],
        Msg::HloInstruction => &[35],
        Msg::SequencesEntry => &[1],
        _ => &[],
    }
}

/// Whether ids may hide in an unknown field of `msg` (the messages that hold ids, and those
/// around them).
pub(crate) fn may_hold_ids(msg: Msg) -> bool {
    matches!(
        msg,
        Msg::HloModule
            | Msg::HloComputation
            | Msg::HloInstruction
            | Msg::HloSchedule
            | Msg::SequencesEntry
            | Msg::InstructionSequence
    )
}

/// Module fields that may refer to ids in ways this crate does not rewrite: their presence
/// keeps the ids. `debug_attributes` carry an `op_id` whose meaning XLA does not document.
pub(crate) const UNREWRITTEN: [(u32, &str); 1] = [(24, "debug_attributes")];

/// The old-to-new maps of one module.
#[derive(Debug, Default)]
pub(crate) struct Ids {
    /// Old computation id → (its index in the module, its new id).
    computations: HashMap<u64, (usize, u64)>,
    /// Per computation (by index): old instruction id → new id.
    instructions: Vec<HashMap<u64, u64>>,
}

impl Ids {
    /// The maps of a serialized module; `Err` says why its ids must be kept.
    pub(crate) fn plan(module: &[u8]) -> Result<Ids, String> {
        let malformed = |e: wire::WireError| format!("malformed at byte {}", e.offset);
        let mut old_computations = Vec::new();
        let mut ids = Ids::default();
        let fields = wire::parse(module, 0).map_err(malformed)?;
        for computation in fields.iter().filter(|f| f.number == 3) {
            let fields = wire::parse(computation.payload(), computation.payload_offset())
                .map_err(malformed)?;
            old_computations.push(last_varint(&fields, 5));
            let mut old_instructions = Vec::new();
            for instruction in fields.iter().filter(|f| f.number == 2) {
                let fields = wire::parse(instruction.payload(), instruction.payload_offset())
                    .map_err(malformed)?;
                old_instructions.push(last_varint(&fields, 35));
            }
            let index = ids.instructions.len();
            let ranks = ranks(&old_instructions)
                .map_err(|id| format!("two instructions of computation {index} have id {id}"))?;
            ids.instructions.push(ranks);
        }
        let ranks =
            ranks(&old_computations).map_err(|id| format!("two computations have id {id}"))?;
        for (index, old) in old_computations.into_iter().enumerate() {
            let new = ranks[&old];
            ids.computations.insert(old, (index, new));
            for local in ids.instructions[index].values_mut() {
                *local |= new << 32;
            }
        }
        Ok(ids)
    }

    /// The new id of computation `old`, and its index.
    pub(crate) fn computation(&self, old: u64) -> Option<(usize, u64)> {
        self.computations.get(&old).copied()
    }

    /// The new id of instruction `old` of the computation at `scope`.
    pub(crate) fn instruction(&self, scope: Option<usize>, old: u64) -> Option<u64> {
        self.instructions.get(scope?)?.get(&old).copied()
    }
}

/// Each id's rank among `ids`, from 1; `Err` holds an id that repeats.
fn ranks(ids: &[u64]) -> Result<HashMap<u64, u64>, u64> {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    if let Some(pair) = sorted.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(pair[0]);
    }
    Ok((1..).zip(sorted).map(|(rank, id)| (id, rank)).collect())
}

/// The value of a singular varint field as protobuf reads it: the last one, else 0.
fn last_varint(fields: &[wire::Field<'_>], number: u32) -> u64 {
    fields
        .iter()
        .rev()
        .find(|f| f.number == number)
        .and_then(|f| f.varint())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema;

    #[test]
    fn id_fields_are_int64_fields_of_the_table() {
        for (msg, number, _) in ID_FIELDS {
            let info = schema::lookup(msg, number).expect("in the table");
            assert_eq!(info.kind, schema::Kind::Int64, "{msg:?} #{number}");
        }
        for msg in schema::ALL {
            for &number in implied(msg) {
                assert!(role(msg, number).is_some(), "{msg:?} #{number}");
            }
        }
    }
}
