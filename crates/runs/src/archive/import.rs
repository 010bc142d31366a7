//! `runs import`: everything is checked before anything is written, in one streaming pass with
//! bounded memory (see `archive.rs` for the rules). Members are staged as temporary files in
//! `v1/tmp/` (`Store::stage_entry`); dropping a stage removes them, so an error anywhere leaves the cache as it was.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use mck_remote::Secret;
use mck_store::{StagedEntry, Store, StoreError};
use serde::Serialize;

use super::manifest::{MANIFEST, MAX_MANIFEST_LEN, Manifest, digest_of};
use super::seal::{self, SEAL, SEAL_LEN};
use crate::address::shorten;
use crate::error::{Result, RunsError};
use crate::registry::Registry;
use crate::state::RunState;

/// Largest entry file accepted from an archive (also bounded by the cache's size cap).
pub const MAX_MEMBER_LEN: u64 = 64 << 30;

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    pub run: String,
    pub lines: usize,
    pub artefacts: usize,
    /// Its signature verified under the shared secret.
    pub signed: bool,
}

type Members<'a> = tar::Entries<'a, BufReader<File>>;

/// Reads the run archive `file` (from `runs export`) into `store`: its entry files and its run
/// record. With `secret`, only an archive signed with it. Nothing is written unless every check
/// passes.
pub fn import_run(
    store: &Store,
    registry: &Registry,
    file: &Path,
    secret: Option<&Secret>,
) -> Result<ImportReport> {
    let bad = |reason: String| RunsError::Archive {
        file: file.to_owned(),
        reason,
    };
    let handle = File::open(file).map_err(|e| StoreError::io("open", file, e))?;
    let mut archive = tar::Archive::new(BufReader::new(handle));
    // Raw: no GNU long names, PAX headers or sparse maps are interpreted (or buffered);
    // they are members of other types, refused below.
    let mut members = archive
        .entries()
        .map_err(|e| bad(format!("not a run export: {e}")))?
        .raw(true);
    let manifest = read_signed_manifest(&mut members, secret).map_err(bad)?;
    if let Some(existing) = registry.run(&manifest.run)?
        && existing != manifest.entries
    {
        return Err(bad(format!(
            "run {} already exists here with another record; run records are immutable",
            manifest.run
        )));
    }
    let staged = stage_members(store, &mut members, &manifest).map_err(bad)?;
    check_lines(&manifest, &staged).map_err(bad)?;
    let artefacts = staged.len();
    for (name, s) in staged {
        store
            .publish_staged(s)
            .map_err(|e| bad(format!("cannot store {name}: {e}")))?;
    }
    registry.import_run(&manifest.run, manifest.created_ms, &manifest.entries)?;
    Ok(ImportReport {
        run: manifest.run,
        lines: manifest.entries.len(),
        artefacts,
        signed: secret.is_some(),
    })
}

/// Streams every member after the manifest into a verified temporary file.
fn stage_members(
    store: &Store,
    members: &mut Members<'_>,
    manifest: &Manifest,
) -> std::result::Result<BTreeMap<String, StagedEntry>, String> {
    let limit = MAX_MEMBER_LEN.min(store.settings().max_size);
    let mut staged = BTreeMap::new();
    for member in members {
        let mut member = member.map_err(|e| format!("damaged archive: {e}"))?;
        let name = member_name(&member);
        if name == MANIFEST || name == SEAL {
            return Err(format!("{name} appears twice"));
        }
        let Some(sum) = manifest.files.get(&name) else {
            return Err(format!("{} is not listed in {MANIFEST}", shorten(&name)));
        };
        if staged.contains_key(&name) {
            return Err(format!("{name} appears twice"));
        }
        let size = regular_size(&member, &name)?;
        if size > limit {
            return Err(format!(
                "{name} claims {size} bytes, more than the {limit} an entry may have here"
            ));
        }
        let digest = digest_of(&name).map_err(|e| e.to_string())?;
        let s = store
            .stage_entry(&mut member, size, sum, &digest)
            .map_err(|e| format!("{name}: {e}"))?;
        staged.insert(name, s);
    }
    if let Some(missing) = manifest.files.keys().find(|n| !staged.contains_key(*n)) {
        return Err(format!("{missing} is listed in {MANIFEST} but missing"));
    }
    Ok(staged)
}

