//! The key record a JAX lookup keeps (`key_from_parts(..., lazy_record=True)`): held as
//! computed, made JSON only when asked. A hit never needs it, and the JSON of even a small
//! program's record is most of what its key costs; a miss hands the handle itself to the cache
//! (`RecordArg`), which turns it into an entry's ingredients on its worker, off the compile's
//! path.

use std::sync::Arc;

use mck_key::{KeyRecord, Readable};
use pyo3::prelude::*;
use serde_json::Value;

use crate::{keep_computation_text, value_error};

#[pyclass(frozen, module = "mlir_cache_key._native")]
pub struct KeyRecordHandle {
    record: Arc<KeyRecord>,
}

impl KeyRecordHandle {
    pub fn new(record: KeyRecord) -> Self {
        KeyRecordHandle {
            record: Arc::new(record),
        }
    }
}

#[pymethods]
impl KeyRecordHandle {
    /// The record as `key_from_parts` returns it (JSON; the caller keeps it).
    fn json(&self) -> PyResult<String> {
        serde_json::to_string(&*self.record).map_err(value_error)
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
        serde_json::to_string(&*self.texted(text)?.record).map_err(value_error)
    }

    /// As `with_text`, kept as a handle: what a miss stores and explains, never made JSON on
    /// the compile's path.
    fn texted(&self, text: &str) -> PyResult<KeyRecordHandle> {
        let mut record = (*self.record).clone();
        keep_computation_text(&mut record, text)?;
        Ok(KeyRecordHandle {
            record: Arc::new(record),
        })
    }
}

/// A key record as the cache's methods take it: a handle (`KeyRecordHandle`) or its JSON.
#[derive(FromPyObject)]
pub enum RecordArg {
    Handle(Py<KeyRecordHandle>),
    Json(String),
}

/// A record an entry will keep as its ingredients: made into JSON when stored.
pub enum Ingredients {
    Parsed(Value),
    Record(Arc<KeyRecord>),
}

impl Ingredients {
    /// The JSON to store. A record that cannot be written (it always can) stores none.
    pub fn value(self) -> Value {
        match self {
            Ingredients::Parsed(value) => value,
            Ingredients::Record(record) => serde_json::to_value(&*record).unwrap_or(Value::Null),
        }
    }
}

impl RecordArg {
    /// The record, parsed if it came as JSON (a ValueError naming `name` if it is not one).
    pub fn record(&self, name: &str) -> PyResult<Arc<KeyRecord>> {
        match self {
            RecordArg::Handle(handle) => Ok(Arc::clone(&handle.get().record)),
            RecordArg::Json(json) => crate::parse_record(name, json).map(Arc::new),
        }
    }

    /// What the entry keeps. JSON is parsed now, so a malformed record is refused before
    /// anything is compiled or stored; a handle is made JSON later, where it is stored.
    pub fn ingredients(&self) -> PyResult<Ingredients> {
        match self {
            RecordArg::Handle(handle) => Ok(Ingredients::Record(Arc::clone(&handle.get().record))),
            RecordArg::Json(json) => crate::ingredients(Some(json)).map(Ingredients::Parsed),
        }
    }
}
