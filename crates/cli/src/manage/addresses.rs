//! Address views and operations behind `cache list`, `cache clear` and
//! `cache adopt`.

use super::cache_args::{Select, state};
use super::output::Reported;
use super::output::{pad, utc};
use crate::error::CliError;
use anyhow::anyhow;
use mck_runs::{Address, AddressPattern, Registry, RunState, RunningEntry};
use mck_store::{Clear, Digest, EntrySummary, Store};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// One address as listed.
#[derive(Debug, Clone, Serialize)]
pub struct AddressView {
    pub address: String,
    pub state: String,
    pub key: String,
    pub run: String,
    pub updated: String,
    /// With `--conflicts-in RUN`: the fingerprint that run brought.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflicting_key: Option<String>,
    /// Why a hit audit stopped serving the entry the address holds, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspect: Option<String>,
}

/// Addresses matching the pattern and selectors, sorted.
pub fn select(
    store: &Store,
    registry: &Registry,
    pattern: Option<&str>,
    select: &Select,
) -> Result<Vec<AddressView>, CliError> {
    let pattern = pattern
        .map(AddressPattern::parse)
        .transpose()
        .map_err(CliError::usage)?;
    let conflicts: Option<BTreeMap<String, String>> = match &select.conflicts_in {
        None => None,
        Some(run) => Some(
            registry
                .run(run)?
                .ok_or_else(|| CliError::usage(anyhow!("no run {run} in this cache")))?
                .into_iter()
                .filter(|line| line.state == RunState::Conflict)
                .map(|line| (line.address, line.key))
                .collect(),
        ),
    };
    let wanted_state = state(select.state).map(|s| s.as_str().to_string());
    let running: BTreeMap<String, RunningEntry> = registry
        .running()?
        .into_iter()
        .map(|r| (r.address.clone(), r))
        .collect();
    // (view, step) of each address; a compile in progress shows as `running`.
    let mut listed: Vec<(AddressView, String)> = registry
        .addresses()?
        .into_iter()
        .map(|entry| {
            let view = AddressView {
                state: entry.state.as_str().to_string(),
                key: entry.key,
                run: entry.run,
                updated: utc(entry.updated_ms),
                address: entry.address,
                conflicting_key: None,
                suspect: None,
            };
            (view, entry.local_name)
        })
        .collect();
    // An address compiled for the first time has no entry yet: list it as running too.
    for (address, r) in &running {
        if !listed.iter().any(|(v, _)| v.address == *address) {
            let local_name = Address::parse(address)
                .map(|a| a.local_name().to_string())
                .unwrap_or_default();
            let view = AddressView {
                address: address.clone(),
                state: String::new(),
                key: r.key.clone(),
                run: String::new(),
                updated: utc(r.started_ms),
                conflicting_key: None,
                suspect: None,
            };
            listed.push((view, local_name));
        }
    }
    listed.sort_by(|a, b| a.0.address.cmp(&b.0.address));
    let suspects = store.suspects()?;
    let mut out = Vec::new();
    for (mut view, local_name) in listed {
        if let Some(r) = running.get(&view.address) {
            view.state = "running".into();
            view.run = r.run.clone();
        }
        // An address this version would refuse (an older one stored it) is still listed and
        // cleared by selections without a pattern.
        let address = Address::parse(&view.address).ok();
        let keep = pattern
            .as_ref()
            .is_none_or(|p| address.as_ref().is_some_and(|a| p.matches(a)))
            && select.step.as_ref().is_none_or(|s| *s == local_name)
            && wanted_state.as_ref().is_none_or(|s| *s == view.state)
            && conflicts
                .as_ref()
                .is_none_or(|c| c.contains_key(&view.address));
        if keep {
            view.suspect = suspect_reason(store, &suspects, &view.key);
            view.conflicting_key = conflicts
                .as_ref()
                .and_then(|c| c.get(&view.address).cloned());
            out.push(view);
        }
    }
    Ok(out)
}

/// The reason a marker gives for not serving `key`'s entry, if one condemns the entry there now.
fn suspect_reason(
    store: &Store,
    suspects: &std::collections::HashMap<String, mck_store::Suspect>,
    key: &str,
) -> Option<String> {
    let key = mck_store::CacheKey::parse(key).ok()?;
    suspects.get(key.digest().as_str())?;
    store.suspect(&key).ok().flatten().map(|s| s.reason)
}

/// Aligned rows, grouped by address path (mapped keys indented below it).
pub fn table(views: &[AddressView]) -> String {
    let mut out = String::new();
    if views.is_empty() {
        out.push_str("no addresses\n");
        return out;
    }
    let mut groups: BTreeMap<&str, Vec<&AddressView>> = BTreeMap::new();
    for view in views {
        let path = view.address.split('[').next().unwrap_or(&view.address);
        groups.entry(path).or_default().push(view);
    }
    let width = views
        .iter()
        .map(|v| {
            let path = v.address.split('[').next().unwrap_or_default();
            v.address[path.len()..].chars().count()
        })
        .max()
        .unwrap_or(0)
        .max(2);
    for (path, members) in groups {
        let _ = writeln!(
            out,
            "{path}  ({} address{})",
            members.len(),
            if members.len() == 1 { "" } else { "es" }
        );
        for v in members {
            let mapped = &v.address[path.len()..];
            let mapped = if mapped.is_empty() { "-" } else { mapped };
            let _ = write!(
                out,
                "  {}  {:<6}  {}  {}  (run {})",
                pad(mapped, width),
                v.state,
                v.updated,
                v.key,
                v.run
            );
            if let Some(theirs) = &v.conflicting_key {
                let _ = write!(
                    out,
                    "\n  {}  conflict: the run brought {theirs}",
                    pad("", width)
                );
            }
            if let Some(reason) = &v.suspect {
                let first = reason.lines().next().unwrap_or_default();
                let _ = write!(out, "\n  {}  suspect: {first}", pad("", width));
            }
            out.push('\n');
        }
    }
    out
}

