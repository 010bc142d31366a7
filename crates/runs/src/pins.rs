//! What eviction must spare: every entry a run line with an artefact (`ok` or `failed`, not a
//! conflict) references. The store asks through [`mck_store::Pins`]; this reads the registry
//! the settings name on its own connection, opened when first asked: the cache directory's
//! file, or the shared PostgreSQL schema (whose run records may reference what this host
//! compiled for a team's run).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use mck_settings::RegistrySettings;
use mck_store::{Layout, Pins, PinsError};
use rusqlite::{Connection, OptionalExtension};

use crate::registry::{self, PgDb};

/// The pins of one cache's run records.
pub struct RunPins {
    path: PathBuf,
    shared: Option<RegistrySettings>,
    conn: Mutex<Option<Connection>>,
    shared_db: Mutex<Option<PgDb>>,
}

impl std::fmt::Debug for RunPins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shared = self.shared.as_ref().and_then(|s| s.shared.as_deref());
        f.debug_struct("RunPins")
            .field("path", &self.path)
            .field("shared", &shared)
            .finish()
    }
}

impl RunPins {
    pub fn new(layout: &Layout, registry: &RegistrySettings) -> RunPins {
        RunPins {
            path: layout.registry_path(),
            shared: registry.shared.is_some().then(|| registry.clone()),
            conn: Mutex::new(None),
            shared_db: Mutex::new(None),
        }
    }

    fn pinned_locally(&self, digests: &[String]) -> Result<HashSet<String>, PinsError> {
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
        let mut stmt = conn.prepare_cached(registry::PINNED)?;
        let mut pinned = HashSet::new();
        for digest in digests {
            if stmt.query_row([digest], |_| Ok(())).optional()?.is_some() {
                pinned.insert(digest.clone());
            }
        }
        Ok(pinned)
    }
}

impl Pins for RunPins {
    fn pinned(&self, digests: &[String]) -> Result<HashSet<String>, PinsError> {
        let Some(settings) = &self.shared else {
            return self.pinned_locally(digests);
        };
        let url = settings
            .shared
            .as_deref()
            .expect("a shared registry's settings");
        let mut db = self
            .shared_db
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if db.is_none() {
            *db = Some(PgDb::open(url, settings)?);
        }
        let pinned = db.as_mut().expect("opened above").pinned_among(digests);
        if pinned.is_err() {
            *db = None; // reconnected next time
        }
        Ok(pinned?)
    }
}
