//! `cache stats` and `cache entries` as text for people (`--json` prints the structs).

use super::output::utc;
use crate::store::{EntryState, EntrySummary, Stats};
use std::fmt::Write as _;

pub(super) fn stats_text(stats: &Stats) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "cache directory     {}", stats.cache_dir.display());
    let _ = writeln!(
        out,
        "entries             {} ({} failed)",
        stats.entries, stats.failed_entries
    );
    let _ = writeln!(
        out,
        "size                {} of {} bytes",
        stats.bytes, stats.max_size
    );
    let _ = writeln!(out, "time to live        {} days", stats.ttl_days);
    let _ = writeln!(out, "hits / misses       {} / {}", stats.hits, stats.misses);
    let _ = writeln!(out, "direct hits         {}", stats.direct_hits);
    let _ = writeln!(out, "failures replayed   {}", stats.failures_replayed);
    let _ = writeln!(out, "evictions           {}", stats.evictions);
    let _ = writeln!(
        out,
        "corrupt entries     {} ({} files in quarantine)",
        stats.corrupt, stats.quarantined_files
    );
    let _ = writeln!(
        out,
        "remote              {}{}",
        stats.remote.as_deref().unwrap_or("none"),
        if stats.remote_read_only {
            " (read-only)"
        } else {
            ""
        }
    );
    if stats.remote.is_some() {
        let _ = writeln!(
            out,
            "remote values       {}",
            if stats.remote_authenticated {
                "authenticated (HMAC-SHA-256, --remote-secret-file)"
            } else {
                "trusted (no --remote-secret-file: whoever can write to the remote is trusted)"
            }
        );
    }
    if let Some(until) = stats.remote_down_until_ms {
        let _ = writeln!(out, "remote down until   {}", utc(until));
    }
    let _ = writeln!(
        out,
        "remote hits/misses  {} / {}",
        stats.remote_hits, stats.remote_misses
    );
    let _ = writeln!(out, "remote writes       {}", stats.remote_writes);
    let _ = writeln!(
        out,
        "remote fallbacks    {} ({} errors, {} skipped while down)",
        stats.remote_fallbacks, stats.remote_errors, stats.remote_skipped
    );
    let _ = writeln!(out, "remote corrupt      {}", stats.remote_corrupt);
    let _ = writeln!(
        out,
        "remote bad MAC      {} (unauthenticated values refused)",
        stats.remote_unauthenticated
    );
    out
}

pub(super) fn table(entries: &[EntrySummary]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<7} {:>12}  {:<20}  key",
        "state", "bytes", "last used"
    );
    for e in entries {
        let _ = writeln!(
            out,
            "{:<7} {:>12}  {:<20}  {}",
            match e.state {
                EntryState::Ok => "ok",
                EntryState::Failed => "failed",
            },
            e.artefact_size,
            utc(e.last_used_ms),
            e.key
        );
    }
    out
}
