//! What eviction must spare: every entry a run line with an artefact (`ok` or `failed`, not a
//! conflict) references. The store asks through [`mck_store::Pins`]; this reads the registry
//! file on its own connection, opened when first asked.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use mck_store::{Layout, Pins, PinsError};
use rusqlite::{Connection, OptionalExtension};

use crate::registry;

/// The pins of one cache's run records.
#[derive(Debug)]
pub struct RunPins {
    path: PathBuf,
    conn: Mutex<Option<Connection>>,
}

impl RunPins {
    pub fn new(layout: &Layout) -> RunPins {
        RunPins {
            path: layout.registry_path(),
            conn: Mutex::new(None),
        }
    }
}

impl Pins for RunPins {
    fn pinned(&self, digests: &[String]) -> Result<HashSet<String>, PinsError> {
        let mut conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        if conn.is_none() {
            // No registry: no run records, nothing pinned. Never through a symlink.
            match std::fs::symlink_metadata(&self.path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashSet::new()),
                Ok(m) if !m.file_type().is_file() => {
                    return Err(format!("{} is not a regular file", self.path.display()).into());
                }
                _ => {}
            }
            *conn = Some(registry::connect_for_pins(&self.path)?);
        }
        let conn = conn.as_ref().expect("opened above");
        let mut stmt = conn.prepare_cached(
            "SELECT 1 FROM run_lines WHERE digest = ?1 AND state <> 'conflict' LIMIT 1",
        )?;
        let mut pinned = HashSet::new();
        for digest in digests {
            if stmt.query_row([digest], |_| Ok(())).optional()?.is_some() {
                pinned.insert(digest.clone());
            }
        }
        Ok(pinned)
    }
}
