//! Id renumbering on hand-made modules: twins that differ only in module, computation and
//! instruction ids share bytes; every kind of reference is rewritten; a changed constant still
//! differs; what cannot be resolved keeps its ids (and says why); renumbering is idempotent.
//! And on modules JAX 0.12.0.1 lowered one after the other in one process (tests/data/hlo/ids.*,
//! written by scripts/gen-hlo-testdata.py): twins share a digest, another constant does not.

use mck_hlo::tree::{Message, Value, decode};
use mck_hlo::{Canonical, Options, canonicalize};
use mck_protowire::{put_len, put_raw_varint, put_varint};

fn v(number: u32, value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, number, value);
    out
}

fn len(number: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_len(&mut out, number, payload);
    out
}

fn packed(number: u32, values: &[u64]) -> Vec<u8> {
    let mut payload = Vec::new();
    for &value in values {
        put_raw_varint(&mut payload, value);
    }
    len(number, &payload)
}

/// The ids one module is written with.
struct Numbering {
    module: u64,
    body: u64,
    entry: u64,
    /// body: parameter, constant, add; entry: parameter, while, get-tuple-element.
    instructions: [u64; 6],
    constant: u8,
}

const FIRST: Numbering = Numbering {
    module: 4,
    body: 1,
    entry: 2,
    instructions: [
        1 << 32 | 1,
        1 << 32 | 3,
        1 << 32 | 2,
        2 << 32 | 1,
        2 << 32 | 2,
        2 << 32 | 3,
    ],
    constant: 2,
};

/// The same program from a frontend whose counters stood elsewhere: other values, the same
/// order (XLA loads instructions in the order of their ids, so the order is the program's).
const SECOND: Numbering = Numbering {
    module: 5,
    body: 17,
    entry: 29,
    instructions: [40, 77, 41, 1000, 1003, 1999],
    constant: 2,
};

fn instruction(name: &str, opcode: &str, id: u64, rest: &[Vec<u8>]) -> Vec<u8> {
    let mut parts = vec![
        len(1, name.as_bytes()),
        len(2, opcode.as_bytes()),
        v(35, id),
    ];
    parts.extend_from_slice(rest);
    len(2, &parts.concat())
}

/// A module with a while body called from the entry, control predecessors, a schedule, an
/// alias config and a buffer donor: every kind of reference.
fn module(n: &Numbering) -> Vec<u8> {
    let [b_param, b_const, b_add, e_param, e_while, e_gte] = n.instructions;
    let body = [
        len(1, b"body"),
        instruction("p", "parameter", b_param, &[]),
        instruction("c", "constant", b_const, &[len(8, &[0x08, n.constant])]),
        instruction(
            "add",
            "add",
            b_add,
            &[packed(36, &[b_param, b_const]), packed(37, &[b_const])],
        ),
        v(5, n.body),
        v(6, b_add),
    ]
    .concat();
    let entry = [
        len(1, b"main"),
        instruction("x", "parameter", e_param, &[]),
        instruction(
            "w",
            "while",
            e_while,
            &[packed(36, &[e_param]), packed(38, &[n.body, n.body])],
        ),
        instruction("r", "get-tuple-element", e_gte, &[packed(36, &[e_while])]),
        v(5, n.entry),
        v(6, e_gte),
    ]
    .concat();
    let sequence = |computation: u64, ids: &[u64]| {
        len(1, &[v(1, computation), len(2, &packed(1, ids))].concat())
    };
    let schedule = [
        sequence(n.entry, &[e_param, e_while, e_gte]),
        sequence(n.body, &[b_param, b_const, b_add]),
    ]
    .concat();
    // Parameter 0 aliased with output {}; parameter 0 a donor: parameter numbers, not ids.
    let alias = len(1, &[v(2, 0), v(4, 1)].concat());
    let donor = len(1, &v(1, 0));
    [
        len(1, b"jit_f"),
        len(2, b"main"),
        len(3, &body),
        len(3, &entry),
        v(5, n.module),
        v(6, n.entry),
        len(7, &schedule),
        len(8, &alias),
        len(18, &donor),
    ]
    .concat()
}

fn canon(bytes: &[u8]) -> Canonical {
    canonicalize(bytes, &Options::default()).expect("canonicalize")
}

fn keep_ids(bytes: &[u8]) -> Canonical {
    let options = Options {
        keep_ids: true,
        ..Options::default()
    };
    canonicalize(bytes, &options).expect("canonicalize")
}

fn ints(m: &Message, number: u32) -> Vec<i64> {
    m.get(number)
        .map(|value| match value {
            Value::Int(i) => *i,
            other => panic!("#{number} is {other:?}"),
        })
        .collect()
}

