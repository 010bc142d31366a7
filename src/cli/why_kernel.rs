//! `why` inside an embedded kernel: when two canonical modules first differ in a custom call's
//! kernel, the escaped bytes of its attribute tell a person nothing. This names the call (its
//! index among the custom calls, kind, target and pre-order position), then the first differing
//! operation inside the kernel by name and pre-order position, with the differing text. The
//! kernel is read by this MLIR when it can (kernels of upstream dialects are: generic form);
//! otherwise dialect-free, through the bytecode reader's listing of operations (real Triton and
//! Mosaic kernels, whose dialects this MLIR lacks); only when that listing fails, through the
//! container's operation count, names and section table.

use crate::bytecode;
use crate::canon::KernelKind;
use crate::canon::kernels::payload_of;
use crate::key::explain::pinpoint;
use crate::mlir::ops::{OpRef, print_operation};
use crate::mlir::parse::read_to_explain;
use crate::mlir::walk::{WalkMode, walk};
use crate::mlir::{new_context, parse_module};
use mck_cli::why::first_differing_line;
use melior::Context;

/// The lines that replace the computation's details when the first difference of the
/// canonical texts `a` and `b` is inside a kernel; `None` otherwise.
pub(super) fn kernel_details(a: &str, b: &str) -> Option<Vec<String>> {
    let line = first_differing_line(a, b)?;
    if !a.lines().nth(line)?.contains("\"stablehlo.custom_call\"") {
        return None;
    }
    let context = new_context();
    let (calls_a, calls_b) = (kernels(&context, a)?, kernels(&context, b)?);
    let (index, (old, new)) = calls_a
        .iter()
        .zip(&calls_b)
        .enumerate()
        .find(|(_, (x, y))| x.kernel != y.kernel)?;
    let (Some((kind, old_kernel)), Some((new_kind, new_kernel))) = (&old.kernel, &new.kernel)
    else {
        return None;
    };
    if (kind, &old.target) != (new_kind, &new.target) {
        return None;
    }
    let mut out = vec![format!(
        "first difference is inside the {} kernel of stablehlo.custom_call #{index} \
         (call_target_name {:?}, operation #{} in pre-order, canonical line {})",
        match kind {
            KernelKind::Mosaic => "Mosaic",
            KernelKind::Triton => "Triton",
        },
        old.target,
        old.position,
        line + 1,
    )];
    match (
        kernel_text(&context, old_kernel),
        kernel_text(&context, new_kernel),
    ) {
        (Some((x, misread_x)), Some((y, misread_y))) => {
            out.extend(operation_difference(&x, &y));
            if misread_x || misread_y {
                out.push(
                    "  (read by MLIR 22 without the kernel's own dialects: the properties of \
                     their operations may read wrongly; the others read exactly)"
                        .into(),
                );
            }
        }
        _ => match (bytecode::ops(old_kernel), bytecode::ops(new_kernel)) {
            (Ok(x), Ok(y)) => out.extend(listed_difference(&x, &y)),
            (x, y) => {
                for (side, error) in [("old", x.err()), ("new", y.err())] {
                    if let Some(error) = error {
                        out.push(format!(
                            "the {side} kernel's operations cannot be listed: {error}"
                        ));
                    }
                }
                out.extend(container_difference(old_kernel, new_kernel));
            }
        },
    }
    Some(out)
}

/// One custom call of a canonical module, with the kernel it carries.
struct Call {
    target: String,
    position: usize,
    /// Its kind and payload bytes, when it carries a kernel.
    kernel: Option<(KernelKind, Vec<u8>)>,
}

/// The custom calls of the canonical module `text`, in pre-order.
fn kernels(context: &Context, text: &str) -> Option<Vec<Call>> {
    let module = parse_module(context, text.as_bytes(), "canonical module").ok()?;
    // SAFETY: the module outlives the handles used here.
    let root = unsafe { OpRef::from_raw(module.as_operation().to_raw()) };
    let mode = WalkMode {
        strip_locations: false,
        save: false,
    };
    let (calls, _nothing_saved) = walk(root, mode);
    let calls = calls
        .iter()
        .map(|call| Call {
            target: call
                .op
                .attribute("call_target_name")
                .and_then(|a| a.string_bytes())
                .map(|t| String::from_utf8_lossy(t).into_owned())
                .unwrap_or_default(),
            position: call.position,
            kernel: payload_of(call.op),
        })
        .collect();
    Some(calls)
}

/// The kernel as generic MLIR text without locations, when this MLIR reads it, and whether
/// it may have misread the properties of ops whose dialects it lacks.
fn kernel_text(context: &Context, payload: &[u8]) -> Option<(String, bool)> {
    let (module, may_misread) = read_to_explain(context, payload, "kernel").ok()?;
    Some((
        print_operation(module.as_operation(), true, false),
        may_misread,
    ))
}

