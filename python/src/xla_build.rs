//! Which XLA build compiled an entry. JAX's key holds jaxlib's version string, not its binary:
//! two builds of one version (a source build with local patches, a rebuilt wheel, an in-place
//! downgrade) share keys, and an executable from one may crash the other. `install()` names
//! the process's build — a digest of the shared libraries of the installed jaxlib and its
//! plugins, each file's digest remembered by file identity in the inode caches of the cache
//! directory and of the user's default one (so a fresh cache directory does not read them
//! again) so a process pays a few `stat`s — and the store keeps each build's entries apart: an entry lives
//! under the key's name and a digest of (key, build), while the key JAX sees and logs, and the
//! record's `sha256`, stay JAX's. The record keeps the build (`xla_build`) so a miss against
//! another build's entry is explained ("XLA build changed: sha256:… → sha256:…").

use std::path::{Path, PathBuf};

use mck_cli::inode_cache::{self, InodeCache};
use mck_store::{CacheKey, Digest, StoreError};
use sha2::{Digest as _, Sha256};

/// Most library files a build is made of (jaxlib has about 25).
const MAX_LIBRARIES: usize = 4096;
/// Names what the build digest and the store's keys are computed from.
const SCHEME: &str = "mlir-cache-key/xla-build/1";

/// The build that `libraries` (each a name relative to the site directory, and its path) make
/// up: `sha256:<hex>` over their names and contents, in name order, and how many files were
/// read (the others' content digests were remembered in one of `remembered` under their
/// device, inode, size and times).
pub fn digest(
    libraries: &[(String, PathBuf)],
    remembered: &[&InodeCache],
) -> std::io::Result<(String, usize)> {
    if libraries.is_empty() || libraries.len() > MAX_LIBRARIES {
        return Err(std::io::Error::other(format!(
            "expected 1 to {MAX_LIBRARIES} library files, got {}",
            libraries.len()
        )));
    }
    let mut files = Vec::with_capacity(libraries.len());
    let mut read = 0;
    for (name, path) in libraries {
        let in_file =
            |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
        let file = std::fs::File::open(path).map_err(in_file)?;
        let metadata = file.metadata().map_err(in_file)?;
        let shown = path.display().to_string();
        let (content, was_read) =
            inode_cache::digest_in(&file, &metadata, &shown, remembered).map_err(in_file)?;
        read += usize::from(was_read);
        files.push((name.as_str(), content));
    }
    files.sort();
    let mut hasher = Sha256::new();
    hasher.update(SCHEME.as_bytes());
    for (name, content) in files {
        hasher.update(b"\n");
        hasher.update(name.as_bytes());
        hasher.update(b"\0");
        hasher.update(hex::encode(content).as_bytes());
    }
    Ok((format!("sha256:{}", hex::encode(hasher.finalize())), read))
}

/// The inode cache of the user's default cache directory (`v1/` created private if missing),
/// unless it is `beside` (the cache directory's own) or cannot be used: the XLA build's
/// libraries are then read once per user, not once per cache directory.
pub fn user_inode_cache(beside: Option<&Path>) -> Option<InodeCache> {
    let top =
        mck_settings::user_cache_dir(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"))
            .ok()?;
    let dir = top.join("v1");
    if beside.is_some_and(|b| same_dir(b, &dir)) {
        return None;
    }
    std::fs::create_dir_all(top.parent()?).ok()?;
    // Private and ours (not a symlink, nobody else can write): another user's records would
    // name our build.
    for level in [&top, &dir] {
        mck_store::ensure_private_dir(level, 0o700).ok()?;
    }
    Some(InodeCache::in_cache(&dir))
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Where the store keeps `key`'s entry compiled by `build`.
pub fn stored_key(key: &CacheKey, build: &str) -> Result<CacheKey, StoreError> {
    let mut hasher = Sha256::new();
    for part in [SCHEME, key.digest().as_str(), build] {
        hasher.update(part.as_bytes());
        hasher.update(b"\0");
    }
    CacheKey::from_parts(key.name(), Digest::parse(&hex::encode(hasher.finalize()))?)
}

/// `ingredients` (a key record) with `build` recorded.
pub fn with_build(mut ingredients: serde_json::Value, build: &str) -> serde_json::Value {
    if let serde_json::Value::Object(fields) = &mut ingredients {
        fields.insert("xla_build".into(), build.into());
    }
    ingredients
}
