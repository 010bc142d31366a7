//! An operation's schema by name: a binary search of the generated table
//! (`table.rs`), which is therefore sorted by op name (and, for the blob
//! order, each op's attributes by name); the tests hold both.

use super::schema::OpSchema;
use super::table::OPS;

/// The schema of operation `name` (`dialect.op`), if the table has it.
pub fn lookup(name: &str) -> Option<&'static OpSchema> {
    OPS.binary_search_by(|op| op.name.cmp(name))
        .ok()
        .map(|i| &OPS[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_by_op_and_attribute_name() {
        for pair in OPS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} before {}",
                pair[0].name,
                pair[1].name
            );
        }
        for op in OPS {
            for pair in op.attrs.windows(2) {
                assert!(
                    pair[0].name < pair[1].name,
                    "{}: {} before {}",
                    op.name,
                    pair[0].name,
                    pair[1].name
                );
            }
        }
    }

    #[test]
    fn lookup_finds_triton_and_upstream_ops() {
        let load = lookup("tt.load").expect("tt.load");
        assert_eq!(load.operand_segments, 3);
        let func = lookup("tt.func").expect("tt.func");
        let names: Vec<_> = func.attrs.iter().map(|f| f.name).collect();
        assert_eq!(
            names,
            [
                "arg_attrs",
                "function_type",
                "res_attrs",
                "sym_name",
                "sym_visibility"
            ]
        );
        assert!(lookup("arith.addf").is_some());
        assert!(lookup("tt.splat").is_none(), "no properties, no row");
        assert!(lookup("tt.nope").is_none());
    }
}
