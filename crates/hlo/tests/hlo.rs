//! mck-hlo against HloModuleProtos lowered by JAX 0.12.0.1 (tests/data/hlo/, written by
//! scripts/gen-hlo-testdata.py) and against hand-made and hostile bytes.

use mck_hlo::schema::{self, Card, Kind, Msg};
use mck_hlo::tree::{Message, Value, decode};
use mck_hlo::{Canonical, Options, canonicalize, sniff};
use std::path::PathBuf;

fn data(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/hlo")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

const ALL: [&str; 9] = [
    "mlp.a.pb",
    "mlp.b.pb",
    "mlp.const.pb",
    "mlp.shape.pb",
    "mlp.op.pb",
    "loop.a.pb",
    "loop.b.pb",
    "legacy.a.pb",
    "legacy.b.pb",
];

const TWINS: [(&str, &str); 3] = [
    ("mlp.a.pb", "mlp.b.pb"),
    ("loop.a.pb", "loop.b.pb"),
    ("legacy.a.pb", "legacy.b.pb"),
];

fn canon(bytes: &[u8]) -> Canonical {
    canonicalize(bytes, &Options::default()).expect("canonicalize")
}

#[test]
fn location_twins_share_canonical_bytes() {
    for (a, b) in TWINS {
        let (a_in, b_in) = (data(a), data(b));
        assert_ne!(a_in, b_in, "{a} and {b} are not twins to begin with");
        let (ca, cb) = (canon(&a_in), canon(&b_in));
        assert_eq!(ca.bytes, cb.bytes, "{a} vs {b}");
        assert_eq!(ca.digest(), cb.digest());
        assert_eq!(ca.name, cb.name);
    }
}

#[test]
fn keeping_locations_keeps_the_twins_apart() {
    let keep = Options {
        keep_locations: true,
        keep_ids: false,
    };
    for (a, b) in TWINS {
        let ca = canonicalize(&data(a), &keep).unwrap();
        let cb = canonicalize(&data(b), &keep).unwrap();
        assert_ne!(ca.bytes, cb.bytes, "{a} vs {b}");
    }
}

#[test]
fn a_changed_constant_shape_or_op_changes_the_bytes() {
    let base = canon(&data("mlp.a.pb"));
    for changed in ["mlp.const.pb", "mlp.shape.pb", "mlp.op.pb"] {
        let c = canon(&data(changed));
        assert_ne!(c.bytes, base.bytes, "{changed}");
        assert_ne!(c.digest(), base.digest(), "{changed}");
        assert_eq!(c.name, base.name);
    }
}

#[test]
fn names_and_report() {
    let c = canon(&data("loop.a.pb"));
    assert_eq!(c.name, "jit_f");
    assert_eq!(c.report.computations, 3);
    assert!(c.report.instructions > 10, "{:?}", c.report);
    assert!(c.report.cleared_stack_frame_index);
    assert!(c.report.cleared_metadata_fields > 0);
    assert_eq!(c.report.unknown_fields, 0);
    let legacy = canon(&data("legacy.a.pb"));
    assert!(!legacy.report.cleared_stack_frame_index);
    // source_file, line, end line, column, end column on 3 instructions; 3 fields on one.
    assert_eq!(legacy.report.cleared_metadata_fields, 3 * 5 + 3);
}

/// Removes the debug fields from a decoded message, recursively.
fn without_debug(m: &Message) -> Message {
    Message {
        msg: m.msg,
        fields: m
            .fields
            .iter()
            .filter(|f| !schema::is_debug(m.msg, f.number))
            .map(|f| {
                let mut f = f.clone();
                if let Value::Message(inner) = &f.value {
                    f.value = Value::Message(without_debug(inner));
                }
                f
            })
            .collect(),
    }
}

fn count_debug(m: &Message) -> usize {
    m.fields
        .iter()
        .map(|f| {
            usize::from(schema::is_debug(m.msg, f.number))
                + match &f.value {
                    Value::Message(inner) => count_debug(inner),
                    _ => 0,
                }
        })
        .sum()
}

#[test]
fn canonical_bytes_decode_to_the_input_without_its_debug_fields() {
    for name in ALL {
        let input = data(name);
        let before = decode(&input).expect("the input decodes");
        assert!(
            count_debug(&before) > 0,
            "{name} has no debug fields to clear"
        );
        let ids_kept = Options {
            keep_ids: true,
            ..Options::default()
        };
        let canonical = canonicalize(&input, &ids_kept).unwrap();
        let after = decode(&canonical.bytes).expect("the canonical bytes decode");
        assert_eq!(count_debug(&after), 0, "{name}");
        assert_eq!(after, without_debug(&before), "{name}");
    }
}

#[test]
fn xla_output_is_already_canonical_apart_from_the_cleared_fields() {
    let keep = Options {
        keep_locations: true,
        keep_ids: true,
    };
    for name in ALL {
        let input = data(name);
        assert_eq!(canonicalize(&input, &keep).unwrap().bytes, input, "{name}");
        let once = canon(&input).bytes;
        assert_eq!(canon(&once).bytes, once, "{name}: not idempotent");
    }
}

#[test]
fn sniff_tells_hlo_from_mlir() {
    for name in ALL {
        assert!(sniff(&data(name)), "{name}");
    }
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/corpus/cpu");
    for module in ["mlp.a.mlir", "mlp.a.generic.mlir"] {
        let bytes = std::fs::read(corpus.join(module)).unwrap();
        assert!(!sniff(&bytes), "{module}");
    }
    assert!(!sniff(b"ML\xefR\x06mlir-cache-key/1\0"));
    assert!(!sniff(b""));
    // A name but no computation.
    assert!(!sniff(b"\x0a\x01m"));
}

/// The table matches the descriptors compiled into jaxlib 0.12.0.1 (crates/hlo/src/fields.txt,
/// written by scripts/gen-hlo-testdata.py).
#[test]
fn table_matches_the_jaxlib_descriptors() {
    let text = include_str!("../src/fields.txt");
    let mut seen = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let words: Vec<&str> = line.split(' ').collect();
        let msg = schema::ALL
            .into_iter()
            .find(|m| m.proto_name() == words[0])
            .unwrap_or_else(|| panic!("{line}: message not in the table"));
        let number: u32 = words[1].parse().unwrap();
        let info =
            schema::lookup(msg, number).unwrap_or_else(|| panic!("{line}: not in the table"));
        assert_eq!(info.name, words[2], "{line}");
        let kind = match info.kind {
            Kind::Bool => "bool".to_string(),
            Kind::Int32 => "int32".into(),
            Kind::Int64 => "int64".into(),
            Kind::Uint32 => "uint32".into(),
            Kind::Uint64 => "uint64".into(),
            Kind::Float => "float".into(),
            Kind::Double => "double".into(),
            Kind::Enum => "enum".into(),
            Kind::Str => "string".into(),
            Kind::Bytes => "bytes".into(),
            Kind::Msg(m) => format!("xla.{}", m.proto_name()),
            Kind::Opaque(name) => name.into(),
        };
        assert_eq!(kind, words[3], "{line}");
        let label = if info.card == Card::One {
            "optional"
        } else {
            "repeated"
        };
        assert_eq!(label, words[4], "{line}");
        let is_message = matches!(info.kind, Kind::Msg(_) | Kind::Opaque(_));
        assert_eq!(
            info.presence && !is_message,
            words.get(5) == Some(&"presence") && !is_message,
            "{line}"
        );
        seen += 1;
    }
    let described: usize = schema::ALL
        .into_iter()
        .map(|m| schema::fields(m).len())
        .sum();
    assert_eq!(seen, described, "the table has fields jaxlib does not");
    assert_eq!(
        schema::lookup(Msg::OpMetadata, 15).unwrap().name,
        "stack_frame_id"
    );
}
