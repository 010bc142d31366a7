//! Reading an INPUT argument: a path, or `-` for standard input; gzip is
//! decompressed transparently (large modules are shipped as .mlir.gz).
//! Every file read from the command line is capped at `--max-input-size`
//! (4 GiB by default), counted after decompression, so a small gzip bomb
//! cannot exhaust memory.

use crate::error::CliError;
use anyhow::anyhow;
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

/// An input's bytes and the name diagnostics use for it.
pub struct Input {
    pub name: String,
    pub bytes: Vec<u8>,
}

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];

/// The default cap: larger than any module we have seen, small enough that
/// a host that compiles can hold it.
pub const DEFAULT_MAX_INPUT_SIZE: u64 = 4 << 30;

static MAX_SIZE: OnceLock<u64> = OnceLock::new();

/// Sets the cap for this process (`--max-input-size`); the first call counts.
pub fn set_max_size(bytes: Option<u64>) {
    let _ = MAX_SIZE.set(bytes.unwrap_or(DEFAULT_MAX_INPUT_SIZE));
}

fn max_size() -> u64 {
    *MAX_SIZE.get().unwrap_or(&DEFAULT_MAX_INPUT_SIZE)
}

/// Reads a module: a path or `-`, decompressed if gzip.
pub fn read(path: &Path) -> Result<Input, CliError> {
    let (name, raw) = read_raw(path)?;
    decode(name, raw)
}

/// The input's name and bytes as stored (gzip still compressed), up to the cap.
pub fn read_raw(path: &Path) -> Result<(String, Vec<u8>), CliError> {
    Ok(if path == Path::new("-") {
        let name = "<stdin>".to_string();
        let raw = read_capped(std::io::stdin().lock(), &name, "")?;
        (name, raw)
    } else {
        (path.display().to_string(), read_file(path)?)
    })
}

/// Whether `path` can be read only once (stdin, a pipe, a device): such an input is read
/// whole, once, by the process that canonicalizes it, never hashed first.
pub fn is_stream(path: &Path) -> bool {
    path == Path::new("-") || !std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// The digest direct mode keys a regular file on ([`crate::raw_digest`]), read through bounded
/// buffers, up to the cap, or remembered in `inode_cache`.
pub fn digest_file(
    path: &Path,
    inode_cache: Option<&crate::inode_cache::InodeCache>,
) -> Result<[u8; 32], CliError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path)
        .map_err(|e| CliError::no_input(anyhow!("cannot read {name}: {e}")))?;
    let metadata = file
        .metadata()
        .map_err(|e| CliError::no_input(anyhow!("cannot read {name}: {e}")))?;
    if metadata.len() > max_size() {
        return Err(too_large(&name, ""));
    }
    crate::inode_cache::digest(&file, &metadata, &name, inode_cache)
        .map_err(|e| CliError::input(anyhow!("cannot read {name}: {e}")))
}

fn too_large(name: &str, how: &str) -> CliError {
    CliError::input(anyhow!(
        "{name} is larger{how} than the input size limit of {} bytes; \
         raise it with --max-input-size",
        max_size()
    ))
}

/// Raw input bytes as an [`Input`], gzip decompressed (up to the cap).
pub fn decode(name: String, raw: Vec<u8>) -> Result<Input, CliError> {
    let bytes = if raw.starts_with(GZIP_MAGIC) {
        read_capped(
            flate2::read::MultiGzDecoder::new(raw.as_slice()),
            &name,
            " decompressed",
        )?
    } else {
        raw
    };
    Ok(Input { name, bytes })
}

/// Reads a file named on the command line, up to the cap.
pub fn read_file(path: &Path) -> Result<Vec<u8>, CliError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path)
        .map_err(|e| CliError::no_input(anyhow!("cannot read {name}: {e}")))?;
    read_capped(file, &name, "")
}

/// Reads everything from `reader`, failing once it exceeds the cap.
fn read_capped(reader: impl Read, name: &str, how: &str) -> Result<Vec<u8>, CliError> {
    let cap = max_size();
    let mut bytes = Vec::new();
    reader
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::input(anyhow!("cannot read {name}{how}: {e}")))?;
    if bytes.len() as u64 > cap {
        return Err(too_large(name, how));
    }
    Ok(bytes)
}
