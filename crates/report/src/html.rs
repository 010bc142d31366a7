//! The report as one self-contained HTML page: inline CSS, plots as inline SVG, no script, and
//! nothing to fetch (it is read from CI artifacts and mail, often offline or sandboxed).
//!
//! Every number (and name) the page shows that is also in the JSON sits in an element with
//! `data-field="<path>"`, and numbers also carry `data-value="<the JSON value>"` (a string's
//! value is the element's text), so a script can check the page against the report. The path is
//! the JSON's, dot-separated, with the item's name in place of the index where the items are
//! named (`causes.<cause>.count`, `hosts.<host>.hits`, `tiers.<tier>.hit_rate`) and the index
//! elsewhere (`timeline.3.hits`, `modules.0.misses`, `caches.1.events`,
//! `causes.<cause>.details.0.count`). Cause codes hold no dot; host and tier names may, so
//! their paths end in exactly one field after the name.

mod plot;
mod sections;
mod svg;
#[cfg(test)]
mod tests;

use serde::Serialize;

use crate::format::{duration, escape, utc};
use crate::model::Report;
use sections::{caches, causes, eviction, headline, hosts, modules, tiers};

/// The `id` of each plot (`<svg class="plot">`), in page order.
pub const PLOT_IDS: [&str; 5] = [
    "plot-timeline",
    "plot-hit-rate",
    "plot-compile-time",
    "plot-causes",
    "plot-tiers",
];

/// The plots' colours (the Chromium test looks for them in a screenshot).
pub const HITS_COLOUR: &str = "#2e7d32";
pub const MISSES_COLOUR: &str = "#c62828";
pub const HIT_RATE_COLOUR: &str = "#6a1b9a";
pub const SPENT_COLOUR: &str = "#ef6c00";
pub const SAVED_COLOUR: &str = "#1565c0";
pub const CAUSES_COLOUR: &str = "#ad1457";
pub const TIERS_COLOUR: &str = "#00838f";

const STYLE: &str = "
body{margin:0;background:#fff;color:#222;font:15px/1.45 system-ui,'DejaVu Sans',sans-serif}
main{max-width:1150px;margin:0 auto;padding:20px 24px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:19px;margin:26px 0 6px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555;margin:2px 0}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:18px 0 6px}
.card{border:1px solid #ddd;border-radius:6px;padding:10px 14px;min-width:130px}
.card .k{color:#555;font-size:13px}
.card .v{font-size:24px;font-weight:600}
.minor{color:#555;font-size:14px;margin:4px 0}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:0 32px}
@media (max-width:800px){.pair{display:block}}
.none{fill:#777;font-size:16px}
.empty{color:#777;font-style:italic}
svg.plot{display:block;width:100%;height:auto;margin:6px 0;font-size:13px}
svg .tick{fill:#444;font-size:12px}
svg .axis{fill:#333;font-size:13px}
svg .legend,svg .name,svg .value{fill:#222;font-size:13px}
table{border-collapse:collapse;margin:8px 0;width:100%}
th,td{border-bottom:1px solid #e4e4e4;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f5;font-weight:600}
td.n,th.n{text-align:right;white-space:nowrap}
code{font-size:13px;word-break:break-all}
ul.flat{margin:0;padding-left:16px}
";

/// The report as a self-contained HTML page.
pub fn html(report: &Report) -> String {
    // `--since all` asks from the epoch: the page says so rather than show 1970.
    let since = match report.since_ms {
        0 => "all history".to_owned(),
        ms => utc(ms),
    };
    let window = format!("{since} – {} UTC", utc(report.until_ms));
    let mut out = String::with_capacity(64 * 1024);
    out.push_str(&format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Compilation cache report, {}</title><style>{STYLE}</style></head><body><main>\n",
        escape(&window)
    ));
    out.push_str(&format!(
        "<h1>Compilation cache report</h1>\n<p class=\"sub\">Window: {} – {} UTC</p>\n",
        num("since_ms", report.since_ms, &since),
        num("until_ms", report.until_ms, &utc(report.until_ms)),
    ));
    caches(&mut out, report);
    headline(&mut out, report);

    section(
        &mut out,
        "Lookups over time",
        "Hits and misses in each time bucket.",
    );
    out.push_str(&svg::timeline(&report.timeline));
    section(
        &mut out,
        "Hit rate over time",
        "Hits ÷ (hits + misses) in each bucket that had lookups.",
    );
    out.push_str(&svg::hit_rate(&report.timeline));
    section(
        &mut out,
        "Compile time spent and saved",
        "Time the misses spent compiling, and the compile time the hits saved, per bucket.",
    );
    out.push_str(&svg::compile_time(&report.timeline));

    causes(&mut out, report);
    modules(&mut out, report);
    // Two short tables: side by side on a wide screen.
    out.push_str("<div class=\"pair\"><div>");
    hosts(&mut out, report);
    out.push_str("</div><div>");
    eviction(&mut out, report);
    out.push_str("</div></div>\n");
    tiers(&mut out, report);

    out.push_str(&format!(
        "<p class=\"minor\">Report schema {}; made by mlir-cache-key from the caches' lookup histories.</p>\n</main></body></html>\n",
        text("schema", &report.schema)
    ));
    out
}

/// ` data-field="…" data-value="…"`: the attributes that tie a shown number to the JSON.
fn field_attrs(path: &str, value: impl Serialize) -> String {
    // Only numbers, options of numbers and strings come here: serialising them cannot fail.
    let json = serde_json::to_string(&value).unwrap_or_else(|_| "null".to_string());
    format!(
        " data-field=\"{}\" data-value=\"{}\"",
        escape(path),
        escape(&json)
    )
}

/// A number of the report, shown as `shown`.
fn num(path: &str, value: impl Serialize, shown: &str) -> String {
    format!("<span{}>{}</span>", field_attrs(path, value), escape(shown))
}

fn count(path: &str, value: u64) -> String {
    num(path, value, &value.to_string())
}

fn ms(path: &str, value: u64) -> String {
    num(path, value, &duration(value))
}

/// A string of the report: the element's text is the value.
fn text(path: &str, value: &str) -> String {
    format!(
        "<span data-field=\"{}\">{}</span>",
        escape(path),
        escape(value)
    )
}

/// Like [`text`], as code (keys, module names, directories).
fn code(path: &str, value: &str) -> String {
    format!(
        "<code data-field=\"{}\">{}</code>",
        escape(path),
        escape(value)
    )
}

fn section(out: &mut String, title: &str, what: &str) {
    out.push_str(&format!(
        "<h2>{}</h2>\n<p class=\"minor\">{}</p>\n",
        escape(title),
        escape(what)
    ));
}

/// A table: headers (`true` for a numeric, right-aligned column) and rows of cells' HTML.
fn table(out: &mut String, columns: &[(&str, bool)], rows: &[Vec<String>]) {
    let class = |numeric: bool| if numeric { " class=\"n\"" } else { "" };
    out.push_str("<table><thead><tr>");
    for (name, numeric) in columns {
        out.push_str(&format!("<th{}>{}</th>", class(*numeric), escape(name)));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for (cell, (_, numeric)) in row.iter().zip(columns) {
            out.push_str(&format!("<td{}>{cell}</td>", class(*numeric)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
}

fn empty(out: &mut String, message: &str) {
    out.push_str(&format!("<p class=\"empty\">{}</p>\n", escape(message)));
}