/// The operation a line of generic text starts (`%0 = "arith.constant"(…` or `"tt.return"(…`).
fn operation_name(line: &str) -> Option<&str> {
    let line = line.trim_start();
    let rest = match line.strip_prefix('%') {
        Some(_) => line.split_once(" = ")?.1,
        None => line,
    };
    let rest = rest.strip_prefix('"')?;
    rest.split_once("\"(").map(|(name, _)| name)
}

/// The first differing operation of two kernels' generic texts, by name and pre-order position.
fn operation_difference(a: &str, b: &str) -> Vec<String> {
    let Some(line) = first_differing_line(a, b) else {
        return vec![
            "the kernels read the same; their bytes differ in what the text omits \
                     (locations, or the bytecode's encoding)"
                .into(),
        ];
    };
    let (old_lines, new_lines): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let operations = |lines: &[&str]| lines.iter().filter(|l| operation_name(l).is_some()).count();
    // The operation the differing line belongs to: the last one started at or before it.
    let (position, name) = old_lines[..=line.min(old_lines.len().saturating_sub(1))]
        .iter()
        .filter_map(|l| operation_name(l))
        .enumerate()
        .last()
        .map_or((0, "?"), |(i, name)| (i, name));
    let mut out = vec![format!(
        "in the kernel ({} → {} operations): first differing operation #{position} in \
         pre-order, {name:?}",
        operations(&old_lines),
        operations(&new_lines),
    )];
    if let (Some(old), Some(new)) = (old_lines.get(line), new_lines.get(line)) {
        out.push(format!("  {}", pinpoint(old, new)));
    }
    for (sign, text) in [("-", old_lines.get(line)), ("+", new_lines.get(line))] {
        if let Some(text) = text {
            out.push(format!("{sign} {}", text.trim()));
        }
    }
    out
}

/// The first differing operation of two kernels' dialect-free listings: its name and pre-order
/// position, then each thing that differs, old and new.
fn listed_difference(a: &[bytecode::OpView], b: &[bytecode::OpView]) -> Vec<String> {
    let Some(difference) = bytecode::first_difference(a, b) else {
        return vec![format!(
            "in the kernel (read without its dialects, {} operations): the operations list the \
             same; their bytes differ in what the listing omits (locations, or the bytecode's \
             encoding)",
            a.len()
        )];
    };
    let name = difference
        .old
        .as_ref()
        .or(difference.new.as_ref())
        .map_or("?", |op| op.name.as_str());
    let depth = difference.old.as_ref().map_or(0, |op| op.path.len());
    let mut out = vec![format!(
        "in the kernel (read without its dialects, {} → {} operations): first differing \
         operation #{} in pre-order, {name:?} (nesting depth {depth})",
        a.len(),
        b.len(),
        difference.position,
    )];
    for change in &difference.changes {
        out.push(format!(
            "  {}: {} → {}",
            change.aspect, change.old, change.new
        ));
    }
    out
}

/// What a dialect-free read of two kernels says: operation counts and names, and the section
/// holding the first differing byte.
fn container_difference(a: &[u8], b: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    match (bytecode::validate(a), bytecode::validate(b)) {
        (Ok(x), Ok(y)) => {
            out.push(format!(
                "in the kernel (read without its dialects): {} → {} operations",
                x.operations, y.operations
            ));
            let names = |v: &bytecode::Validated| -> Vec<String> {
                v.op_names.iter().map(|n| n.name.clone()).collect()
            };
            let (nx, ny) = (names(&x), names(&y));
            let added: Vec<&String> = ny.iter().filter(|n| !nx.contains(n)).collect();
            let removed: Vec<&String> = nx.iter().filter(|n| !ny.contains(n)).collect();
            if !added.is_empty() || !removed.is_empty() {
                out.push(format!(
                    "  operation names: {removed:?} no longer used, {added:?} new"
                ));
            }
            let offset = a
                .iter()
                .zip(b)
                .position(|(p, q)| p != q)
                .unwrap_or(a.len().min(b.len()));
            if let Some(section) = x
                .header
                .sections
                .iter()
                .find(|s| s.range().contains(&offset))
            {
                out.push(format!(
                    "  first differing byte at offset {offset:#x}, in the {} section",
                    section.name
                ));
            }
        }
        (x, y) => {
            for (side, result) in [("old", x.err()), ("new", y.err())] {
                if let Some(invalid) = result {
                    out.push(format!(
                        "the {side} kernel is not readable bytecode: {invalid}"
                    ));
                }
            }
        }
    }
    out
}
