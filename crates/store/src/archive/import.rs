//! `runs import`: everything is checked before anything is written, in one streaming pass with
//! bounded memory (see `archive.rs` for the rules). Members are staged as temporary files in
//! `v1/tmp/`; dropping a stage removes them, so an error anywhere leaves the cache as it was.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::Path;

use serde::Serialize;
use sha2::{Digest as _, Sha256};
use tempfile::NamedTempFile;

use super::super::address::shorten;
use super::super::cache::Store;
use super::super::entry::{DecodeError, EntryMeta, EntryState};
use super::super::error::{Result, StoreError};
use super::super::key::CacheKey;
use super::super::read::verify_from;
use super::manifest::{MANIFEST, MAX_MANIFEST_LEN, Manifest, digest_of};

/// Largest entry file accepted from an archive (also bounded by the cache's size cap).
pub const MAX_MEMBER_LEN: u64 = 64 << 30;

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    pub run: String,
    pub lines: usize,
    pub artefacts: usize,
}

/// A verified entry file waiting in `v1/tmp/`.
struct Staged {
    file: NamedTempFile,
    meta: EntryMeta,
    size: u64,
}

type Members<'a> = tar::Entries<'a, BufReader<File>>;

impl Store {
    /// Reads the run archive `file` (from `runs export`) into this cache: its entry files and
    /// its run record. Nothing is written unless every check passes.
    pub fn import_run(&self, file: &Path) -> Result<ImportReport> {
        let bad = |reason: String| StoreError::Archive {
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
        let manifest = read_manifest(&mut members).map_err(bad)?;
        let registry = self.registry()?;
        if let Some(existing) = registry.run(&manifest.run)?
            && existing != manifest.entries
        {
            return Err(bad(format!(
                "run {} already exists here with another record; run records are immutable",
                manifest.run
            )));
        }
        let staged = self.stage_members(&mut members, &manifest).map_err(bad)?;
        check_lines(&manifest, &staged).map_err(bad)?;
        let artefacts = staged.len();
        for (name, s) in staged {
            let key = CacheKey::parse(&s.meta.key)?;
            self.publish_file(&key, &s.meta, s.size, s.file, self.now())
                .map_err(|e| bad(format!("cannot store {name}: {e}")))?;
        }
        registry.import_run(&manifest.run, manifest.created_ms, &manifest.entries)?;
        Ok(ImportReport {
            run: manifest.run,
            lines: manifest.entries.len(),
            artefacts,
        })
    }

    /// Streams every member after the manifest into a verified temporary file.
    fn stage_members(
        &self,
        members: &mut Members<'_>,
        manifest: &Manifest,
    ) -> std::result::Result<BTreeMap<String, Staged>, String> {
        let limit = MAX_MEMBER_LEN.min(self.settings.max_size);
        let mut staged = BTreeMap::new();
        for member in members {
            let mut member = member.map_err(|e| format!("damaged archive: {e}"))?;
            let name = member_name(&member);
            if name == MANIFEST {
                return Err(format!("{MANIFEST} appears twice"));
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
            let s = self
                .stage(&mut member, &name, size, sum)
                .map_err(|e| format!("{name}: {e}"))?;
            staged.insert(name, s);
        }
        if let Some(missing) = manifest.files.keys().find(|n| !staged.contains_key(*n)) {
            return Err(format!("{missing} is listed in {MANIFEST} but missing"));
        }
        Ok(staged)
    }

    /// Copies one member (`size` bytes) into a temporary file, checking its SHA-256 against
    /// `sum`, then verifies it as an entry file of the digest in `name`.
    fn stage(
        &self,
        member: &mut impl Read,
        name: &str,
        size: u64,
        sum: &str,
    ) -> std::result::Result<Staged, String> {
        let digest = digest_of(name)?;
        let mut file = tempfile::Builder::new()
            .prefix(".import-")
            .tempfile_in(self.layout.tmp_dir())
            .map_err(|e| format!("cannot create a temporary file: {e}"))?;
        let (copied, hash) = copy_hashing(member, file.as_file_mut())
            .map_err(|e| format!("damaged archive: {e}"))?;
        if copied != size {
            return Err(format!(
                "truncated: the archive holds {copied} of the {size} bytes it claims"
            ));
        }
        if hex::encode(hash) != *sum {
            return Err("does not match its checksum".to_owned());
        }
        let meta = match verify_from(file.as_file_mut(), size, &digest) {
            Ok(Ok(meta)) => meta,
            Ok(Err(DecodeError::Corrupt(c))) => return Err(format!("not a valid entry: {c}")),
            Ok(Err(e @ DecodeError::UnsupportedVersion(_))) => return Err(e.to_string()),
            Err(e) => return Err(format!("cannot read back: {e}")),
        };
        Ok(Staged { file, meta, size })
    }
}

/// Reads and checks the first member, which must be the manifest.
fn read_manifest(members: &mut Members<'_>) -> std::result::Result<Manifest, String> {
    let mut first = members
        .next()
        .ok_or_else(|| format!("empty archive: no {MANIFEST}"))?
        .map_err(|e| format!("not a run export: {e}"))?;
    let name = member_name(&first);
    if name != MANIFEST {
        return Err(format!(
            "the first member is {}, not {MANIFEST}: not a run export",
            shorten(&name)
        ));
    }
    let size = regular_size(&first, &name)?;
    if size > MAX_MANIFEST_LEN {
        return Err(format!(
            "{MANIFEST} claims {size} bytes; at most {MAX_MANIFEST_LEN} are read"
        ));
    }
    let mut bytes = Vec::new();
    (&mut first)
        .take(size)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("damaged archive at {MANIFEST}: {e}"))?;
    if bytes.len() as u64 != size {
        return Err(format!("{MANIFEST} is truncated"));
    }
    let manifest: Manifest =
        serde_json::from_slice(&bytes).map_err(|e| format!("bad {MANIFEST}: {e}"))?;
    manifest.check().map_err(|e| format!("{MANIFEST}: {e}"))?;
    Ok(manifest)
}

/// Each line with an artefact names the key and state of the entry file staged for it.
fn check_lines(
    manifest: &Manifest,
    staged: &BTreeMap<String, Staged>,
) -> std::result::Result<(), String> {
    for line in manifest.entries.iter().filter(|l| l.state != "conflict") {
        let name = super::manifest::member_name(&line.digest);
        let Some(s) = staged.get(&name) else {
            return Err(format!("{name} is missing"));
        };
        let state = match s.meta.state {
            EntryState::Ok => "ok",
            EntryState::Failed => "failed",
        };
        if s.meta.key != line.key || state != line.state {
            return Err(format!(
                "{name} holds {} ({state}), but {MANIFEST} says {} ({}) at {}",
                s.meta.key, line.key, line.state, line.address
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

/// Copies `from` into `to`, returning the byte count and SHA-256; a fixed 64 KiB buffer.
fn copy_hashing(from: &mut impl Read, to: &mut File) -> io::Result<(u64, [u8; 32])> {
    let mut buf = vec![0u8; 64 << 10];
    let mut hasher = Sha256::new();
    let mut copied = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        to.write_all(&buf[..n])?;
        copied += n as u64;
    }
    Ok((copied, hasher.finalize().into()))
}
