//! The page's sections but the plots over time: each one's heading, then its cards, table or
//! plot.

use super::{code, count, empty, ms, num, section, table, text};
use crate::format::{bytes, escape, percent, rate};
use crate::model::{CauseGroup, Report};

pub(super) fn caches(out: &mut String, report: &Report) {
    section(
        out,
        "Caches read",
        "The cache directories whose lookup histories this report covers.",
    );
    if report.caches.is_empty() {
        return empty(out, "no cache was read");
    }
    let rows: Vec<Vec<String>> = report
        .caches
        .iter()
        .enumerate()
        .map(|(i, cache)| {
            vec![
                code(&format!("caches.{i}.dir"), &cache.dir),
                count(&format!("caches.{i}.events"), cache.events),
                count(
                    &format!("caches.{i}.unreadable_lines"),
                    cache.unreadable_lines,
                ),
                match cache.cache_size {
                    Some(size) => num(&format!("caches.{i}.cache_size"), size, &bytes(size)),
                    None => "unknown".to_string(),
                },
            ]
        })
        .collect();
    let columns = [
        ("directory", false),
        ("events", true),
        ("unreadable lines", true),
        ("size cap", true),
    ];
    table(out, &columns, &rows);
}

pub(super) fn headline(out: &mut String, report: &Report) {
    let totals = &report.totals;
    let card = |key: &str, value: String| {
        format!(
            "<div class=\"card\"><div class=\"k\">{}</div><div class=\"v\">{value}</div></div>",
            escape(key)
        )
    };
    out.push_str("<h2>Totals</h2>\n<div class=\"cards\">");
    out.push_str(&card("lookups", count("totals.lookups", totals.lookups)));
    out.push_str(&card("hits", count("totals.hits", totals.hits)));
    out.push_str(&card("misses", count("totals.misses", totals.misses)));
    out.push_str(&card(
        "hit rate",
        num(
            "totals.hit_rate",
            totals.hit_rate,
            &percent(totals.hit_rate),
        ),
    ));
    out.push_str(&card(
        "compile time spent",
        ms("totals.compile_ms_spent", totals.compile_ms_spent),
    ));
    out.push_str(&card(
        "compile time saved",
        ms("totals.compile_ms_saved", totals.compile_ms_saved),
    ));
    out.push_str("</div>\n");
    out.push_str(&format!(
        "<p class=\"minor\">Failures replayed: {}. Entries stored: {}. Evictions: {}.</p>\n",
        count("totals.failures_replayed", totals.failures_replayed),
        count("totals.puts", totals.puts),
        count("totals.evictions", totals.evictions),
    ));
    if totals.lookups == 0 {
        empty(out, "no lookups in this window");
    }
}

/// A list of strings of the report, each with its path.
fn list<'a>(path: &str, items: impl IntoIterator<Item = &'a String>, as_code: bool) -> String {
    let items: Vec<String> = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let path = format!("{path}.{i}");
            let shown = if as_code {
                code(&path, item)
            } else {
                text(&path, item)
            };
            format!("<li>{shown}</li>")
        })
        .collect();
    if items.is_empty() {
        return "–".to_string();
    }
    format!("<ul class=\"flat\">{}</ul>", items.concat())
}

fn cause_row(cause: &CauseGroup) -> Vec<String> {
    let at = |field: &str| format!("causes.{}.{field}", cause.cause);
    let details: Vec<String> = cause
        .details
        .iter()
        .enumerate()
        .map(|(i, detail)| {
            format!(
                "<li>{} ×{}</li>",
                text(&at(&format!("details.{i}.detail")), &detail.detail),
                count(&at(&format!("details.{i}.count")), detail.count)
            )
        })
        .collect();
    vec![
        format!(
            "{}<br><code data-field=\"{}\">{}</code>",
            text(&at("label"), &cause.label),
            escape(&at("cause")),
            escape(&cause.cause)
        ),
        count(&at("count"), cause.count),
        ms(&at("compile_ms_spent"), cause.compile_ms_spent),
        list(&at("hosts"), &cause.hosts, false),
        list(&at("example_keys"), &cause.example_keys, true),
        if details.is_empty() {
            "–".to_string()
        } else {
            format!("<ul class=\"flat\">{}</ul>", details.concat())
        },
    ]
}

pub(super) fn causes(out: &mut String, report: &Report) {
    section(
        out,
        "Misses by cause",
        "Why each miss compiled again, most frequent cause first.",
    );
    out.push_str(&super::svg::causes(&report.causes));
    if report.causes.is_empty() {
        return;
    }
    let columns = [
        ("cause", false),
        ("misses", true),
        ("compile time spent", true),
        ("hosts", false),
        ("example keys", false),
        ("what changed (most frequent)", false),
    ];
    let rows: Vec<Vec<String>> = report.causes.iter().map(cause_row).collect();
    table(out, &columns, &rows);
}

