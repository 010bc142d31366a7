//! `runs export`: a run's record and the entry files it references, as one tar file written
//! atomically beside its destination. One entry file is in memory at a time: checksums are
//! computed in a first pass and each file is checked again as it is written.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use sha2::{Digest as _, Sha256};

use mck_remote::Secret;
use mck_store::{CacheKey, Store, StoreError};

use super::manifest::{EXPORT_FORMAT, MANIFEST, Manifest, member_name};
use super::seal::{SEAL, seal};
use crate::error::{Result, RunsError};
use crate::registry::{Registry, RunEntry};
use crate::state::RunState;

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExportReport {
    pub run: String,
    pub lines: usize,
    pub artefacts: usize,
    /// Signed with the shared secret (`run.seal`).
    pub signed: bool,
}

/// Writes run `run` of `store` and its artefacts to `file`, signed with `secret` when one is
/// given. `Ok(None)`: no such run.
pub fn export_run(
    store: &Store,
    registry: &Registry,
    run: &str,
    file: &Path,
    secret: Option<&Secret>,
) -> Result<Option<ExportReport>> {
    let Some(entries) = registry.run(run)? else {
        return Ok(None);
    };
    let created_ms = registry
        .runs()?
        .into_iter()
        .find(|r| r.run == run)
        .map_or(0, |r| r.created_ms);
    let mut keys = BTreeMap::new();
    for line in entries.iter().filter(|l| l.state != RunState::Conflict) {
        keys.insert(member_name(&line.digest), CacheKey::parse(&line.key)?);
    }
    let mut files = BTreeMap::new();
    for (name, key) in &keys {
        let bytes = exported_bytes(store, key, &entries)?;
        files.insert(name.clone(), hex::encode(Sha256::digest(&bytes)));
    }
    let manifest = Manifest {
        format: EXPORT_FORMAT,
        run: run.to_owned(),
        created_ms,
        entries,
        files,
    };
    let write_error = |e: std::io::Error| StoreError::io("write", file, e);
    let parent = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let temp = tempfile::NamedTempFile::new_in(parent).map_err(write_error)?;
    {
        let mut tar = tar::Builder::new(temp.as_file());
        let json = serde_json::to_vec_pretty(&manifest).map_err(std::io::Error::other);
        let json = json.map_err(write_error)?;
        if let Some(secret) = secret {
            append(&mut tar, SEAL, &seal(secret, &json)).map_err(write_error)?;
        }
        append(&mut tar, MANIFEST, &json).map_err(write_error)?;
        for (name, key) in &keys {
            let bytes = exported_bytes(store, key, &manifest.entries)?;
            if hex::encode(Sha256::digest(&bytes)) != manifest.files[name] {
                return Err(RunsError::Refused(format!(
                    "the entry of {key} changed during the export; export again"
                )));
            }
            append(&mut tar, name, &bytes).map_err(write_error)?;
        }
        tar.finish().map_err(write_error)?;
    }
    temp.as_file().sync_all().map_err(write_error)?;
    temp.persist(file).map_err(|e| write_error(e.error))?;
    Ok(Some(ExportReport {
        run: run.to_owned(),
        lines: manifest.entries.len(),
        artefacts: keys.len(),
        signed: secret.is_some(),
    }))
}

fn exported_bytes(store: &Store, key: &CacheKey, lines: &[RunEntry]) -> Result<Vec<u8>> {
    store.export_entry(key)?.ok_or_else(|| {
        let address = lines
            .iter()
            .find(|l| l.key == key.to_string())
            .map_or("", |l| l.address.as_str());
        RunsError::Refused(format!(
            "the artefact of {address} ({key}) is in neither this cache nor its remote tiers"
        ))
    })
}

fn append(tar: &mut tar::Builder<&std::fs::File>, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(0o600);
    header.set_cksum();
    tar.append_data(&mut header, name, bytes)
}