/// Clearing an address that a live process is compiling would lose its result: refuse, naming
/// the run (a dead holder's mark does not count).
fn refuse_running(registry: &Registry, chosen: &[AddressView]) -> Result<(), CliError> {
    let running = registry.running()?;
    match running
        .iter()
        .find(|r| chosen.iter().any(|v| v.address == r.address))
    {
        Some(holder) => Err(CliError {
            kind: crate::error::Failure::Conflict,
            error: anyhow!(
                "not clearing: {holder}; wait for it to finish (or stop it), then clear"
            ),
        }),
        None => Ok(()),
    }
}

/// Content entries that no run record references (only those may go).
fn unpinned(registry: &Registry, entry: &EntrySummary) -> bool {
    !registry.is_pinned(&entry.digest).unwrap_or(true)
}

pub fn clear(
    store: &Store,
    registry: &Registry,
    pattern: Option<&str>,
    all: bool,
    name: Option<&str>,
    selectors: &Select,
) -> Result<Reported, CliError> {
    // Filters narrow: `--all --step NAME` is every address of that step, not every address.
    let filtered =
        selectors.step.is_some() || selectors.state.is_some() || selectors.conflicts_in.is_some();
    if !all && name.is_none() && pattern.is_none() && !filtered {
        return Err(CliError::usage(anyhow!(
            "say what to clear: an address PATTERN, --all, --name GLOB, --step, --state or --conflicts-in"
        )));
    }
    let mut removed_addresses = 0;
    let mut digests: BTreeSet<String> = BTreeSet::new();
    if all || pattern.is_some() || filtered {
        let chosen = select(store, registry, pattern, selectors)?;
        refuse_running(registry, &chosen)?;
        for view in &chosen {
            if registry.remove_address(&view.address)? {
                removed_addresses += 1;
                digests.insert(view.key.rsplit('-').next().unwrap_or_default().to_string());
            }
        }
    }
    // Unaddressed entries go only with a plain --all.
    let every_entry = all && !filtered;
    let still_addressed: BTreeSet<String> = registry
        .addresses()?
        .into_iter()
        .map(|a| a.digest)
        .collect();
    let glob = name
        .map(glob::Pattern::new)
        .transpose()
        .map_err(CliError::usage)?;
    let report = store.clear(Clear::Matching(&|entry: &EntrySummary| {
        let chosen = every_entry
            || digests.contains(&entry.digest)
            || glob.as_ref().is_some_and(|g| g.matches(&entry.name));
        chosen && !still_addressed.contains(&entry.digest) && unpinned(registry, entry)
    }))?;
    // What a run record kept is still there.
    let mut kept = 0u64;
    for digest in &digests {
        if let Ok(d) = Digest::parse(digest)
            && store.summary_of(&d)?.is_some()
        {
            kept += 1;
        }
    }
    Ok(Reported {
        text: format!(
            "removed {removed_addresses} addresses and {} entries ({}); kept {kept} entries still referenced by a run record or another address\n",
            report.removed,
            super::cache_text::human_bytes(report.freed_bytes)
        ),
        json: serde_json::json!({
            "removed_addresses": removed_addresses,
            "removed_entries": report.removed,
            "freed_bytes": report.freed_bytes,
            "kept_entries": kept,
        }),
    })
}

pub fn adopt(store: &Store, registry: &Registry, run: &str) -> Result<Reported, CliError> {
    let lines = registry
        .run(run)?
        .ok_or_else(|| CliError::usage(anyhow!("no run {run} in this cache")))?;
    let (mut adopted, mut missing) = (0, Vec::new());
    for line in lines.iter().filter(|l| l.state != RunState::Conflict) {
        let address = Address::parse(&line.address).map_err(CliError::other)?;
        let digest = Digest::parse(&line.digest)?;
        match store.read_metadata(&digest)? {
            Some(meta) if meta.key == line.key => {
                registry.set_address(&address, line, run, &meta.ingredients)?;
                adopted += 1;
            }
            _ => missing.push(format!("{} ({})", line.address, line.key)),
        }
    }
    let json = serde_json::json!({ "run": run, "adopted": adopted, "missing": missing });
    let mut out = format!("adopted {adopted} addresses from run {run}\n");
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "{} artefacts are no longer in the cache:",
            missing.len()
        );
        for m in &missing {
            let _ = writeln!(out, "  {m}");
        }
    }
    Ok(Reported { text: out, json })
}
