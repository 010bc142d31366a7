//! `mlir-cache-key cache …`: inspect and manage the persistent cache.

use super::addresses;
use super::cache_text::{stats_text, table};
use super::error::CliError;
use super::output::{self, json_text};
use super::settings::CacheOptions;
use crate::store::{CacheKey, EntryState, ListFilter, Lookup, SortBy, Store, Streamed, Tiered};
use anyhow::{Context as _, anyhow};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Entries, bytes, hits, misses, failures, evictions; the remote tier's
    /// hits, misses, writes, fallbacks and corrupt values.
    Stats {
        #[arg(long)]
        json: bool,
    },
    /// List addresses (grouped by path) and what each holds.
    List {
        /// An address pattern: names or mapped values may be `*`
        /// ('train-v1/answer[model:*]'); a path matches everything below it.
        pattern: Option<String>,
        #[command(flatten)]
        select: Select,
        #[arg(long)]
        json: bool,
    },
    /// List content entries (with or without an address), most recently used first.
    Entries {
        /// Only modules whose name matches this glob (`jit_*`).
        #[arg(long, value_name = "GLOB")]
        name: Option<String>,
        #[arg(long, value_enum)]
        state: Option<StateArg>,
        /// Order: last-use (default), lru (eviction order) or name.
        #[arg(long, value_enum, default_value = "last-use")]
        sort: SortArg,
        #[arg(long)]
        limit: Option<usize>,
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
    },
    /// Put a run's entries back at their addresses.
    Adopt { run: String },
    /// Re-check every entry's checksums (damaged ones are quarantined) and
    /// repair the index from the directory.
    Verify,
    /// Apply the size cap and time-to-live now; sweep stale temporary files.
    Gc,
    /// Store FILE under KEY (`<name>-<64 hex>`), e.g. from `key` (and on the
    /// remote tier, if any).
    Put {
        key: String,
        file: PathBuf,
        /// A `key --json` report to keep as the entry's ingredients.
        #[arg(long, value_name = "REPORT")]
        record: Option<PathBuf>,
    },
    /// Write the artefact stored under KEY to OUT (or stdout), from the local
    /// cache or else the remote tier.
    Get {
        key: String,
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
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

pub(super) fn state(arg: Option<StateArg>) -> Option<EntryState> {
    arg.map(|s| match s {
        StateArg::Ok => EntryState::Ok,
        StateArg::Failed => EntryState::Failed,
    })
}

fn open(cache: &CacheOptions) -> Result<Store, CliError> {
    Ok(Store::open(&cache.settings()?)?)
}

pub fn run(command: Command, cache: &CacheOptions) -> Result<ExitCode, CliError> {
    let store = open(cache)?;
    let text = match command {
        Command::Stats { json } => {
            let stats = store.stats()?;
            if json {
                json_text(&stats)?
            } else {
                stats_text(&stats)
            }
        }
        Command::List {
            pattern,
            select,
            json,
        } => {
            let chosen = addresses::select(&store, pattern.as_deref(), &select)?;
            if json {
                json_text(&chosen)?
            } else {
                addresses::table(&chosen)
            }
        }
        Command::Entries {
            name,
            state: s,
            sort,
            limit,
            json,
        } => {
            let filter = ListFilter {
                name_glob: name,
                state: state(s),
                sort: match sort {
                    SortArg::LastUse => SortBy::LastUsed,
                    SortArg::Lru => SortBy::LeastRecentlyUsed,
                    SortArg::Name => SortBy::Name,
                },
                limit,
            };
            let entries = store.list(&filter)?;
            if json {
                json_text(&entries)?
            } else {
                table(&entries)
            }
        }
        Command::Clear {
            pattern,
            all,
            name,
            select,
        } => addresses::clear(&store, pattern.as_deref(), all, name.as_deref(), &select)?,
        Command::Adopt { run } => addresses::adopt(&store, &run)?,
        Command::Verify => {
            let progress = indicatif::ProgressBar::new(0);
            progress.set_style(
                indicatif::ProgressStyle::with_template("verifying {bar:40} {pos}/{len} entries")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            let report = store.verify(|done, total| {
                progress.set_length(total);
                progress.set_position(done);
            })?;
            progress.finish_and_clear();
            json_text(&report)?
        }
        Command::Gc => json_text(&store.gc()?)?,
        Command::Put { key, file, record } => {
            let key = CacheKey::parse(&key)?;
            let ingredients = match record {
                Some(path) => serde_json::from_slice(
                    &std::fs::read(&path)
                        .with_context(|| format!("cannot read {}", path.display()))
                        .map_err(CliError::input)?,
                )
                .with_context(|| format!("{} is not JSON", path.display()))
                .map_err(CliError::input)?,
                None => serde_json::Value::Null,
            };
            std::fs::File::open(&file)
                .with_context(|| format!("cannot read {}", file.display()))
                .map_err(CliError::input)?;
            // Streamed from the file (into the local tier), never read whole.
            Tiered::over(store).put_file(&key, &file, &ingredients)?;
            format!("stored {key}\n")
        }
        Command::Get { key, output: out } => {
            let key = CacheKey::parse(&key)?;
            let store = Tiered::over(store);
            // To a file: streamed and verified in one pass, never whole in memory.
            let found = match &out {
                Some(path) => match store.get_to(&key, path, 0o644)? {
                    Streamed::Written { .. } => return Ok(ExitCode::SUCCESS),
                    Streamed::Failed(f) => Lookup::Failed(f),
                    Streamed::Miss => Lookup::Miss,
                },
                None => store.get(&key)?,
            };
            match found {
                Lookup::Hit(artefact) => {
                    output::write(out.as_deref(), &artefact.bytes)?;
                    return Ok(ExitCode::SUCCESS);
                }
                Lookup::Failed(f) => {
                    return Err(CliError::other(anyhow!(
                        "{key} is a remembered failed compilation (exit status {:?}):\n{}",
                        f.failure.exit_status,
                        f.failure.stderr
                    )));
                }
                Lookup::Miss => return Err(CliError::other(anyhow!("{key} is not in the cache"))),
            }
        }
    };
    output::stdout(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
