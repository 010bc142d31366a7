//! The protobuf wire format as compile options read it: mck-protowire's fields, with errors
//! placed at field paths named by this module's table.
//!
//! Generated structs drop what they do not know; a cache key must not. A message here is an
//! ordered list of [`Field`]s, each keeping its exact encoded bytes, so a field that no table
//! names (a newer XLA's option) is written back byte for byte. Only the messages on the
//! normalization path are ever opened; everything else stays an opaque payload.

pub use mck_protowire::{
    Field, MAX_GROUP_DEPTH, join, put_len, put_raw_varint, put_varint, sort_by_number, write,
};

use super::OptionsError;
use super::schema::{self, FieldInfo, Msg};

/// Splits one message into its fields, in input order.
///
/// `base` is the absolute offset of `buf` in the outermost input, `path` the message's field
/// path and `msg` its table (for naming fields in errors). Never allocates more than the input
/// holds: a length is checked against what remains before anything is copied.
pub fn parse<'a>(
    buf: &'a [u8],
    base: usize,
    path: &str,
    msg: Option<Msg>,
) -> Result<Vec<Field<'a>>, OptionsError> {
    mck_protowire::parse(buf, base).map_err(|e| {
        // An error inside a field names it; the name is only built when one happens.
        let at = match e.field {
            Some(number) => join(path, &schema::field_name(msg, number)),
            None => path.to_string(),
        };
        OptionsError::from_wire(e, at)
    })
}

/// Reads one varint of a packed run at `*pos`; `path` names the field in errors.
pub fn packed_varint(
    buf: &[u8],
    pos: &mut usize,
    base: usize,
    path: &str,
) -> Result<u64, OptionsError> {
    mck_protowire::read_varint(buf, pos, base)
        .map_err(|e| OptionsError::from_wire(e, path.to_string()))
}

/// The fields of a singular message seen once or more: protobuf merges repeated occurrences,
/// which at the wire level is their fields one after the other.
pub fn merged_fields<'a>(
    occ: &[&'a Field<'_>],
    path: &str,
    msg: Msg,
) -> Result<Vec<Field<'a>>, OptionsError> {
    let mut fields = Vec::new();
    for f in occ {
        fields.extend(parse(f.payload(), f.payload_offset(), path, Some(msg))?);
    }
    Ok(fields)
}

/// Rejects a known field whose wire type its kind cannot have.
pub fn check_wire_type(info: &FieldInfo, f: &Field, path: &str) -> Result<(), OptionsError> {
    info.check(f.wire_type)
        .map_err(|reason| OptionsError::NotCompileOptions {
            reason,
            offset: f.offset,
            path: path.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARITY: [&[u8]; 7] = [
        include_bytes!("../../../../tests/data/parity/01_cpu_defaults/compile_options.pb"),
        include_bytes!(
            "../../../../tests/data/parity/02_xla_flags_kept_and_excluded/compile_options.pb"
        ),
        include_bytes!(
            "../../../../tests/data/parity/05_debug_options_all_reset_fields/compile_options.pb"
        ),
        include_bytes!("../../../../tests/data/parity/07a_gpu_assign_1/compile_options.pb"),
        include_bytes!("../../../../tests/data/parity/07b_gpu_assign_0/compile_options.pb"),
        include_bytes!("../../../../tests/data/parity/09_fallback_device_kinds/compile_options.pb"),
        include_bytes!("../../../../tests/data/parity/10_custom_hook/compile_options.pb"),
    ];

    /// Parses and rewrites the path messages (top, build options, debug options, assignment).
    fn roundtrip(buf: &[u8], base: usize, depth: usize) -> Vec<u8> {
        let mut fields = parse(buf, base, "", None).unwrap();
        sort_by_number(&mut fields);
        if depth < 3 {
            for f in fields.iter_mut() {
                let nested = (depth == 0 && f.number == 3)
                    || (depth == 1 && (f.number == 3 || f.number == 9));
                if nested {
                    let inner = roundtrip(f.payload(), f.payload_offset(), depth + 1);
                    *f = Field::new_len(f.number, &inner);
                }
            }
        }
        write(&fields)
    }

    #[test]
    fn parity_inputs_round_trip_byte_for_byte() {
        for input in PARITY {
            assert_eq!(roundtrip(input, 0, 0), input);
        }
    }

    #[test]
    fn fields_keep_offsets_and_payloads() {
        // 08 96 01: field 1 = 150; 12 02 68 69: field 2 = "hi".
        let fields = parse(&[0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i'], 100, "", None).unwrap();
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[0].varint(), Some(150));
        assert_eq!(fields[1].offset, 103);
        assert_eq!(fields[1].payload(), b"hi");
        assert_eq!(fields[1].payload_offset(), 105);
        assert_eq!(&*Field::new_len(2, b"hi").raw, [0x12, 0x02, b'h', b'i']);
        assert_eq!(&*Field::new_varint(1, 150).raw, [0x08, 0x96, 0x01]);
    }

    #[test]
    fn groups_are_kept_whole() {
        // field 5 group { field 1 = 7, field 6 group {} } then field 2 = 1
        let bytes = [0x2b, 0x08, 0x07, 0x33, 0x34, 0x2c, 0x10, 0x01];
        let fields = parse(&bytes, 0, "", None).unwrap();
        assert_eq!(fields.len(), 2);
        assert_eq!(&*fields[0].raw, &bytes[..6]);
        assert_eq!(fields[0].payload(), &bytes[1..5]);
        assert_eq!(write(&fields), bytes);
    }

    #[test]
    fn errors_name_offset_and_path() {
        let e = parse(
            &[0x08],
            7,
            "executable_build_options",
            Some(Msg::ExecutableBuildOptions),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "truncated varint at byte 8 in executable_build_options.device_ordinal"
        );
        let e = parse(&[0x0f], 0, "", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid wire type 7 at byte 0 in CompileOptionsProto"
        );
        let e = parse(&[0x00], 0, "", None).unwrap_err();
        assert!(matches!(
            e,
            OptionsError::InvalidFieldNumber { number: 0, .. }
        ));
        let e = parse(&[0x1a, 0x05, 0x00], 0, "", Some(Msg::CompileOptions)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "length 5 at byte 1 in executable_build_options runs past the end of the message (1 bytes remain)"
        );
        let overlong = [
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        assert!(matches!(
            parse(&overlong, 0, "", None).unwrap_err(),
            OptionsError::BadVarint { offset: 1, .. }
        ));
        assert!(matches!(
            parse(&[0x0c], 0, "", None).unwrap_err(),
            OptionsError::UnmatchedEndGroup { number: 1, .. }
        ));
        assert!(matches!(
            parse(&[0x0b, 0x08, 0x01], 0, "", None).unwrap_err(),
            OptionsError::Truncated { .. }
        ));
    }
}
