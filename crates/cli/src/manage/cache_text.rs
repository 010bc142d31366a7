//! `cache stats` (with a row per remote tier) and `cache entries` as text for people (`--json`
//! prints the structs).

use super::output::utc;
use mck_remote::CacheStats;
use mck_store::{EntryState, EntrySummary, GcReport, RebuildReport};
use std::fmt::Write as _;

pub(super) fn stats_text(all: &CacheStats) -> String {
    let (stats, remote) = (&all.local, &all.remote);
    let mut rows = vec![
        (
            "cache directory",
            format!(
                "{}{}",
                stats.cache_dir.display(),
                if stats.read_only { " (read-only)" } else { "" }
            ),
        ),
        (
            "entries",
            format!("{} ({} failed)", stats.entries, stats.failed_entries),
        ),
        (
            "size",
            format!(
                "{} of {} ({}%)",
                human_bytes(stats.bytes),
                human_bytes(stats.max_size),
                if stats.max_size == 0 {
                    100.0
                } else {
                    (stats.bytes as f64 * 1000.0 / stats.max_size as f64).round() / 10.0
                }
            ),
        ),
        ("time to live", format!("{} days", stats.ttl_days)),
        (
            "hits / misses",
            format!("{} / {}", stats.hits, stats.misses),
        ),
        ("direct hits", stats.direct_hits.to_string()),
        (
            "hit rate",
            stats
                .hit_rate
                .map_or("-".to_owned(), |r| format!("{:.1}%", r * 100.0)),
        ),
    ];
    if !stats.miss_reasons.is_empty() {
        let reasons: Vec<String> = stats
            .miss_reasons
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        rows.push(("misses by reason", reasons.join(", ")));
    }
    rows.push((
        "written",
        format!(
            "{} in {} entries",
            human_bytes(stats.bytes_written),
            stats.puts
        ),
    ));
    if let Some(ms) = stats.zeroed_ms {
        rows.push(("counters zeroed", utc(ms)));
    }
    rows.extend([
        ("failures replayed", stats.failures_replayed.to_string()),
        ("evictions", stats.evictions.to_string()),
        (
            "corrupt entries",
            format!(
                "{} ({} files in quarantine)",
                stats.corrupt, stats.quarantined_files
            ),
        ),
        (
            "remote",
            format!(
                "{}{}",
                remote.remote.as_deref().unwrap_or("none"),
                if remote.remote_read_only {
                    " (read-only)"
                } else {
                    ""
                }
            ),
        ),
    ]);
    if remote.remote.is_some() {
        rows.push((
            "remote values",
            if remote.remote_authenticated {
                "authenticated (HMAC-SHA-256, --remote-secret-file)"
            } else {
                "trusted (no --remote-secret-file: whoever can write to the remote is trusted)"
            }
            .to_owned(),
        ));
    }
    if let Some(until) = remote.remote_down_until_ms {
        rows.push(("remote down until", utc(until)));
    }
    rows.extend([
        (
            "remote hits/misses",
            format!("{} / {}", remote.remote_hits, remote.remote_misses),
        ),
        ("remote writes", remote.remote_writes.to_string()),
        (
            "remote fallbacks",
            format!(
                "{} ({} errors, {} skipped while down)",
                remote.remote_fallbacks, remote.remote_errors, remote.remote_skipped
            ),
        ),
        ("remote corrupt", remote.remote_corrupt.to_string()),
        (
            "remote bad MAC",
            format!(
                "{} (unauthenticated values refused)",
                remote.remote_unauthenticated
            ),
        ),
    ]);
    let a = &stats.audits;
    rows.push((
        "hit audits",
        format!(
            "{} ({} confirmed, {} false hits, {} nondeterministic)",
            a.run, a.confirmed, a.false_hits, a.nondeterministic
        ),
    ));
    let p = &stats.prefetch;
    if p.prefetched + p.wasted > 0 {
        rows.extend([
            (
                "prefetched",
                format!(
                    "{} ({}, {} ms loading)",
                    p.prefetched,
                    human_bytes(p.prefetched_bytes),
                    p.prefetched_ms
                ),
            ),
            (
                "prefetch used",
                format!(
                    "{} ({}, {} ms of loading taken off the critical path)",
                    p.used,
                    human_bytes(p.used_bytes),
                    p.used_ms
                ),
            ),
            (
                "prefetch wasted",
                format!(
                    "{} ({}, {} ms loading)",
                    p.wasted,
                    human_bytes(p.wasted_bytes),
                    p.wasted_ms
                ),
            ),
        ]);
    }
    let mut out = String::new();
    for (label, value) in rows {
        let _ = writeln!(out, "{label:<19} {value}");
    }
    if remote.remote.is_some() {
        tiers_text(remote, &mut out);
    }
    out
}

/// The chain's rows: which tier leases, then one row per tier, fastest first.
fn tiers_text(remote: &mck_remote::RemoteStats, out: &mut String) {
    let lease = match &remote.lease_tier {
        Some(tier) => format!("{tier} (one compile per key across hosts)"),
        None => "none (no tier of this chain leases: each host compiles a missing key itself)"
            .to_owned(),
    };
    let _ = writeln!(out, "{:<19} {lease}", "remote lease");
    for (i, t) in remote.tiers.iter().enumerate() {
        let mut marks = String::new();
        if t.read_only {
            marks.push_str(" (read-only)");
        }
        if let Some(until) = t.down_until_ms {
            let _ = write!(marks, " (down until {})", utc(until));
        }
        let _ = writeln!(
            out,
            "{:<19} {}{marks}: {} hits / {} misses, read {}, wrote {} ({} entries, {} backfills), {} errors, {} skipped",
            format!("tier {}", i + 1),
            t.url,
            t.hits,
            t.misses,
            human_bytes(t.bytes_read),
            human_bytes(t.bytes_written),
            t.writes,
            t.backfills,
            t.errors,
            t.skipped,
        );
    }
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
        "removed {} stale temporary files, {} old quarantined files, {} unused lock files, {} stale suspect marks, {} expired history files",
        r.tmp_removed,
        r.quarantine_removed,
        r.locks_removed,
        r.suspects_removed,
        r.history_files_removed
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

pub(super) use mck_report::format::bytes as human_bytes;

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
            match (e.state, &e.suspect) {
                (_, Some(_)) => "suspect",
                (EntryState::Ok, None) => "ok",
                (EntryState::Failed, None) => "failed",
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
