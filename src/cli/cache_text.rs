//! `cache stats` and `cache entries` as text for people (`--json` prints the structs).

use super::output::utc;
use crate::store::{EntryState, EntrySummary, GcReport, RebuildReport, Stats};
use std::fmt::Write as _;

pub(super) fn stats_text(stats: &Stats) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "cache directory     {}{}",
        stats.cache_dir.display(),
        if stats.read_only { " (read-only)" } else { "" }
    );
    let _ = writeln!(
        out,
        "entries             {} ({} failed)",
        stats.entries, stats.failed_entries
    );
    let _ = writeln!(
        out,
        "size                {} of {} ({}%)",
        human_bytes(stats.bytes),
        human_bytes(stats.max_size),
        if stats.max_size == 0 {
            100.0
        } else {
            (stats.bytes as f64 * 1000.0 / stats.max_size as f64).round() / 10.0
        }
    );
    let _ = writeln!(out, "time to live        {} days", stats.ttl_days);
    let _ = writeln!(out, "hits / misses       {} / {}", stats.hits, stats.misses);
    let _ = writeln!(out, "direct hits         {}", stats.direct_hits);
    let _ = writeln!(
        out,
        "hit rate            {}",
        stats
            .hit_rate
            .map_or("-".to_owned(), |r| format!("{:.1}%", r * 100.0))
    );
    if !stats.miss_reasons.is_empty() {
        let reasons: Vec<String> = stats
            .miss_reasons
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(out, "misses by reason    {}", reasons.join(", "));
    }
    let _ = writeln!(
        out,
        "written             {} in {} entries",
        human_bytes(stats.bytes_written),
        stats.puts
    );
    if let Some(ms) = stats.zeroed_ms {
        let _ = writeln!(out, "counters zeroed     {}", utc(ms));
    }
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

pub(super) fn gc_text(r: &GcReport) -> String {
    let mut out = format!(
        "evicted {} entries ({}); {} in the cache now{}\n",
        r.eviction.evicted,
        human_bytes(r.eviction.freed_bytes),
        human_bytes(r.eviction.total_after),
        if r.eviction.over_cap_protected {
            " (still over the cap: the rest is within the time-to-live)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "removed {} stale temporary files, {} old quarantined files, {} unused lock files",
        r.tmp_removed, r.quarantine_removed, r.locks_removed
    );
    out
}

pub(super) fn verify_text(r: &RebuildReport) -> String {
    let mut out = format!(
        "checked {} entry files: {} valid, {} quarantined\n",
        r.checked, r.entries, r.quarantined
    );
    let _ = writeln!(
        out,
        "index: {} rows added, {} rows removed{}",
        r.rows_added,
        r.rows_removed,
        if r.index_recreated {
            ", recreated (it was unusable)"
        } else {
            ""
        }
    );
    out
}

/// A byte count in decimal units, as ccache prints them: `512 B`, `1.5 kB`, `100.0 GB`.
pub(super) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 999.95 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
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

#[cfg(test)]
mod tests {
    #[test]
    fn human_bytes() {
        use super::human_bytes as h;
        assert_eq!(h(0), "0 B");
        assert_eq!(h(999), "999 B");
        assert_eq!(h(1000), "1.0 kB");
        assert_eq!(h(1500), "1.5 kB");
        assert_eq!(h(100_000), "100.0 kB");
        assert_eq!(h(999_999), "1.0 MB");
        assert_eq!(h(100_000_000_000), "100.0 GB");
        assert_eq!(h(u64::MAX), "18.4 EB");
    }
}
