//! `validate`: what MLIR's reader would trust is checked first. Each case is
//! a payload our reader accepted before these checks, built the way the
//! writer lays it out, with one thing made wrong that MLIR would allocate,
//! index or loop on.

use super::common;

use common::*;
use mck_bytecode::{BytecodeError, validate};

/// `small_module` plus an unregistered op `wrap` with one region whose
/// block and ops are `body` (already encoded), declaring `values` values.
fn with_region(values: u64, body: &[u8]) -> Vec<u8> {
    let (mut b, loc) = small_module("f.py", 1, 2);
    let wrap = b.op(0, "wrap", false);
    let mut ir = v(1 << 1);
    ir.extend(v(wrap as u64));
    ir.push(0x10); // regions
    ir.extend(v(loc as u64));
    ir.extend(v(1 << 1)); // one region, not isolated
    ir.extend(v(1)); // one block
    ir.extend(v(values));
    ir.extend_from_slice(body);
    b.ir = ir;
    b.build()
}

fn message(payload: &[u8]) -> String {
    validate(payload).expect_err("invalid").to_string()
}

#[test]
fn real_payloads_are_valid() {
    for name in PAYLOADS {
        let valid = validate(&data(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(valid.operations > 0 && !valid.op_names.is_empty(), "{name}");
    }
}

#[test]
fn a_region_defines_exactly_the_values_it_declares() {
    // MLIR reserves what a region declares before reading it.
    let declared_too_many = with_region(1 << 40, &v(0)); // an empty block
    let err = message(&declared_too_many);
    assert!(
        err.contains("declares 1099511627776 values but defines 0"),
        "{err}"
    );
    assert!(err.contains("(in the ir section, bytes "), "{err}");
}

#[test]
fn operands_name_values_of_their_scope() {
    // The top level has no value slots at all.
    let (mut b, loc) = small_module("f.py", 1, 2);
    let user = b.op(0, "use", false);
    let mut ir = v(1 << 1);
    ir.extend(v(user as u64));
    ir.push(0x04); // operands
    ir.extend(v(loc as u64));
    ir.extend(v(1));
    ir.extend(v(0));
    b.ir = ir;
    let payload = b.build();
    assert!(matches!(
        validate(&payload).unwrap_err().error,
        BytecodeError::InvalidIndex {
            what: "value",
            index: 0,
            count: 0,
            ..
        }
    ));
}

#[test]
fn the_top_level_block_has_no_arguments() {
    // MLIR would define them before it opens the scope that holds them.
    let (mut b, _) = small_module("f.py", 1, 2);
    let mut ir = v(1 << 1 | 1);
    ir.extend(v(0)); // no arguments after all
    ir.extend_from_slice(&b.ir[1..]);
    b.ir = ir;
    let payload = b.build();
    assert!(message(&payload).contains("the top-level block has arguments"));
}

#[test]
fn use_list_orders_name_existing_uses() {
    // Version 3: a block argument used twice, with an index-pair order.
    let payload = |order: &[u64]| {
        let mut b = Builder::new(3);
        let builtin = b.dialect("builtin");
        let wrap = b.op(builtin, "wrap", false);
        let user = b.op(builtin, "use", false);
        let mut int = v(0);
        int.extend(v(32 << 2));
        let ty = b.ty(builtin, int);
        let loc = b.attr(builtin, v(15)); // UnknownLoc
        let mut ir = v(1 << 1);
        ir.extend(v(wrap as u64));
        ir.push(0x10);
        ir.extend(v(loc as u64));
        ir.extend(v(1 << 1));
        ir.extend(v(1)); // one block
        ir.extend(v(1)); // one value: the argument
        ir.extend(v(2 << 1 | 1)); // two ops, arguments
        ir.extend(v(1));
        ir.extend(v(ty as u64));
        ir.extend(v(loc as u64));
        ir.push(1); // use-list orders follow
        ir.extend(v((order.len() as u64) << 1 | 1)); // index pairs
        order.iter().for_each(|&i| ir.extend(v(i)));
        for _ in 0..2 {
            ir.extend(v(user as u64));
            ir.push(0x04);
            ir.extend(v(loc as u64));
            ir.extend(v(1));
            ir.extend(v(0));
        }
        b.ir = ir;
        b.build()
    };
    validate(&payload(&[0, 1, 1, 0])).expect("a valid swap");
    // MLIR writes use 5 of 2 before checking anything.
    let bad = payload(&[5, 0, 1, 1]);
    assert!(
        message(&bad).contains("does not permute the 2 uses"),
        "{}",
        message(&bad)
    );
}

#[test]
fn reference_cycles_are_refused() {
    // MLIR resolves what an entry refers to first: a cycle never ends.
    let (mut b, _) = small_module("f.py", 1, 2);
    let next = b.attrs.len() as u64;
    let mut array = v(0); // ArrayAttr
    array.extend(v(1));
    array.extend(v(next + 1));
    b.attr(0, array);
    let mut array = v(0);
    array.extend(v(1));
    array.extend(v(next));
    b.attr(0, array);
    let payload = b.build();
    let err = message(&payload);
    assert!(err.contains("a reference cycle"), "{err}");
    assert!(err.contains("(in the attr/type section"), "{err}");
    // MLIR follows the reference before it finds the entry malformed.
    b.attrs.last_mut().unwrap().2.push(0x03);
    assert!(message(&b.build()).contains("a reference cycle"));
}

#[test]
fn errors_name_the_offset_and_section() {
    let (mut b, _) = small_module("f.py", 1, 2);
    b.ir[3] = 0x7f; // location index 63 of 6 attributes
    let payload = b.build();
    let invalid = validate(&payload).unwrap_err();
    let ir = invalid.section.as_ref().expect("a section");
    assert_eq!(ir.name, "ir");
    assert!(ir.range().contains(&invalid.error.offset().unwrap()));
    assert!(
        invalid
            .to_string()
            .starts_with("invalid attribute index 63 at offset 0x")
    );
}
