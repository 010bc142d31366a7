//! The plots, drawn here as inline SVG (no script, no library, nothing fetched). Each is one
//! `<svg class="plot" id="plot-…">` of a fixed width that the page's CSS scales to fit; a plot
//! with nothing to show keeps its frame and says why, so the page's layout and ids stay.

use std::fmt::Write as _;

use super::plot::{
    Area, BAR_LEFT, BAR_WIDTH, ROW, Row, Scale, empty, legend, open, rows, x_labels, y_axis,
};
use super::{
    CAUSES_COLOUR, HIT_RATE_COLOUR, HITS_COLOUR, MISSES_COLOUR, SAVED_COLOUR, SPENT_COLOUR,
    TIERS_COLOUR, field_attrs,
};
use crate::format::{duration, percent, rate, utc};
use crate::model::{Bucket, CauseGroup, TierLine};

fn lookups(bucket: &Bucket) -> u64 {
    bucket.hits.saturating_add(bucket.misses)
}

/// What a bar or dot says on hover.
fn tooltip(bucket: &Bucket, what: &str) -> String {
    format!("<title>{} UTC: {what}</title>", utc(bucket.start_ms))
}

/// Hits and misses per bucket, stacked.
pub(super) fn timeline(buckets: &[Bucket]) -> String {
    const ID: &str = "plot-timeline";
    const LABEL: &str = "Lookups per time bucket: hits and misses";
    const HEIGHT: f64 = 250.0;
    if buckets.iter().all(|bucket| lookups(bucket) == 0) {
        return empty(ID, LABEL, "no lookups in this window");
    }
    let area = Area::over_time(HEIGHT);
    let max = buckets.iter().map(lookups).max().unwrap_or(0);
    let scale = Scale::new(max as f64, 1.0);
    let mut out = open(ID, LABEL, HEIGHT);
    y_axis(&mut out, &area, &scale, "lookups", |v| format!("{v}"));
    let slot = area.width / buckets.len() as f64;
    for (i, bucket) in buckets.iter().enumerate() {
        let x = area.left + slot * (i as f64 + 0.1);
        let hits_top = area.y(bucket.hits as f64, scale.top);
        let all_top = area.y(lookups(bucket) as f64, scale.top);
        let what = format!("{} hits, {} misses", bucket.hits, bucket.misses);
        let _ = write!(
            out,
            r#"<rect x="{x:.1}" y="{hits_top:.1}" width="{w:.1}" height="{:.1}" fill="{HITS_COLOUR}"{}>{tip}</rect><rect x="{x:.1}" y="{all_top:.1}" width="{w:.1}" height="{:.1}" fill="{MISSES_COLOUR}"{}>{tip}</rect>"#,
            area.bottom() - hits_top,
            field_attrs(&format!("timeline.{i}.hits"), bucket.hits),
            hits_top - all_top,
            field_attrs(&format!("timeline.{i}.misses"), bucket.misses),
            w = slot * 0.8,
            tip = tooltip(bucket, &what),
        );
    }
    x_labels(&mut out, &area, buckets);
    legend(
        &mut out,
        &area,
        &[(HITS_COLOUR, "hits"), (MISSES_COLOUR, "misses")],
    );
    out.push_str("</svg>");
    out
}

/// The hit rate of each bucket that had lookups: dots joined by a line.
pub(super) fn hit_rate(buckets: &[Bucket]) -> String {
    const ID: &str = "plot-hit-rate";
    const LABEL: &str = "Hit rate per time bucket";
    const HEIGHT: f64 = 180.0;
    let area = Area::over_time(HEIGHT);
    let slot = area.width / buckets.len().max(1) as f64;
    let points: Vec<(f64, f64, &Bucket, f64)> = buckets
        .iter()
        .enumerate()
        .filter_map(|(i, bucket)| {
            let rate = rate(bucket.hits, bucket.misses)?;
            let x = area.left + slot * (i as f64 + 0.5);
            Some((x, area.y(rate, 1.0), bucket, rate))
        })
        .collect();
    if points.is_empty() {
        return empty(ID, LABEL, "no lookups in this window");
    }
    let scale = Scale {
        top: 1.0,
        step: 0.5,
    };
    let mut out = open(ID, LABEL, HEIGHT);
    y_axis(&mut out, &area, &scale, "hit rate", |v| percent(Some(v)));
    let line: Vec<String> = points
        .iter()
        .map(|(x, y, _, _)| format!("{x:.1},{y:.1}"))
        .collect();
    let _ = write!(
        out,
        r#"<polyline points="{}" fill="none" stroke="{HIT_RATE_COLOUR}" stroke-width="2.5"/>"#,
        line.join(" ")
    );
    for (x, y, bucket, rate) in &points {
        let _ = write!(
            out,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="5" fill="{HIT_RATE_COLOUR}">{}</circle>"#,
            tooltip(bucket, &percent(Some(*rate)))
        );
    }
    x_labels(&mut out, &area, buckets);
    out.push_str("</svg>");
    out
}