fn messages(m: &Message, number: u32) -> Vec<&Message> {
    m.get(number)
        .map(|value| match value {
            Value::Message(inner) => inner,
            other => panic!("#{number} is {other:?}"),
        })
        .collect()
}

fn opaque(m: &Message, number: u32) -> Vec<u8> {
    match m.get(number).next() {
        Some(Value::Opaque(_, bytes)) => bytes.clone(),
        other => panic!("#{number} is {other:?}"),
    }
}

#[test]
fn twins_that_differ_only_in_ids_share_bytes() {
    let (first, second) = (module(&FIRST), module(&SECOND));
    assert_ne!(first, second);
    let (a, b) = (canon(&first), canon(&second));
    assert_eq!(a.bytes, b.bytes);
    assert!(a.report.renumbered_ids, "{:?}", a.report);
    assert_eq!(a.report.ids_kept, None);
    // Kept, the ids tell them apart.
    assert_ne!(keep_ids(&first).bytes, keep_ids(&second).bytes);
}

/// Whether two numberings of the module canonicalize alike.
fn alike(a: &Numbering, b: &Numbering) -> bool {
    canon(&module(a)).bytes == canon(&module(b)).bytes
}

#[test]
fn a_changed_constant_still_differs() {
    let (first, second) = (
        Numbering {
            constant: 3,
            ..FIRST
        },
        Numbering {
            constant: 3,
            ..SECOND
        },
    );
    assert!(!alike(&FIRST, &first));
    assert!(alike(&first, &second));
}

#[test]
fn every_reference_kind_is_rewritten() {
    let m = decode(&canon(&module(&SECOND)).bytes).unwrap();
    let c = |computation: i64, local: i64| computation << 32 | local;
    assert_eq!(ints(&m, 5), Vec::<i64>::new(), "module id 0 is left out");
    assert_eq!(ints(&m, 6), [2], "entry_computation_id");
    let computations = messages(&m, 3);
    let (body, entry) = (computations[0], computations[1]);
    assert_eq!((ints(body, 5), ints(entry, 5)), (vec![1], vec![2]));
    let body_instructions = messages(body, 2);
    let entry_instructions = messages(entry, 2);
    // Dense, in the order of the old ids (40, 77, 41: the constant was made last).
    let ids = |instructions: &[&Message]| -> Vec<i64> {
        instructions.iter().flat_map(|i| ints(i, 35)).collect()
    };
    assert_eq!(ids(&body_instructions), [c(1, 1), c(1, 3), c(1, 2)]);
    assert_eq!(ids(&entry_instructions), [c(2, 1), c(2, 2), c(2, 3)]);
    assert_eq!(ints(body, 6), [c(1, 2)], "root_id");
    assert_eq!(ints(entry, 6), [c(2, 3)], "root_id");
    let add = body_instructions[2];
    assert_eq!(ints(add, 36), [c(1, 1), c(1, 3)], "operand_ids");
    assert_eq!(ints(add, 37), [c(1, 3)], "control_predecessor_ids");
    let called = ints(entry_instructions[1], 38);
    assert_eq!(called, [1, 1], "called_computation_ids");
    assert_eq!(ints(entry_instructions[2], 36), [c(2, 2)]);
    // The schedule: keyed by the new computation ids (sorted), the new instruction ids.
    let schedule = messages(&m, 7)[0];
    let sequences = messages(schedule, 1);
    assert_eq!(ints(sequences[0], 1), [1]);
    assert_eq!(ints(sequences[1], 1), [2]);
    let ids_of = |entry: &Message| ints(messages(entry, 2)[0], 1);
    assert_eq!(ids_of(sequences[0]), [c(1, 1), c(1, 3), c(1, 2)]);
    assert_eq!(ids_of(sequences[1]), [c(2, 1), c(2, 2), c(2, 3)]);
    // Alias and donor configs name parameter numbers: unchanged.
    let input = decode(&module(&SECOND)).unwrap();
    assert_eq!(opaque(&m, 8), opaque(&input, 8));
    assert_eq!(opaque(&m, 18), opaque(&input, 18));
}

#[test]
fn another_order_of_ids_is_another_program() {
    // The parameter made after the constant: XLA would load the body in another order.
    let mut reordered = Numbering { ..FIRST };
    reordered.instructions.swap(0, 1);
    assert!(!alike(&FIRST, &reordered));
}

#[test]
fn renumbering_is_idempotent() {
    for n in [&FIRST, &SECOND] {
        let once = canon(&module(n)).bytes;
        assert_eq!(canon(&once).bytes, once);
    }
}

