//! The key record a JAX lookup keeps (`key_from_parts(..., lazy_record=True)`): held as
//! computed, made JSON only when a miss stores or explains it. A hit never needs it, and the
//! JSON of even a small program's record is most of what its key costs.

use std::sync::OnceLock;

use mck_key::{KeyRecord, Readable};
use pyo3::prelude::*;

use crate::value_error;

#[pyclass(frozen, module = "mlir_cache_key._native")]
pub struct KeyRecordHandle {
    record: KeyRecord,
    json: OnceLock<String>,
}

impl KeyRecordHandle {
    pub fn new(record: KeyRecord) -> Self {
        KeyRecordHandle {
            record,
            json: OnceLock::new(),
        }
    }

    fn to_json(record: &KeyRecord) -> PyResult<String> {
        serde_json::to_string(record).map_err(value_error)
    }
}

#[pymethods]
impl KeyRecordHandle {
    /// The record as `key_from_parts` returns it (JSON), made once.
    fn json(&self) -> PyResult<String> {
        if let Some(json) = self.json.get() {
            return Ok(json.clone());
        }
        let json = Self::to_json(&self.record)?;
        Ok(self.json.get_or_init(|| json).clone())
    }

    /// JAX's 16 debug lines of this key.
    fn trace(&self) -> Vec<String> {
        self.record.trace_lines()
    }

    /// The XLA flags JAX includes in the key and those it leaves out.
    fn flags(&self) -> (Vec<String>, Vec<String>) {
        self.record
            .entries
            .iter()
            .find_map(|e| match &e.readable {
                Readable::Flags { included, excluded } => {
                    Some((included.clone(), excluded.clone()))
                }
                _ => None,
            })
            .unwrap_or_default()
    }

    /// The record (JSON) with the canonical module text `text` kept for its computation, as
    /// `record_with_text(self.json(), text)` gives it.
    fn with_text(&self, text: &str) -> PyResult<String> {
        let mut record = self.record.clone();
        match record.entries.first_mut().map(|e| &mut e.readable) {
            Some(Readable::Computation { text: kept, .. }) => *kept = Some(text.to_owned()),
            _ => {
                return Err(value_error(
                    "the record's first entry is not the computation",
                ));
            }
        }
        Self::to_json(&record)
    }
}