/// Reads the first members: the seal, if any, then the manifest, whose signature is checked
/// under `secret` (`seal.rs`) before its fields are.
fn read_signed_manifest(
    members: &mut Members<'_>,
    secret: Option<&Secret>,
) -> std::result::Result<Manifest, String> {
    let (mut name, mut bytes) = read_small(members, MAX_MANIFEST_LEN)?;
    let mut sealed = None;
    if name == SEAL {
        if bytes.len() as u64 > SEAL_LEN {
            return Err(format!("{SEAL} is not a seal this version reads"));
        }
        sealed = Some(bytes);
        (name, bytes) = read_small(members, MAX_MANIFEST_LEN)?;
    }
    if name != MANIFEST {
        return Err(format!(
            "the first member is {}, not {MANIFEST}: not a run export",
            shorten(&name)
        ));
    }
    seal::check(secret, sealed.as_deref(), &bytes)?;
    let manifest: Manifest =
        serde_json::from_slice(&bytes).map_err(|e| format!("bad {MANIFEST}: {e}"))?;
    manifest.check().map_err(|e| format!("{MANIFEST}: {e}"))?;
    Ok(manifest)
}

/// The next member's name and bytes: a regular file of at most `limit` bytes.
fn read_small(
    members: &mut Members<'_>,
    limit: u64,
) -> std::result::Result<(String, Vec<u8>), String> {
    let mut member = members
        .next()
        .ok_or_else(|| format!("empty archive: no {MANIFEST}"))?
        .map_err(|e| format!("not a run export: {e}"))?;
    let name = member_name(&member);
    let size = regular_size(&member, &name)?;
    if size > limit {
        return Err(format!(
            "{} claims {size} bytes; at most {limit} are read",
            shorten(&name)
        ));
    }
    let mut bytes = Vec::new();
    (&mut member)
        .take(size)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("damaged archive at {}: {e}", shorten(&name)))?;
    if bytes.len() as u64 != size {
        return Err(format!("{} is truncated", shorten(&name)));
    }
    Ok((name, bytes))
}

/// Each line with an artefact names the key and state of the entry file staged for it.
fn check_lines(
    manifest: &Manifest,
    staged: &BTreeMap<String, StagedEntry>,
) -> std::result::Result<(), String> {
    for line in manifest
        .entries
        .iter()
        .filter(|l| l.state != RunState::Conflict)
    {
        let name = super::manifest::member_name(&line.digest);
        let Some(s) = staged.get(&name) else {
            return Err(format!("{name} is missing"));
        };
        let meta = s.meta();
        let state = RunState::from(meta.state);
        if meta.key != line.key || state != line.state {
            return Err(format!(
                "{name} holds {} ({state}), but {MANIFEST} says {} ({}) at {}",
                meta.key, line.key, line.state, line.address
            ));
        }
    }
    Ok(())
}

/// The member's name as written in its header (raw: no extension headers applied).
fn member_name(member: &tar::Entry<'_, impl Read>) -> String {
    String::from_utf8_lossy(&member.path_bytes()).into_owned()
}

/// The size of a regular-file member; anything else (links, devices, directories, FIFOs,
/// sparse files, GNU and PAX extension headers) is refused, naming the member.
fn regular_size(
    member: &tar::Entry<'_, impl Read>,
    name: &str,
) -> std::result::Result<u64, String> {
    let kind = member.header().entry_type();
    if !kind.is_file() {
        return Err(format!(
            "{} is not a regular file (tar type {:?}): a run export holds only regular files",
            shorten(name),
            char::from(kind.as_byte())
        ));
    }
    member
        .header()
        .entry_size()
        .map_err(|e| format!("{}: damaged header: {e}", shorten(name)))
}
