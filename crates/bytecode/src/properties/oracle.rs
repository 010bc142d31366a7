//! The property table against the real producer: for every kernel of the
//! Triton sweep, the inherent attributes each op's decoded blob holds must be
//! those jaxlib's own MLIR (with the Triton dialect) reads from it
//! (`ops.tsv`, written by `scripts/gen-triton-sweep.py`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::schema::lookup;
use crate::model::Parsed;

/// `op(attrs)` → count, for the ops whose decoded blob holds attributes.
fn decoded_ops(parsed: &Parsed<'_>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for &(blob, _, name) in &parsed.ir.props_refs {
        let name = parsed.op_name(name);
        let refs = parsed.blob_reads[blob].as_ref().expect("decoded blob");
        let mut fields: Vec<&str> = refs
            .iter()
            .filter(|r| r.op == name)
            .map(|r| r.field)
            .collect();
        let schema = lookup(&name).expect("schema");
        if schema.operand_segments > 0 {
            fields.push("operandSegmentSizes");
        }
        if schema.result_segments > 0 {
            fields.push("resultSegmentSizes");
        }
        if fields.is_empty() {
            continue;
        }
        fields.sort_unstable();
        *out.entry(format!("{name}({})", fields.join(",")))
            .or_default() += 1;
    }
    out
}

#[test]
fn decoded_blobs_hold_what_jaxlib_reads() {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/kernels/triton-sweep");
    let oracle = std::fs::read_to_string(dir.join("ops.tsv")).expect("ops.tsv");
    let mut kernels = 0;
    for line in oracle.lines() {
        let (file, ops) = line.split_once('\t').expect("two columns");
        let expected: BTreeMap<String, usize> = ops
            .split(' ')
            .map(|op| match op.rsplit_once(")*") {
                Some((op, n)) => (format!("{op})"), n.parse().expect("count")),
                None => (op.to_string(), 1),
            })
            .collect();
        let payload = std::fs::read(dir.join(file)).expect(file);
        let parsed = Parsed::parse(&payload).expect(file);
        assert_eq!(decoded_ops(&parsed), expected, "{file}");
        kernels += 1;
    }
    assert!(kernels >= 20, "{kernels} kernels checked");
}