/// Compile time spent by the misses and saved by the hits, side by side per bucket.
pub(super) fn compile_time(buckets: &[Bucket]) -> String {
    const ID: &str = "plot-compile-time";
    const LABEL: &str = "Compile time spent and saved per time bucket";
    const HEIGHT: f64 = 250.0;
    let max = buckets
        .iter()
        .map(|bucket| bucket.compile_ms_spent.max(bucket.compile_ms_saved))
        .max()
        .unwrap_or(0);
    if max == 0 {
        return empty(ID, LABEL, "no compile time recorded in this window");
    }
    let area = Area::over_time(HEIGHT);
    let scale = Scale::duration(max);
    let mut out = open(ID, LABEL, HEIGHT);
    y_axis(&mut out, &area, &scale, "compile time", |v| {
        duration(v as u64)
    });
    let slot = area.width / buckets.len() as f64;
    for (i, bucket) in buckets.iter().enumerate() {
        let series = [
            (
                0.1,
                bucket.compile_ms_spent,
                SPENT_COLOUR,
                "compile_ms_spent",
                "spent",
            ),
            (
                0.5,
                bucket.compile_ms_saved,
                SAVED_COLOUR,
                "compile_ms_saved",
                "saved",
            ),
        ];
        for (offset, ms, colour, name, what) in series {
            let y = area.y(ms as f64, scale.top);
            let _ = write!(
                out,
                r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{colour}"{}>{}</rect>"#,
                area.left + slot * (i as f64 + offset),
                slot * 0.4,
                area.bottom() - y,
                field_attrs(&format!("timeline.{i}.{name}"), ms),
                tooltip(bucket, &format!("{} {what}", duration(ms)))
            );
        }
    }
    x_labels(&mut out, &area, buckets);
    legend(
        &mut out,
        &area,
        &[
            (SPENT_COLOUR, "spent compiling (misses)"),
            (SAVED_COLOUR, "saved (hits)"),
        ],
    );
    out.push_str("</svg>");
    out
}

/// Misses per cause: one bar each, longest first (the report's order).
pub(super) fn causes(causes: &[CauseGroup]) -> String {
    const ID: &str = "plot-causes";
    const LABEL: &str = "Misses by cause";
    if causes.is_empty() {
        return empty(ID, LABEL, "no misses in this window");
    }
    let max = causes
        .iter()
        .map(|cause| cause.count)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let lines: Vec<Row> = causes
        .iter()
        .map(|cause| Row {
            name: &cause.label,
            share: Some(cause.count as f64 / max),
            value: cause.count.to_string(),
            value_attrs: field_attrs(&format!("causes.{}.count", cause.cause), cause.count),
        })
        .collect();
    let mut out = open(ID, LABEL, 24.0 + ROW * lines.len() as f64);
    rows(&mut out, &lines, CAUSES_COLOUR, false);
    out.push_str("</svg>");
    out
}

/// Each remote tier's hit rate, on a track of 100 %.
pub(super) fn tiers(tiers: &[TierLine]) -> String {
    const ID: &str = "plot-tiers";
    const LABEL: &str = "Hit rate of each remote tier";
    if tiers.is_empty() {
        return empty(ID, LABEL, "no remote tier answered in this window");
    }
    let lines: Vec<Row> = tiers
        .iter()
        .map(|tier| Row {
            name: &tier.tier,
            share: tier.hit_rate,
            value: percent(tier.hit_rate),
            value_attrs: field_attrs(&format!("tiers.{}.hit_rate", tier.tier), tier.hit_rate),
        })
        .collect();
    let height = 24.0 + ROW * lines.len() as f64 + 16.0;
    let mut out = open(ID, LABEL, height);
    rows(&mut out, &lines, TIERS_COLOUR, true);
    for (share, anchor) in [(0.0, "start"), (0.5, "middle"), (1.0, "end")] {
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="{anchor}" class="tick">{}</text>"#,
            BAR_LEFT + share * BAR_WIDTH,
            height - 8.0,
            percent(Some(share))
        );
    }
    out.push_str("</svg>");
    out
}
