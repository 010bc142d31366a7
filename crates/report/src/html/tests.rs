//! The page's promises: report text is escaped, an empty report renders, every total is
//! tagged with its JSON path and value, and nothing points outside the page.

use super::html;
use crate::model::{
    Bucket, CacheSource, CauseGroup, Churn, DetailCount, HostLine, ModuleLine, REPORT_SCHEMA,
    Report, TierLine, Totals,
};

const HOSTILE: &str = r#"<script>alert("pwned")</script>&'x'<img src=x onerror=alert(1)>"#;
use super::PLOT_IDS;

fn sample() -> Report {
    Report {
        schema: REPORT_SCHEMA.to_string(),
        since_ms: 1_718_409_600_000,
        until_ms: 1_718_424_000_000,
        caches: vec![CacheSource {
            dir: "/var/cache/mck".to_string(),
            events: 40,
            unreadable_lines: 1,
            cache_size: Some(1 << 30),
        }],
        totals: Totals {
            lookups: 31,
            hits: 20,
            misses: 10,
            failures_replayed: 1,
            hit_rate: Some(20.0 / 30.0),
            puts: 10,
            evictions: 3,
            compile_ms_spent: 184_000,
            compile_ms_saved: 1_234,
        },
        timeline: vec![
            Bucket {
                start_ms: 1_718_409_600_000,
                hits: 15,
                misses: 2,
                compile_ms_spent: 4_000,
                compile_ms_saved: 900,
            },
            Bucket {
                start_ms: 1_718_413_200_000,
                hits: 5,
                misses: 8,
                compile_ms_spent: 180_000,
                compile_ms_saved: 334,
            },
        ],
        causes: vec![CauseGroup {
            cause: "xla_flag".to_string(),
            label: "an XLA flag changed".to_string(),
            count: 10,
            hosts: vec!["ci-1".to_string()],
            example_keys: vec!["train_step-0123abcd".to_string()],
            details: vec![DetailCount {
                detail: "--xla_gpu_autotune_level 4 → 2".to_string(),
                count: 10,
            }],
            compile_ms_spent: 184_000,
        }],
        modules: vec![ModuleLine {
            module: "train_step".to_string(),
            misses: 10,
            hits: 20,
            compile_ms_spent: 184_000,
        }],
        hosts: vec![HostLine {
            host: "ci-1".to_string(),
            hits: 20,
            misses: 10,
        }],
        eviction: Churn {
            evictions: 3,
            evicted_bytes: 3 << 20,
            recompiled_after_eviction: 0,
            size_to_keep_them: None,
        },
        tiers: vec![TierLine {
            tier: "redis".to_string(),
            lookups: 10,
            hits: 4,
            misses: 5,
            down: 1,
            hit_rate: Some(0.4),
            downtime_ms: 2_500,
            outages: 1,
        }],
    }
}

/// Every string of the report set to `text`.
fn hostile() -> Report {
    let mut report = sample();
    report.caches[0].dir = HOSTILE.to_string();
    let cause = &mut report.causes[0];
    cause.cause = HOSTILE.to_string();
    cause.label = HOSTILE.to_string();
    cause.hosts = vec![HOSTILE.to_string()];
    cause.example_keys = vec![HOSTILE.to_string()];
    cause.details[0].detail = HOSTILE.to_string();
    report.modules[0].module = HOSTILE.to_string();
    report.hosts[0].host = HOSTILE.to_string();
    report.tiers[0].tier = HOSTILE.to_string();
    report
}

#[test]
fn hostile_names_are_escaped() {
    let page = html(&hostile());
    assert!(!page.contains("<script"), "{page}");
    assert!(!page.contains("<img"), "{page}");
    assert!(!page.contains(HOSTILE));
    let escaped = "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;&amp;&#39;x&#39;\
                   &lt;img src=x onerror=alert(1)&gt;";
    // Shown as text wherever the report had it (and quoted safely inside attributes).
    assert!(page.matches(escaped).count() >= 9, "{page}");
    assert!(page.contains(&format!("data-field=\"tiers.{escaped}.hits\"")));
    // No quote of the report's ends an attribute early: each tag's quotes pair up.
    for tag in page.split('<').skip(1) {
        let tag = tag.split('>').next().unwrap_or("");
        assert_eq!(
            tag.matches('"').count() % 2,
            0,
            "unbalanced quotes in <{tag}>"
        );
    }
}

#[test]
fn empty_report_renders_cleanly() {
    let page = html(&Report::default());
    assert!(page.contains("no lookups in this window"));
    for bad in ["NaN", "inf", "undefined"] {
        assert!(!page.contains(bad), "{bad} in {page}");
    }
    assert!(page.contains(r#"data-field="totals.hit_rate" data-value="null""#));
    for id in PLOT_IDS {
        assert!(
            page.contains(&format!(r#"<svg class="plot" id="{id}""#)),
            "{id}"
        );
    }
    assert!(page.trim_end().ends_with("</html>"));
}

#[test]
fn extreme_values_render() {
    let mut report = sample();
    report.totals.hit_rate = Some(f64::NAN);
    report.tiers[0].hit_rate = Some(f64::INFINITY);
    report.timeline[0].hits = u64::MAX;
    report.timeline[0].compile_ms_spent = u64::MAX;
    report.causes[0].count = u64::MAX;
    report.since_ms = u64::MAX;
    let page = html(&report);
    assert!(!page.contains("NaN"), "{page}");
    assert!(page.contains(r#"data-field="totals.hit_rate" data-value="null""#));
}

#[test]
fn every_total_appears_with_its_field() {
    let report = sample();
    let page = html(&report);
    // From the JSON itself, so a total added to the schema but not to the page fails here.
    let totals = serde_json::to_value(&report.totals).unwrap();
    let totals = totals.as_object().unwrap();
    assert_eq!(totals.len(), 9);
    for (name, value) in totals {
        let tagged = format!(r#"data-field="totals.{name}" data-value="{value}""#);
        assert!(page.contains(&tagged), "missing {tagged}");
    }
    for tagged in [
        r#"data-field="causes.xla_flag.count" data-value="10""#,
        r#"data-field="tiers.redis.hits" data-value="4""#,
        r#"data-field="tiers.redis.hit_rate" data-value="0.4""#,
        r#"data-field="timeline.1.misses" data-value="8""#,
        r#"data-field="eviction.size_to_keep_them" data-value="null""#,
        r#"data-field="since_ms" data-value="1718409600000""#,
    ] {
        assert!(page.contains(tagged), "missing {tagged}");
    }
    // Shown in words too.
    assert!(page.contains("3 min 4 s"));
    assert!(page.contains("1.2 s"));
    assert!(page.contains("2024-06-15 00:00"));
    assert!(page.contains("66.7 %"));
}

#[test]
fn nothing_points_outside_the_page() {
    for page in [html(&sample()), html(&Report::default())] {
        let lower = page.to_lowercase();
        for bad in [
            "http", "src=", "href=", "url(", "@import", "<script", "<link", "<img",
        ] {
            assert!(!lower.contains(bad), "{bad} in the page");
        }
        for id in PLOT_IDS {
            assert!(
                page.contains(&format!(r#"<svg class="plot" id="{id}""#)),
                "{id}"
            );
        }
    }
}
