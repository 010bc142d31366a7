//! How the text and the page write text and numbers: HTML escaping, UTC times, durations, sizes, rates.

/// `text` made safe as HTML text and as a double- or single-quoted attribute value. Every
/// string of a report (module names, keys, hosts, details, tier names, directories) comes
/// from history files anyone sharing the cache can write, so all of them go through here.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// The proleptic Gregorian date of a day counted from 1970-01-01. Counting from 0000-03-01
/// puts the leap day last in its year, so each 400-year era (146 097 days) and each year in it
/// splits with plain integer arithmetic (no table, no loop over years: a hostile report may
/// hold any u64).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // 0000-03-01 is 719 468 days before 1970-01-01.
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    // Remove the leap days (one per 4 years, less one per 100, plus one per 400) before
    // dividing by 365; the last day of the era is the 400th year's leap day.
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    // Months from March alternate 31/30 days but for the February at the end: 153 days per
    // five months.
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = era * 400 + year_of_era + i64::from(month <= 2);
    (year, month as u32, day as u32)
}

/// Unix milliseconds as `(date, HH:MM)` in UTC.
fn utc_parts(ms: u64) -> ((i64, u32, u32), u32, u32) {
    const DAY_MS: u64 = 86_400_000;
    let date = civil_from_days((ms / DAY_MS) as i64);
    let minute_of_day = (ms % DAY_MS) / 60_000;
    (
        date,
        (minute_of_day / 60) as u32,
        (minute_of_day % 60) as u32,
    )
}

/// Unix milliseconds as `YYYY-MM-DD HH:MM` (UTC).
pub fn utc(ms: u64) -> String {
    let ((year, month, day), hour, minute) = utc_parts(ms);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}")
}

/// Unix milliseconds as `MM-DD HH:MM` (UTC): an axis label, where the year is in the title.
pub fn utc_short(ms: u64) -> String {
    let ((_, month, day), hour, minute) = utc_parts(ms);
    format!("{month:02}-{day:02} {hour:02}:{minute:02}")
}

/// Milliseconds in the largest units that keep it short: `850 ms`, `1.2 s`, `3 min 4 s`,
/// `2 h 5 min`, `3 d 4 h`; a zero second part is left out (`6 min`, as on an axis).
pub fn duration(ms: u64) -> String {
    if ms < 1_000 {
        return format!("{ms} ms");
    }
    // Tenths of a second, rounded, so that 59 960 ms reads `1 min`, not `60.0 s`.
    let tenths = ms / 100 + u64::from(ms % 100 >= 50);
    if tenths < 600 {
        return format!("{}.{} s", tenths / 10, tenths % 10);
    }
    // Rounded like the tenths above, so the two ranges meet.
    let seconds = ms / 1_000 + u64::from(ms % 1_000 >= 500);
    let (major, minor, units) = if seconds < 3_600 {
        (seconds / 60, seconds % 60, ["min", "s"])
    } else if seconds < 86_400 {
        (seconds / 3_600, seconds / 60 % 60, ["h", "min"])
    } else {
        (seconds / 86_400, seconds / 3_600 % 24, ["d", "h"])
    };
    match minor {
        0 => format!("{major} {}", units[0]),
        _ => format!("{major} {} {minor} {}", units[0], units[1]),
    }
}

/// Bytes in decimal units, as `cache stats` and `cache_size` write them: `512 B`, `58.0 kB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1000.0;
    let mut unit = 0;
    // 999.95 kB would print as 1000.0 kB: it is 1.0 MB.
    while value >= 999.95 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A rate in 0..=1 as a percentage; `–` when there is none (no lookups) or it is not a number.
pub fn percent(rate: Option<f64>) -> String {
    match rate {
        Some(rate) if rate.is_finite() => format!("{:.1} %", rate * 100.0),
        _ => "–".to_string(),
    }
}

/// hits / (hits + misses), none without either (never a division by zero).
pub fn rate(hits: u64, misses: u64) -> Option<f64> {
    let lookups = hits as f64 + misses as f64;
    (lookups > 0.0).then(|| hits as f64 / lookups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_neutralises_markup_and_quotes() {
        assert_eq!(
            escape(r#"<script>alert("x" + 'y')</script> & co"#),
            "&lt;script&gt;alert(&quot;x&quot; + &#39;y&#39;)&lt;/script&gt; &amp; co"
        );
        assert_eq!(escape("plain ✓ text"), "plain ✓ text");
        // Already-escaped text is escaped again: it is data, not markup.
        assert_eq!(escape("&amp;"), "&amp;amp;");
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00");
        // 2000-02-29 (a leap day of a year divisible by 400) 23:59:59.999.
        assert_eq!(utc(951_868_799_999), "2000-02-29 23:59");
        assert_eq!(utc(951_868_800_000), "2000-03-01 00:00");
        // 2100 is not a leap year.
        assert_eq!(utc(4_107_456_000_000), "2100-02-28 00:00");
        assert_eq!(utc(4_107_542_400_000), "2100-03-01 00:00");
        assert_eq!(utc(1_718_454_600_000), "2024-06-15 12:30");
        assert_eq!(utc(1_735_689_599_000), "2024-12-31 23:59");
        assert_eq!(utc_short(1_718_454_600_000), "06-15 12:30");
        // Any u64 formats, without overflow (a year near 584 million).
        assert!(utc(u64::MAX).starts_with("5845"), "{}", utc(u64::MAX));
    }

    #[test]
    fn durations() {
        assert_eq!(duration(0), "0 ms");
        assert_eq!(duration(999), "999 ms");
        assert_eq!(duration(1_000), "1.0 s");
        assert_eq!(duration(1_234), "1.2 s");
        assert_eq!(duration(59_940), "59.9 s");
        assert_eq!(duration(59_960), "1 min");
        assert_eq!(duration(184_000), "3 min 4 s");
        assert_eq!(duration(360_000), "6 min");
        assert_eq!(duration(3_599_600), "1 h");
        assert_eq!(duration(7_500_000), "2 h 5 min");
        assert_eq!(duration(273_600_000), "3 d 4 h");
        assert_eq!(duration(86_400_000), "1 d");
        assert!(duration(u64::MAX).ends_with(" h"));
    }

    #[test]
    fn sizes_and_rates() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(58_038), "58.0 kB");
        assert_eq!(bytes(100_000_000_000), "100.0 GB");
        assert!(bytes(u64::MAX).ends_with("EB"));
        assert_eq!(percent(Some(0.75)), "75.0 %");
        assert_eq!(percent(None), "–");
        assert_eq!(percent(Some(f64::NAN)), "–");
        assert_eq!(rate(0, 0), None);
        assert_eq!(rate(3, 1), Some(0.75));
    }
}
