//! Reading an INPUT argument: a path, or `-` for standard input; gzip is
//! decompressed transparently (large modules are shipped as .mlir.gz).

use super::error::CliError;
use anyhow::Context as _;
use std::io::Read;
use std::path::Path;

/// An input's bytes and the name diagnostics use for it.
pub struct Input {
    pub name: String,
    pub bytes: Vec<u8>,
}

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];

pub fn read(path: &Path) -> Result<Input, CliError> {
    let (name, raw) = read_raw(path)?;
    decode(name, raw)
}

/// The input's name and bytes as stored (gzip still compressed).
pub fn read_raw(path: &Path) -> Result<(String, Vec<u8>), CliError> {
    Ok(if path == Path::new("-") {
        let mut raw = Vec::new();
        std::io::stdin()
            .read_to_end(&mut raw)
            .context("cannot read standard input")
            .map_err(CliError::input)?;
        ("<stdin>".to_string(), raw)
    } else {
        let name = path.display().to_string();
        let raw = std::fs::read(path)
            .with_context(|| format!("cannot read {name}"))
            .map_err(CliError::no_input)?;
        (name, raw)
    })
}

/// Raw input bytes as an [`Input`], gzip decompressed.
pub fn decode(name: String, raw: Vec<u8>) -> Result<Input, CliError> {
    let bytes = if raw.starts_with(GZIP_MAGIC) {
        let mut bytes = Vec::new();
        flate2::read::MultiGzDecoder::new(raw.as_slice())
            .read_to_end(&mut bytes)
            .with_context(|| format!("{name}: cannot decompress gzip"))
            .map_err(CliError::input)?;
        bytes
    } else {
        raw
    };
    Ok(Input { name, bytes })
}
