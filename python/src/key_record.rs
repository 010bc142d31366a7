//! The key record a JAX lookup keeps (`key_from_parts(..., lazy_record=True)`): held as
//! computed, made JSON only when a miss stores or explains it. A hit never needs it, and the
//! JSON of even a small program's record is most of what its key costs.

use mck_key::{KeyRecord, Readable};
use pyo3::prelude::*;

use crate::{keep_computation_text, value_error};

#[pyclass(frozen, module = "mlir_cache_key._native")]
pub struct KeyRecordHandle {
    record: KeyRecord,
}

impl KeyRecordHandle {
    pub fn new(record: KeyRecord) -> Self {
        KeyRecordHandle { record }
    }
}

#[pymethods]
impl KeyRecordHandle {
    /// The record as `key_from_parts` returns it (JSON; the caller keeps it).
    fn json(&self) -> PyResult<String> {
        serde_json::to_string(&self.record).map_err(value_error)
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
        keep_computation_text(&mut record, text)?;
        serde_json::to_string(&record).map_err(value_error)
    }
}