pub(super) fn modules(out: &mut String, report: &Report) {
    section(out, "Modules that miss most", "Most misses first.");
    if report.modules.is_empty() {
        return empty(out, "no module missed in this window");
    }
    let rows: Vec<Vec<String>> = report
        .modules
        .iter()
        .enumerate()
        .map(|(i, module)| {
            vec![
                code(&format!("modules.{i}.module"), &module.module),
                count(&format!("modules.{i}.misses"), module.misses),
                count(&format!("modules.{i}.hits"), module.hits),
                ms(
                    &format!("modules.{i}.compile_ms_spent"),
                    module.compile_ms_spent,
                ),
            ]
        })
        .collect();
    let columns = [
        ("module", false),
        ("misses", true),
        ("hits", true),
        ("compile time spent", true),
    ];
    table(out, &columns, &rows);
}

pub(super) fn hosts(out: &mut String, report: &Report) {
    section(out, "Hosts", "Lookups per host.");
    if report.hosts.is_empty() {
        return empty(out, "no host looked anything up in this window");
    }
    let rows: Vec<Vec<String>> = report
        .hosts
        .iter()
        .map(|host| {
            let at = |field: &str| format!("hosts.{}.{field}", host.host);
            vec![
                text(&at("host"), &host.host),
                count(&at("hits"), host.hits),
                count(&at("misses"), host.misses),
                // Not in the JSON (derived here), so no data-field.
                percent(rate(host.hits, host.misses)),
            ]
        })
        .collect();
    let columns = [
        ("host", false),
        ("hits", true),
        ("misses", true),
        ("hit rate", true),
    ];
    table(out, &columns, &rows);
}

pub(super) fn eviction(out: &mut String, report: &Report) {
    let churn = &report.eviction;
    section(
        out,
        "Eviction churn",
        "Entries evicted to keep a cache under its cap, and misses of entries evicted earlier.",
    );
    let keep = match churn.size_to_keep_them {
        Some(size) => num("eviction.size_to_keep_them", size, &bytes(size)),
        None => format!(
            "{} (nothing was compiled again)",
            num("eviction.size_to_keep_them", None::<u64>, "–")
        ),
    };
    let mut rows = vec![
        vec![
            "evictions".to_string(),
            count("eviction.evictions", churn.evictions),
        ],
        vec![
            "evicted bytes".to_string(),
            num(
                "eviction.evicted_bytes",
                churn.evicted_bytes,
                &bytes(churn.evicted_bytes),
            ),
        ],
        vec![
            "compiled again after eviction".to_string(),
            count(
                "eviction.recompiled_after_eviction",
                churn.recompiled_after_eviction,
            ),
        ],
        vec!["smallest cap that would have kept them".to_string(), keep],
    ];
    // How that cap compares with each cache's own, where known.
    if let Some(needed) = churn.size_to_keep_them {
        for (i, cache) in report.caches.iter().enumerate() {
            let Some(cap) = cache.cache_size else {
                continue;
            };
            let verdict = if needed > cap {
                format!("{:.1}× this cap", needed as f64 / cap.max(1) as f64)
            } else {
                "within this cap".to_string()
            };
            rows.push(vec![
                format!("cap of {}", code(&format!("caches.{i}.dir"), &cache.dir)),
                format!(
                    "{} ({verdict})",
                    num(&format!("caches.{i}.cache_size"), cap, &bytes(cap))
                ),
            ]);
        }
    }
    table(out, &[("what", false), ("how much", true)], &rows);
}

pub(super) fn tiers(out: &mut String, report: &Report) {
    section(
        out,
        "Remote tiers",
        "Each remote tier's answers to first look-ups, and its outages.",
    );
    out.push_str(&super::svg::tiers(&report.tiers));
    if report.tiers.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> = report
        .tiers
        .iter()
        .map(|tier| {
            let at = |field: &str| format!("tiers.{}.{field}", tier.tier);
            vec![
                text(&at("tier"), &tier.tier),
                count(&at("lookups"), tier.lookups),
                count(&at("hits"), tier.hits),
                count(&at("misses"), tier.misses),
                num(&at("hit_rate"), tier.hit_rate, &percent(tier.hit_rate)),
                count(&at("down"), tier.down),
                ms(&at("downtime_ms"), tier.downtime_ms),
                count(&at("outages"), tier.outages),
            ]
        })
        .collect();
    let columns = [
        ("tier", false),
        ("lookups", true),
        ("hits", true),
        ("misses", true),
        ("hit rate", true),
        ("down", true),
        ("downtime", true),
        ("outages", true),
    ];
    table(out, &columns, &rows);
}
