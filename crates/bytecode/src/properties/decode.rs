//! Reads one property blob the way the generated `readProperties` does,
//! recording every attribute index it holds. A blob decodes only when it
//! follows its op's schema to the last byte, every index is in range, and
//! every referenced entry has the kind the attribute's constraint requires;
//! anything else is an error and the blob stays undecodable.

use super::schema::{Kind, OpSchema};
use crate::reader::Reader;

/// Bytecode version from which segment sizes are sparse arrays
/// (`kNativePropertiesODSSegmentSize`).
const NATIVE_SEGMENT_SIZES: u64 = 6;

/// Widest index of a sparse array the reader accepts, in bits.
const MAX_SPARSE_INDEX_BITS: u64 = 8;

/// An attribute index found in a blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobRef {
    /// The attribute index.
    pub attr: usize,
    /// The operation whose schema read it.
    pub op: &'static str,
    /// The inherent attribute it is the value of.
    pub field: &'static str,
    /// Absolute offset of the index.
    pub offset: usize,
}

/// What the decoder needs to know about the attribute table.
pub struct Attrs<'a> {
    /// Number of attributes.
    pub count: usize,
    /// Whether attribute `i` has kind `k`.
    pub has_kind: &'a dyn Fn(usize, Kind) -> bool,
}

/// Decodes `bytes` (at absolute offset `base`) as the properties of `schema`.
pub fn decode(
    bytes: &[u8],
    base: usize,
    schema: &OpSchema,
    version: u64,
    attrs: &Attrs<'_>,
) -> Result<Vec<BlobRef>, String> {
    if version < NATIVE_SEGMENT_SIZES && schema.has_segments() {
        return Err(format!(
            "bytecode version {version} writes {}'s segment sizes as an attribute",
            schema.name
        ));
    }
    let mut r = Reader::new(bytes, base);
    let mut refs = Vec::new();
    for field in schema.attrs {
        let offset = r.offset();
        let value = r.varint(field.name).map_err(|e| e.to_string())?;
        let index = if field.required {
            value
        } else if value & 1 == 1 {
            value >> 1
        } else if value == 0 {
            continue;
        } else {
            return Err(format!(
                "optional attribute {} is absent with a nonzero value {value} at offset {offset:#x}",
                field.name
            ));
        };
        let attr = usize::try_from(index)
            .ok()
            .filter(|&a| a < attrs.count)
            .ok_or_else(|| {
                format!(
                    "attribute {} refers to attribute #{index} of {} at offset {offset:#x}",
                    field.name, attrs.count
                )
            })?;
        if !(attrs.has_kind)(attr, field.kind) {
            return Err(format!(
                "attribute {} refers to attribute #{attr}, which is not {:?}",
                field.name, field.kind
            ));
        }
        refs.push(BlobRef {
            attr,
            op: schema.name,
            field: field.name,
            offset,
        });
    }
    for (what, len) in [
        ("operandSegmentSizes", schema.operand_segments),
        ("resultSegmentSizes", schema.result_segments),
    ] {
        if len > 0 {
            sparse_array(&mut r, what, len)?;
        }
    }
    if !r.is_empty() {
        return Err(format!(
            "{} bytes left after the properties of {}",
            r.remaining(),
            schema.name
        ));
    }
    Ok(refs)
}