#[test]
fn absent_ids_are_ids_of_zero() {
    // XLA's text parser leaves ids of 0 out: computation 0, instruction 0, entry 0.
    let computation = [
        len(1, b"main"),
        len(2, &[len(1, b"x"), len(2, b"parameter")].concat()),
        len(
            2,
            &[len(1, b"n"), len(2, b"negate"), v(35, 1), packed(36, &[0])].concat(),
        ),
        v(6, 1),
    ]
    .concat();
    let legacy = [len(1, b"m"), len(3, &computation)].concat();
    let c = canon(&legacy);
    assert!(c.report.renumbered_ids, "{:?}", c.report);
    let m = decode(&c.bytes).unwrap();
    assert_eq!(ints(&m, 6), [1]);
    let main = messages(&m, 3)[0];
    assert_eq!(ints(main, 5), [1]);
    let instructions = messages(main, 2);
    assert_eq!(ints(instructions[0], 35), [1 << 32 | 1]);
    assert_eq!(ints(instructions[1], 36), [1 << 32 | 1]);
}

/// Canonicalizes a module whose ids cannot be renumbered with certainty: the ids stay as they
/// are (the module id aside) and the report says why.
fn kept(bytes: &[u8], why: &str) {
    let c = canon(bytes);
    assert!(!c.report.renumbered_ids);
    let reason = c.report.ids_kept.clone().unwrap_or_default();
    assert!(reason.contains(why), "{reason:?} does not say {why:?}");
    let without_module_id = decode(&keep_ids(bytes).bytes)
        .unwrap()
        .fields
        .into_iter()
        .filter(|f| f.number != 5)
        .collect::<Vec<_>>();
    assert_eq!(decode(&c.bytes).unwrap().fields, without_module_id);
}

#[test]
fn what_cannot_be_resolved_keeps_its_ids() {
    // An operand that is no instruction of its computation.
    let mut dangling = module(&SECOND);
    dangling.extend(len(
        3,
        &[
            len(1, b"x"),
            instruction("y", "negate", 8, &[packed(36, &[9])]),
        ]
        .concat(),
    ));
    kept(
        &dangling,
        "computations[2].instructions[0].operand_ids: id 9 refers to nothing",
    );
    // A while that calls a computation the module does not have.
    let mut lost = module(&SECOND);
    lost.extend(len(
        3,
        &[v(5, 50), instruction("w", "call", 7, &[packed(38, &[51])])].concat(),
    ));
    kept(&lost, "id 51 refers to nothing");
    // Two computations with one id.
    let mut twice = module(&SECOND);
    twice.extend(len(3, &v(5, SECOND.body)));
    kept(&twice, "two computations have id 17");
    // A field the table does not know may hold ids.
    let mut unknown = module(&SECOND);
    unknown.extend(len(
        3,
        &[v(5, 60), instruction("z", "negate", 1, &[v(500, 1)])].concat(),
    ));
    kept(&unknown, "HloInstructionProto: field #500 is unknown");
    // Debug attributes carry an op_id.
    let mut attributes = module(&SECOND);
    attributes.extend(len(24, &len(2, &v(3, 7))));
    kept(&attributes, "debug_attributes");
}

fn data(name: &str) -> Vec<u8> {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/hlo")
        .join(format!("{name}.pb"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn module_id(bytes: &[u8]) -> Vec<i64> {
    ints(&decode(bytes).unwrap(), 5)
}

#[test]
fn twins_lowered_in_one_process_share_a_digest() {
    for (a, b) in [
        ("ids.mlp.a", "ids.mlp.b"),
        ("ids.scan.a", "ids.scan.b"),
        ("ids.scan.a", "ids.scan.shifted"),
        ("ids.donate.a", "ids.donate.b"),
    ] {
        let (a_in, b_in) = (data(a), data(b));
        assert_ne!(
            module_id(&a_in),
            module_id(&b_in),
            "{a} and {b}: one module id"
        );
        let (ca, cb) = (canon(&a_in), canon(&b_in));
        assert!(ca.report.renumbered_ids, "{a}: {:?}", ca.report);
        assert_eq!(ca.digest(), cb.digest(), "{a} vs {b}");
        // Their ids alone tell them apart.
        let keep = |bytes: &[u8]| {
            let options = Options {
                keep_ids: true,
                ..Options::default()
            };
            canonicalize(bytes, &options).unwrap().digest()
        };
        assert_ne!(keep(&a_in), keep(&b_in), "{a} vs {b}");
    }
    let scan = decode(&canon(&data("ids.scan.a")).bytes).unwrap();
    assert!(messages(&scan, 3).len() > 2, "the scan calls computations");
    let donate = decode(&canon(&data("ids.donate.a")).bytes).unwrap();
    assert!(!opaque(&donate, 8).is_empty(), "the donation is an alias");
}

#[test]
fn another_constant_lowered_in_the_same_process_differs() {
    let base = canon(&data("ids.mlp.a"));
    let changed = canon(&data("ids.mlp.const"));
    assert!(changed.report.renumbered_ids);
    assert_ne!(base.digest(), changed.digest());
}
