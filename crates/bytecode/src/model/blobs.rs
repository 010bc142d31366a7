//! The property blobs of a parsed payload, read with the property table.

use super::Parsed;
use crate::encoding::builtin_attr as ba;
use crate::properties::{self, Attrs, BlobRef, Kind};

impl Parsed<'_> {
    /// Decodes every property blob its users' schemas describe.
    pub(super) fn read_blobs(&self) -> Vec<Result<Vec<BlobRef>, String>> {
        let has_kind = |i: usize, k: Kind| self.attr_has_kind(i, k);
        let attrs = Attrs {
            count: self.attrs.len(),
            has_kind: &has_kind,
        };
        let mut users: Vec<Vec<String>> = vec![Vec::new(); self.props.blobs.len()];
        for &(blob, _, name) in &self.ir.props_refs {
            let name = self.op_name(name);
            if let Some(u) = users.get_mut(blob).filter(|u| !u.contains(&name)) {
                u.push(name);
            }
        }
        self.props
            .blobs
            .iter()
            .zip(&users)
            .map(|(range, users)| {
                let bytes = self.payload.get(range.clone()).unwrap_or(&[]);
                properties::decode_blob(bytes, range.start, users, self.header.version, &attrs)
            })
            .collect()
    }

    /// Why each undecoded blob is undecoded (`property blob #i: why`).
    pub fn undecoded_blobs(&self) -> Vec<String> {
        self.blob_reads
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                r.as_ref()
                    .err()
                    .map(|why| format!("property blob #{i}: {why}"))
            })
            .collect()
    }

    /// Whether attribute `i` is of kind `kind`.
    fn attr_has_kind(&self, i: usize, kind: Kind) -> bool {
        let code = self.attr(i).attr_code();
        match kind {
            Kind::Any => true,
            Kind::Str => code.is_some_and(ba::is_string),
            Kind::Int => code == Some(ba::INTEGER),
            Kind::Type => code == Some(ba::TYPE),
            Kind::Unit => code == Some(ba::UNIT),
            Kind::Array => code == Some(ba::ARRAY),
            Kind::DenseArray => code == Some(ba::DENSE_ARRAY),
            Kind::FlatSymbolRef => code == Some(ba::FLAT_SYMBOL_REF),
            Kind::SymbolRef => matches!(code, Some(ba::FLAT_SYMBOL_REF | ba::SYMBOL_REF)),
            Kind::Dialect(name) => self
                .table
                .attrs
                .get(i)
                .and_then(|e| self.dialects.dialects.get(e.dialect))
                .is_some_and(|d| self.strings.content(d.name) == name.as_bytes()),
        }
    }
}
