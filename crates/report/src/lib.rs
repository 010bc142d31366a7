//! Why did we recompile? A report over the lookup histories of one or many caches
//! (`mck_store::history`): hit rate over time, compile time spent and saved, misses grouped by
//! cause (with hosts and example keys), the modules that miss most, eviction churn and the cap
//! that would have avoided it, and each remote tier's hit rate and downtime.
//!
//! Files: `model` (the JSON schema), `analyse` (events → report), `text` and `html` (its
//! renderings), `format` (times, durations, sizes and escaping, for both). No MLIR, no network.

mod analyse;
pub mod format;
pub mod html;
mod model;
pub mod text;

use std::path::PathBuf;

pub use analyse::{CAUSES, TOP_MODULES, analyse, cause_label};
pub use model::*;

/// One cache's history to read: its directory, and its size cap when known.
#[derive(Clone, Debug)]
pub struct Source {
    pub cache_dir: PathBuf,
    pub cache_size: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot read the history of the cache {}: {source}", dir.display())]
    Read {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a cache directory (it has no {} directory)", dir.display(), state.display())]
    NotACache { dir: PathBuf, state: PathBuf },
}

/// Reads the histories of `sources` from `since_ms` to `until_ms` and reports on them.
pub fn report(sources: &[Source], since_ms: i64, until_ms: i64) -> Result<Report, ReportError> {
    let mut read = Vec::with_capacity(sources.len());
    for source in sources {
        let layout = mck_store::Layout::new(&source.cache_dir);
        if !layout.state_dir().is_dir() {
            return Err(ReportError::NotACache {
                dir: source.cache_dir.clone(),
                state: layout.state_dir().to_owned(),
            });
        }
        let history = mck_store::history::read_history(layout.state_dir(), since_ms).map_err(
            |source_error| ReportError::Read {
                dir: source.cache_dir.clone(),
                source: source_error,
            },
        )?;
        read.push((source.clone(), history));
    }
    Ok(analyse(&read, since_ms, until_ms))
}
