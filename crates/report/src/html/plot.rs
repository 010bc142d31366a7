//! The drawing kit of the plots: their frame, scales, axes, legends and rows of bars, in SVG.

use std::fmt::Write as _;

use crate::format::{escape, utc_short};
use crate::model::Bucket;

/// About the page's width in pixels, so text in plots is drawn near its CSS size.
pub(super) const WIDTH: f64 = 1150.0;
const GRID: &str = "#e4e4e4";
const AXIS: &str = "#666";
/// Labels in the bar plots are cut to this many characters (the tables hold them whole).
const LABEL_CHARS: usize = 34;

/// Where the data go inside a plot.
pub(super) struct Area {
    pub(super) left: f64,
    pub(super) top: f64,
    pub(super) width: f64,
    pub(super) height: f64,
}

impl Area {
    /// The usual area of a plot over time: room for the y labels left and the x labels below.
    pub(super) fn over_time(height: f64) -> Area {
        Area {
            left: 96.0,
            top: 34.0,
            width: WIDTH - 96.0 - 16.0,
            height: height - 34.0 - 48.0,
        }
    }

    pub(super) fn bottom(&self) -> f64 {
        self.top + self.height
    }

    /// The y of `value` on a scale from 0 at the bottom to `top`.
    pub(super) fn y(&self, value: f64, top: f64) -> f64 {
        self.bottom() - value.clamp(0.0, top) / top * self.height
    }
}

/// A y scale from 0 to `top` in steps of 1, 2 or 5 times a power of ten: at most four steps.
pub(super) struct Scale {
    pub(super) top: f64,
    pub(super) step: f64,
}

impl Scale {
    pub(super) fn new(max: f64, min_step: f64) -> Scale {
        // Never a zero-height scale, whatever the data.
        let max = max.max(min_step);
        let raw = max / 4.0;
        let magnitude = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .into_iter()
            .map(|m| m * magnitude)
            .find(|step| *step >= raw)
            .unwrap_or(10.0 * magnitude)
            .max(min_step);
        Scale {
            top: (max / step).ceil() * step,
            step,
        }
    }

    /// A scale of milliseconds whose steps are round durations (`2 min`, not `2 min 40 s`).
    pub(super) fn duration(max_ms: u64) -> Scale {
        let raw = max_ms.max(1) as f64 / 4.0;
        match DURATION_STEPS_MS
            .into_iter()
            .find(|step| *step as f64 >= raw)
        {
            Some(step) => {
                let step = step as f64;
                Scale {
                    top: (max_ms.max(1) as f64 / step).ceil() * step,
                    step,
                }
            }
            // Beyond half a day: whole days, in steps of 1, 2 or 5 times a power of ten.
            None => Scale::new(max_ms as f64, 86_400_000.0),
        }
    }
}

/// Steps that read well as durations: 1-2-5 below a second, then the clock's own divisions.
const DURATION_STEPS_MS: [u64; 25] = [
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000,
    120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000,
];

/// The start tag of a plot: the page's CSS scales it to the page's width.
pub(super) fn open(id: &str, label: &str, height: f64) -> String {
    format!(
        r#"<svg class="plot" id="{id}" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" aria-label="{}">"#,
        escape(label)
    )
}

/// A plot with nothing to draw: a low frame that says why.
pub(super) fn empty(id: &str, label: &str, message: &str) -> String {
    const HEIGHT: f64 = 80.0;
    format!(
        r##"{}<rect x="0.5" y="0.5" width="{}" height="{}" fill="#fafafa" stroke="{GRID}"/><text x="{}" y="{}" text-anchor="middle" class="none">{}</text></svg>"##,
        open(id, label, HEIGHT),
        WIDTH - 1.0,
        HEIGHT - 1.0,
        WIDTH / 2.0,
        HEIGHT / 2.0 + 5.0,
        escape(message)
    )
}

/// Grid lines and labels of a y scale, its axis title, and the x axis line.
pub(super) fn y_axis(
    out: &mut String,
    area: &Area,
    scale: &Scale,
    title: &str,
    label: impl Fn(f64) -> String,
) {
    let steps = (scale.top / scale.step).round() as usize;
    for i in 0..=steps {
        let value = i as f64 * scale.step;
        let y = area.y(value, scale.top);
        let _ = write!(
            out,
            r#"<line x1="{:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{GRID}"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="tick">{}</text>"#,
            area.left,
            area.left + area.width,
            area.left - 6.0,
            y + 4.0,
            escape(&label(value))
        );
    }
    let _ = write!(
        out,
        r#"<line x1="{l:.1}" x2="{l:.1}" y1="{t:.1}" y2="{b:.1}" stroke="{AXIS}"/><line x1="{l:.1}" x2="{r:.1}" y1="{b:.1}" y2="{b:.1}" stroke="{AXIS}"/><text transform="translate(14,{c:.1}) rotate(-90)" text-anchor="middle" class="axis">{}</text>"#,
        escape(title),
        l = area.left,
        r = area.left + area.width,
        t = area.top,
        b = area.bottom(),
        c = area.top + area.height / 2.0,
    );
}

