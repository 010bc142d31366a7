//! `mlir-cache-key cache …`: inspect and manage the persistent cache.

use super::addresses;
pub use super::cache_args::Command;
use super::cache_args::{SortArg, state};
use super::cache_text::{gc_text, stats_text, table, verify_text};
use super::output::{self, text_or_json, text_or_versioned, versioned};
use super::progress::Progress;
use super::stored;
use crate::error::CliError;
use crate::settings::CacheOptions;
use anyhow::{Context as _, anyhow};
use mck_store::{CacheKey, ListFilter, Lookup, SortBy, Streamed};

pub fn run(command: Command, cache: &CacheOptions) -> Result<(), CliError> {
    let tiers = cache.open_to_manage()?;
    let store = tiers.local();
    let text = match command {
        Command::Stats { json, zero } => {
            if zero {
                store.zero_stats()?;
            }
            text_or_json(json, &tiers.stats()?, stats_text)?
        }
        Command::List {
            pattern,
            select,
            json,
        } => {
            let chosen = addresses::select(
                store,
                &cache.open_registry(store)?,
                pattern.as_deref(),
                &select,
            )?;
            text_or_json(json, &chosen, |chosen| addresses::table(chosen))?
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
                name: None,
                state: state(s),
                sort: match sort {
                    SortArg::LastUse => SortBy::LastUsed,
                    SortArg::Lru => SortBy::LeastRecentlyUsed,
                    SortArg::Name => SortBy::Name,
                },
                limit,
            };
            text_or_json(json, &store.list(&filter)?, |entries| table(entries))?
        }
        Command::Clear {
            pattern,
            all,
            name,
            select,
            json,
        } => addresses::clear(
            store,
            &cache.open_registry(store)?,
            pattern.as_deref(),
            all,
            name.as_deref(),
            &select,
        )?
        .render("clear", json)?,
        Command::Show { what, json } => {
            let meta = stored::require(store, &cache.registry_settings()?, &what)?;
            let suspect = stored::suspect_of(store, &meta)?;
            if json {
                stored::json(&meta, suspect.as_ref())?
            } else {
                stored::text(&meta, suspect.as_ref())
            }
        }
        Command::Adopt { run, json } => {
            addresses::adopt(store, &cache.open_registry(store)?, &run)?.render("adopt", json)?
        }
        Command::Verify { json } => {
            let progress = Progress::bar("verifying entries", json);
            let report = store.verify(|done, total| progress.set(done, total))?;
            drop(progress);
            text_or_versioned(json, "verify", &report, verify_text)?
        }
        Command::Gc { json } => {
            let progress = Progress::spinner("collecting garbage", json);
            let report = store.gc()?;
            drop(progress);
            text_or_versioned(json, "gc", &report, gc_text)?
        }
        Command::Put {
            key,
            file,
            record,
            json,
        } => {
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
            let size = std::fs::metadata(&file)
                .with_context(|| format!("cannot read {}", file.display()))
                .map_err(CliError::input)?
                .len();
            // Streamed from the file (into the local tier), never read whole.
            tiers.put_file(&key, &file, &ingredients)?;
            if json {
                versioned(
                    "put",
                    &serde_json::json!({ "key": key.to_string(), "bytes": size }),
                )?
            } else {
                format!(
                    "stored {key}
"
                )
            }
        }
        Command::Get {
            key,
            output: out,
            json,
        } => {
            let key = CacheKey::parse(&key)?;
            let store = &tiers;
            // To a file: streamed and verified in one pass, never whole in memory.
            let found = match &out {
                Some(path) => match store.get_to(&key, path, 0o644)? {
                    Streamed::Written { size, .. } if json => {
                        let report = versioned(
                            "get",
                            &serde_json::json!({
                                "key": key.to_string(),
                                "bytes": size,
                                "output": out,
                            }),
                        )?;
                        output::stdout(report.as_bytes())?;
                        return Ok(());
                    }
                    Streamed::Written { .. } => return Ok(()),
                    Streamed::Failed(f) => Lookup::Failed(f),
                    Streamed::Miss => Lookup::Miss,
                },
                None => store.get(&key)?,
            };
            match found {
                Lookup::Hit(artefact) => {
                    output::write(out.as_deref(), &artefact.bytes)?;
                    if !json {
                        return Ok(());
                    }
                    versioned(
                        "get",
                        &serde_json::json!({
                            "key": key.to_string(),
                            "bytes": artefact.bytes.len(),
                            "created_ms": artefact.created_ms,
                            "output": out,
                        }),
                    )?
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
    Ok(())
}
