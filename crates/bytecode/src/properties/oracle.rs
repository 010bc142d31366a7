//! The property table and the operation listing against the real producer:
//! for every kernel of the Triton sweep, the inherent attributes each op's
//! decoded blob holds, and those the listing shows, must be those jaxlib's own
//! MLIR (with the Triton dialect) reads from it (`ops.tsv`, written by
//! `scripts/gen-triton-sweep.py`); the listing has every operation.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::lookup::lookup;
use crate::model::Parsed;

/// `op(fields)` → count, for the operations given with at least one field.
fn tally<'f>(ops: impl IntoIterator<Item = (String, Vec<&'f str>)>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (name, mut fields) in ops {
        if fields.is_empty() {
            continue;
        }
        fields.sort_unstable();
        *out.entry(format!("{name}({})", fields.join(",")))
            .or_default() += 1;
    }
    out
}

/// `op(attrs)` → count, for the ops whose decoded blob holds attributes.
fn decoded_ops(parsed: &Parsed<'_>) -> BTreeMap<String, usize> {
    tally(parsed.ir.props_refs.iter().map(|&(blob, _, name)| {
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
        (name, fields)
    }))
}

/// Calls `check` with each kernel of the sweep: its file name, bytes and what
/// jaxlib reads (`op(attrs)` → count); checks that there are enough of them.
fn for_each_sweep_kernel(mut check: impl FnMut(&str, &[u8], BTreeMap<String, usize>)) {
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
        check(file, &payload, expected);
        kernels += 1;
    }
    assert!(kernels >= 20, "{kernels} kernels checked");
}

#[test]
fn decoded_blobs_hold_what_jaxlib_reads() {
    for_each_sweep_kernel(|file, payload, expected| {
        let parsed = Parsed::parse(payload).expect(file);
        assert_eq!(decoded_ops(&parsed), expected, "{file}");
    });
}

#[test]
fn the_listing_shows_every_operation_and_the_properties_jaxlib_reads() {
    for_each_sweep_kernel(|file, payload, expected| {
        // Segment sizes are not attributes: the listing shows the operands instead.
        let expected: BTreeMap<String, usize> = expected
            .into_iter()
            .map(|(op, n)| (op.replace(",operandSegmentSizes", ""), n))
            .collect();
        let listing = crate::listing::ops(payload).expect(file);
        let shown = tally(listing.iter().map(|op| {
            let fields = op.properties.iter().map(|(f, _)| f.as_str()).collect();
            (op.name.clone(), fields)
        }));
        assert_eq!(shown, expected, "{file}");
        let parsed = Parsed::parse(payload).expect(file);
        assert_eq!(listing.len(), parsed.ir.ops, "{file}");
        assert!(
            listing.iter().enumerate().all(|(i, op)| op.position == i),
            "{file}: positions in pre-order"
        );
    });
}