/// Bucket start times under the x axis (at most eight, evenly spaced) and the axis title.
pub(super) fn x_labels(out: &mut String, area: &Area, buckets: &[Bucket]) {
    let slot = area.width / buckets.len() as f64;
    let every = buckets.len().div_ceil(8).max(1);
    for (i, bucket) in buckets.iter().enumerate().step_by(every) {
        let x = area.left + slot * (i as f64 + 0.5);
        let _ = write!(
            out,
            r#"<line x1="{x:.1}" x2="{x:.1}" y1="{b:.1}" y2="{:.1}" stroke="{AXIS}"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" class="tick">{}</text>"#,
            area.bottom() + 4.0,
            area.bottom() + 17.0,
            utc_short(bucket.start_ms),
            b = area.bottom(),
        );
    }
    let _ = write!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="axis">bucket start (UTC)</text>"#,
        area.left + area.width / 2.0,
        area.bottom() + 38.0
    );
}

/// Colour swatches and names above the plot area, left to right.
pub(super) fn legend(out: &mut String, area: &Area, items: &[(&str, &str)]) {
    let mut x = area.left;
    let y = area.top - 22.0;
    for (colour, name) in items {
        let _ = write!(
            out,
            r#"<rect x="{x:.1}" y="{y:.1}" width="12" height="12" fill="{colour}"/><text x="{:.1}" y="{:.1}" class="legend">{}</text>"#,
            x + 17.0,
            y + 10.5,
            escape(name)
        );
        x += 17.0 + 7.5 * name.chars().count() as f64 + 22.0;
    }
}

/// `text` cut to `LABEL_CHARS` characters.
fn cut(text: &str) -> String {
    if text.chars().count() <= LABEL_CHARS {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(LABEL_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// Horizontal bars, one per row: a name on the left, a bar, and its value after it.
pub(super) struct Row<'a> {
    pub(super) name: &'a str,
    /// 0..=1 of the bar's full length; none draws no bar.
    pub(super) share: Option<f64>,
    /// The value written after the bar, with its data attributes.
    pub(super) value: String,
    pub(super) value_attrs: String,
}

/// A row's height; where its bar starts (its name is right-aligned before), and the length of a
/// full bar (its value is written after).
pub(super) const ROW: f64 = 30.0;
pub(super) const BAR_LEFT: f64 = 270.0;
pub(super) const BAR_WIDTH: f64 = WIDTH - BAR_LEFT - 110.0;

/// Draws `rows` from the top of the plot; `track` draws each bar's full length in grey behind
/// it (for shares of 100 %), and puts the values in a column after the tracks.
pub(super) fn rows(out: &mut String, rows: &[Row], colour: &str, track: bool) {
    for (i, row) in rows.iter().enumerate() {
        let y = 12.0 + ROW * i as f64;
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" class="name">{}<title>{}</title></text>"#,
            BAR_LEFT - 8.0,
            y + 15.0,
            escape(&cut(row.name)),
            escape(row.name)
        );
        if track {
            let _ = write!(
                out,
                r##"<rect x="{BAR_LEFT}" y="{y:.1}" width="{BAR_WIDTH}" height="20" fill="#eef1f2"/>"##
            );
        }
        let share = row.share.filter(|s| s.is_finite()).unwrap_or(0.0);
        let width = share.clamp(0.0, 1.0) * BAR_WIDTH;
        let _ = write!(
            out,
            r#"<rect x="{BAR_LEFT}" y="{y:.1}" width="{width:.1}" height="20" fill="{colour}"/><text x="{:.1}" y="{:.1}" class="value"{}>{}</text>"#,
            BAR_LEFT + if track { BAR_WIDTH } else { width } + 8.0,
            y + 15.0,
            row.value_attrs,
            escape(&row.value)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_are_round_and_never_empty() {
        let scale = Scale::new(0.0, 1.0);
        assert!(scale.top >= 1.0 && scale.step >= 1.0);
        let scale = Scale::new(37.0, 1.0);
        assert_eq!((scale.top, scale.step), (40.0, 10.0));
        let scale = Scale::new(3.0, 1.0);
        assert_eq!((scale.top, scale.step), (3.0, 1.0));
        let scale = Scale::new(u64::MAX as f64, 1.0);
        assert!(scale.top.is_finite() && scale.top >= u64::MAX as f64);
        let scale = Scale::duration(320_000);
        assert_eq!((scale.top, scale.step), (360_000.0, 120_000.0));
        let scale = Scale::duration(0);
        assert_eq!((scale.top, scale.step), (1.0, 1.0));
        let scale = Scale::duration(u64::MAX);
        assert!(scale.top >= u64::MAX as f64 && scale.step >= 86_400_000.0);
    }

    #[test]
    fn long_names_are_cut_in_plots() {
        assert_eq!(cut("short"), "short");
        let long = "x".repeat(100);
        assert_eq!(cut(&long).chars().count(), LABEL_CHARS);
    }
}
