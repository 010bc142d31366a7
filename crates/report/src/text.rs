//! The report as text for a terminal: totals, then misses by cause, the modules that miss most,
//! hosts, eviction churn and remote tiers.

use std::fmt::Write as _;

use crate::format::{bytes, duration, percent, utc};
use crate::model::Report;

/// The report in lines of text.
pub fn text(report: &Report) -> String {
    let mut out = String::new();
    let t = &report.totals;
    let from = match report.since_ms {
        0 => "its whole history".to_owned(),
        since => format!("{} to {} (UTC)", utc(since), utc(report.until_ms)),
    };
    let _ = writeln!(
        out,
        "Report of {} cache{}, {from}",
        report.caches.len(),
        if report.caches.len() == 1 { "" } else { "s" },
    );
    for cache in &report.caches {
        let unreadable = match cache.unreadable_lines {
            0 => String::new(),
            n => format!(", {n} unreadable lines skipped"),
        };
        let _ = writeln!(out, "  {}: {} events{unreadable}", cache.dir, cache.events);
    }
    let _ = writeln!(
        out,
        "Lookups {}: hits {}, misses {}, failures replayed {}; hit rate {}",
        t.lookups,
        t.hits,
        t.misses,
        t.failures_replayed,
        percent(t.hit_rate)
    );
    let _ = writeln!(
        out,
        "Compile time spent {}, saved {}; entries stored {}, evicted {}",
        duration(t.compile_ms_spent),
        duration(t.compile_ms_saved),
        t.puts,
        t.evictions
    );
    if !report.causes.is_empty() {
        let _ = writeln!(out, "\nMisses by cause:");
    }
    for cause in &report.causes {
        let _ = writeln!(
            out,
            "  {:>6}  {} [{}] on {}; compile time {}",
            cause.count,
            cause.label,
            cause.cause,
            cause.hosts.join(", "),
            duration(cause.compile_ms_spent)
        );
        for detail in &cause.details {
            let _ = writeln!(out, "          {:>4}× {}", detail.count, detail.detail);
        }
        for key in &cause.example_keys {
            let _ = writeln!(out, "          e.g. {key}");
        }
    }
    if !report.modules.is_empty() {
        let _ = writeln!(out, "\nModules that miss most:");
    }
    for m in &report.modules {
        let _ = writeln!(
            out,
            "  {:>6} misses {:>6} hits  {} ({})",
            m.misses,
            m.hits,
            m.module,
            duration(m.compile_ms_spent)
        );
    }
    if report.hosts.len() > 1 {
        let _ = writeln!(out, "\nHosts:");
        for h in &report.hosts {
            let _ = writeln!(out, "  {}: {} hits, {} misses", h.host, h.hits, h.misses);
        }
    }
    let churn = &report.eviction;
    if churn.evictions > 0 || churn.recompiled_after_eviction > 0 {
        let _ = writeln!(
            out,
            "\nEvictions {} ({}); compiled again after eviction {}",
            churn.evictions,
            bytes(churn.evicted_bytes),
            churn.recompiled_after_eviction
        );
        if let Some(size) = churn.size_to_keep_them {
            let _ = writeln!(
                out,
                "  a cache_size of {} would have kept them",
                bytes(size)
            );
        }
        for cache in &report.caches {
            if let Some(cap) = cache.cache_size {
                let _ = writeln!(out, "  cache_size of {}: {}", cache.dir, bytes(cap));
            }
        }
    }
    if !report.tiers.is_empty() {
        let _ = writeln!(out, "\nRemote tiers:");
    }
    for tier in &report.tiers {
        let _ = writeln!(
            out,
            "  {}: {} lookups, hit rate {}, down {} ({} outages, {})",
            tier.tier,
            tier.lookups,
            percent(tier.hit_rate),
            tier.down,
            tier.outages,
            duration(tier.downtime_ms)
        );
    }
    out
}
