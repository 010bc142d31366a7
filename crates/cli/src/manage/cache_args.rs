//! The arguments of `mlir-cache-key cache …` (run in `cache.rs`).

use mck_store::EntryState;
use std::path::PathBuf;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Entries, bytes, hits, misses, failures, evictions; the remote tier's
    /// hits, misses, writes, fallbacks and corrupt values.
    #[command(after_help = "Examples:\n  mlir-cache-key cache stats\n  \
                            mlir-cache-key cache stats --json | jq .hit_rate\n  \
                            mlir-cache-key cache stats --zero")]
    Stats {
        /// Print a JSON object (schema mlir-cache-key.stats.v1, raw numbers) instead of text.
        #[arg(long)]
        json: bool,
        /// Set every event counter to zero first (hits, misses, reasons, evictions, remote
        /// counters); sizes stay. Like ccache --zero-stats.
        #[arg(long, short = 'z')]
        zero: bool,
    },
    /// List addresses (grouped by path) and what each holds.
    List {
        /// An address pattern: names or mapped values may be `*`
        /// ('train-v1/answer[model:*]'); a path matches everything below it.
        pattern: Option<String>,
        #[command(flatten)]
        select: Select,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List content entries (with or without an address), most recently used first.
    Entries {
        /// Only modules whose name matches this glob (`jit_*`).
        #[arg(long, value_name = "GLOB")]
        name: Option<String>,
        /// Only entries in this state: ok or failed (a remembered failed compilation).
        #[arg(long, value_enum)]
        state: Option<StateArg>,
        /// Order: last-use (default), lru (eviction order) or name.
        #[arg(long, value_enum, default_value = "last-use")]
        sort: SortArg,
        /// At most this many entries.
        #[arg(long)]
        limit: Option<usize>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove addresses matching PATTERN (or --all) and their artefacts;
    /// artefacts a run record references are kept (for `cache adopt`).
    Clear {
        /// An address pattern, as for `cache list`.
        #[arg(conflicts_with = "all")]
        pattern: Option<String>,
        /// Every address and every unreferenced entry.
        #[arg(long)]
        all: bool,
        /// Content entries whose module name matches this glob.
        #[arg(long, value_name = "GLOB", conflicts_with = "all")]
        name: Option<String>,
        #[command(flatten)]
        select: Select,
        /// Print JSON (schema mlir-cache-key.clear.v1) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print a stored entry's record: state, artefact, and the key's readable ingredients
    /// (flags kept and left out, the trace of entry digests).
    #[command(
        after_help = "Examples:\n  mlir-cache-key cache show jit_f-<64 hex>\n  \
                            mlir-cache-key cache show 'train-v1/answer' --json"
    )]
    Show {
        /// A key (`<name>-<64 hex>`), a bare 64-hex digest, or an address that holds one.
        what: String,
        /// Print JSON (schema mlir-cache-key.entry.v1) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Put a run's entries back at their addresses.
    #[command(after_help = "Example:\n  mlir-cache-key cache adopt nightly-0412")]
    Adopt {
        /// The run whose entries go back to their addresses.
        run: String,
        /// Print JSON (schema mlir-cache-key.adopt.v1) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Re-check every entry's checksums (damaged ones are quarantined) and
    /// repair the index from the directory.
    #[command(after_help = "Example:\n  mlir-cache-key cache verify --json")]
    Verify {
        /// Print JSON (schema mlir-cache-key.verify.v1) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Apply the size cap and time-to-live now; sweep stale temporary files.
    #[command(after_help = "Examples:\n  mlir-cache-key cache gc\n  \
                            mlir-cache-key config set cache_size 10G && mlir-cache-key cache gc")]
    Gc {
        /// Print JSON (schema mlir-cache-key.gc.v1) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Store FILE under KEY (`<name>-<64 hex>`), e.g. from `key` (and on the
    /// remote tier, if any).
    #[command(
        after_help = "Example:\n  mlir-cache-key cache put \"$(mlir-cache-key key m.mlir)\" m.bin"
    )]
    Put {
        /// The key, `<name>-<64 hex>`.
        key: String,
        /// The artefact to store.
        file: PathBuf,
        /// A `key --json` report to keep as the entry's ingredients.
        #[arg(long, value_name = "REPORT")]
        record: Option<PathBuf>,
        /// Print JSON (schema mlir-cache-key.put.v1) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write the artefact stored under KEY to OUT (or stdout), from the local
    /// cache or else the remote tier.
    #[command(after_help = "Example:\n  mlir-cache-key cache get jit_f-<64 hex> -o f.bin")]
    Get {
        /// The key, `<name>-<64 hex>`.
        key: String,
        /// Where to write the artefact [default: stdout].
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
        /// Print the entry's metadata as JSON (schema mlir-cache-key.get.v1) on stdout;
        /// needs --output for the artefact.
        #[arg(long, requires = "output")]
        json: bool,
    },
}

/// Address selectors shared by `list` and `clear`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Select {
    /// Only addresses whose local name (last path segment) is NAME.
    #[arg(long, value_name = "NAME")]
    pub step: Option<String>,
    /// Only addresses whose entry is ok or failed.
    #[arg(long, value_enum)]
    pub state: Option<StateArg>,
    /// Only addresses where run RUN met a cache conflict.
    #[arg(long, value_name = "RUN")]
    pub conflicts_in: Option<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum StateArg {
    Ok,
    Failed,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum SortArg {
    LastUse,
    Lru,
    Name,
}

pub fn state(arg: Option<StateArg>) -> Option<EntryState> {
    arg.map(|s| match s {
        StateArg::Ok => EntryState::Ok,
        StateArg::Failed => EntryState::Failed,
    })
}
