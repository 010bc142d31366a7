//! `runs status RUN`: a run's outcome at a glance, its open conflicts grouped into address
//! patterns, and the exact commands (with the cache options in force) that resolve them.

use super::output::utc;
use crate::error::CliError;
use anyhow::anyhow;
use mck_runs::address::{common_pattern, shape_of};
use mck_runs::{Address, Registry, RunEntry, RunState};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Conflicts that share a pattern.
#[derive(Debug, Serialize)]
pub struct ConflictGroup {
    pub pattern: String,
    pub addresses: Vec<String>,
    /// Commands that resolve the group, ready to paste.
    pub resolve: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct RunStatus {
    pub schema: u32,
    pub run: String,
    pub sealed: Option<String>,
    pub ok: usize,
    pub failed: usize,
    pub conflicts: Vec<ConflictGroup>,
}

/// The status of `run`; `cache_args` are the cache options to repeat in the commands.
pub fn status(registry: &Registry, run: &str, cache_args: &str) -> Result<RunStatus, CliError> {
    let lines = registry
        .run(run)?
        .ok_or_else(|| CliError::usage(anyhow!("no run {run} in this cache")))?;
    // The last line per address is its outcome (an overwrite follows its conflict line).
    let mut last: BTreeMap<&str, &RunEntry> = BTreeMap::new();
    for line in &lines {
        last.insert(&line.address, line);
    }
    let count = |state: RunState| last.values().filter(|l| l.state == state).count();
    let mut shapes: BTreeMap<String, Vec<Address>> = BTreeMap::new();
    for line in last.values().filter(|l| l.state == RunState::Conflict) {
        if let Ok(address) = Address::parse(&line.address) {
            shapes.entry(shape_of(&address)).or_default().push(address);
        }
    }
    let cache = if cache_args.is_empty() {
        String::new()
    } else {
        format!(" {cache_args}")
    };
    let quote = |text: &str| format!("'{}'", text.replace('\'', r"'\''"));
    let conflicts = shapes
        .into_values()
        .map(|addresses| {
            let pattern = common_pattern(&addresses)
                .map(|p| p.to_string())
                .unwrap_or_else(|| addresses[0].to_string());
            ConflictGroup {
                resolve: vec![
                    format!(
                        "mlir-cache-key cache clear{cache} {} --conflicts-in {run}   # then rerun: it resumes",
                        quote(&pattern)
                    ),
                    format!(
                        "rerun the step with --run NEW_RUN --overwrite-cache-conflicts   # keep the new results"
                    ),
                ],
                pattern,
                addresses: addresses.iter().map(ToString::to_string).collect(),
            }
        })
        .collect();
    Ok(RunStatus {
        schema: 1,
        run: run.to_string(),
        sealed: registry.sealed_at(run)?.map(utc),
        ok: count(RunState::Ok),
        failed: count(RunState::Failed),
        conflicts,
    })
}

pub fn text(status: &RunStatus) -> String {
    let mut out = format!(
        "run {}: {} ok, {} failed, {} conflicts ({})\n",
        status.run,
        status.ok,
        status.failed,
        status
            .conflicts
            .iter()
            .map(|g| g.addresses.len())
            .sum::<usize>(),
        status
            .sealed
            .as_ref()
            .map_or("open".to_string(), |t| format!("closed {t}"))
    );
    for group in &status.conflicts {
        let _ = writeln!(
            out,
            "\nconflicts at {} ({} address{}):",
            group.pattern,
            group.addresses.len(),
            if group.addresses.len() == 1 { "" } else { "es" }
        );
        for address in &group.addresses {
            let _ = writeln!(out, "  {address}");
        }
        let _ = writeln!(out, "to resolve:");
        for command in &group.resolve {
            let _ = writeln!(out, "  {command}");
        }
    }
    out
}