/// Reads a `writeSparseArray` of at most `len` elements (no references).
fn sparse_array(r: &mut Reader<'_>, what: &'static str, len: usize) -> Result<(), String> {
    let (count, sparse) = r.varint_with_flag(what).map_err(|e| e.to_string())?;
    if count == 0 {
        return Ok(());
    }
    if !sparse {
        if count > len as u64 {
            return Err(format!(
                "{what} has {count} elements, at most {len} allowed"
            ));
        }
        for _ in 0..count {
            r.varint(what).map_err(|e| e.to_string())?;
        }
        return Ok(());
    }
    let bits = r.varint(what).map_err(|e| e.to_string())?;
    if bits > MAX_SPARSE_INDEX_BITS {
        return Err(format!("{what} uses {bits}-bit indices"));
    }
    if count > len as u64 {
        return Err(format!("{what} sets {count} elements, at most {len} exist"));
    }
    for _ in 0..count {
        let pair = r.varint(what).map_err(|e| e.to_string())?;
        let index = pair & ((1u64 << bits) - 1);
        if index >= len as u64 {
            return Err(format!("{what} sets element {index} of {len}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::lookup::lookup;
    use super::super::schema::{opt, req};
    use super::*;

    fn any(_: usize, _: Kind) -> bool {
        true
    }

    const ATTRS: Attrs<'static> = Attrs {
        count: 40,
        has_kind: &any,
    };

    /// The varints of `values`, back to back.
    fn enc(values: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        for &v in values {
            crate::varint::encode(v, &mut out);
        }
        out
    }

    #[test]
    fn required_and_optional_attributes() {
        let func = lookup("tt.func").unwrap();
        // arg_attrs #3, function_type #17, no res_attrs, sym_name #5, no visibility.
        let blob = enc(&[3 << 1 | 1, 17, 0, 5, 0]);
        let refs = decode(&blob, 100, func, 6, &ATTRS).unwrap();
        let got: Vec<_> = refs.iter().map(|r| (r.field, r.attr, r.offset)).collect();
        assert_eq!(
            got,
            [
                ("arg_attrs", 3, 100),
                ("function_type", 17, 101),
                ("sym_name", 5, 103)
            ]
        );
    }

    #[test]
    fn segment_sizes_dense_and_sparse() {
        let load = lookup("tt.load").unwrap();
        // No cachePolicy, isVolatile #2, then dense [1, 1, 0].
        let dense = enc(&[0, 2 << 1 | 1, 3 << 1, 1, 1, 0]);
        assert!(decode(&dense, 0, load, 6, &ATTRS).is_ok());
        // Sparse: one non-zero, 2 index bits, value 1 at index 0.
        let sparse = enc(&[0, 2 << 1 | 1, 1 << 1 | 1, 2, 1 << 2]);
        assert!(decode(&sparse, 0, load, 6, &ATTRS).is_ok());
        // Dense with 4 elements: too many for 3 operand groups.
        let err = decode(&enc(&[0, 0, 4 << 1, 1, 1, 1, 1]), 0, load, 6, &ATTRS).unwrap_err();
        assert!(err.contains("at most 3"), "{err}");
        // Sparse index 3 is out of range.
        let err = decode(&enc(&[0, 0, 1 << 1 | 1, 2, 1 << 2 | 3]), 0, load, 6, &ATTRS).unwrap_err();
        assert!(err.contains("element 3"), "{err}");
        // Version 5 writes segment sizes as an attribute.
        assert!(decode(&dense, 0, load, 5, &ATTRS).is_err());
    }

    #[test]
    fn exact_length_ranges_and_kinds() {
        const FIELDS: &[super::super::schema::Field] = &[req("a", Kind::Str), opt("b", Kind::Int)];
        let schema = OpSchema::new("t.op", FIELDS, 0, 0);
        assert!(decode(&enc(&[1, 0]), 0, &schema, 6, &ATTRS).is_ok());
        assert!(
            decode(&enc(&[1]), 0, &schema, 6, &ATTRS).is_err(),
            "truncated"
        );
        assert!(
            decode(&enc(&[1, 0, 0]), 0, &schema, 6, &ATTRS).is_err(),
            "trailing"
        );
        assert!(
            decode(&enc(&[40, 0]), 0, &schema, 6, &ATTRS).is_err(),
            "#40 of 40"
        );
        assert!(
            decode(&enc(&[1, 2]), 0, &schema, 6, &ATTRS).is_err(),
            "not writer form"
        );
        let only_strings = |i: usize, k: Kind| k != Kind::Str || i == 1;
        let attrs = Attrs {
            count: 40,
            has_kind: &only_strings,
        };
        assert!(decode(&enc(&[1, 0]), 0, &schema, 6, &attrs).is_ok());
        let err = decode(&enc(&[2, 0]), 0, &schema, 6, &attrs).unwrap_err();
        assert!(err.contains("not Str"), "{err}");
    }
}
