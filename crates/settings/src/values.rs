//! The parsers of settings' values: sizes as ccache writes them, days, seconds, octal modes,
//! log levels, what to do on cache errors. Each returns a message that says what was expected
//! and echoes what it got.
//!
//! SIZE is a byte count with an optional unit: `k`, `M`, `G`, `T` are decimal (×1000ⁿ), `Ki`,
//! `Mi`, `Gi`, `Ti` binary (×1024ⁿ); a trailing `B` and the letter case are ignored, a decimal
//! fraction is allowed (`1.5G`). `0` is a valid cap (evict all that the TTL does not protect).

use std::time::Duration;

use super::{CacheErrors, LogLevel};

const SECONDS_PER_DAY: f64 = 86_400.0;
const MAX_TTL_DAYS: f64 = 36_500.0;

/// Parses a size such as `100G`, `512Mi`, `1.5GB`, `1000000` (see the module doc).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "expected a byte count such as 100G, 512Mi or 1000000 (k/M/G/T decimal, Ki/Mi/Gi/Ti binary), got {text:?}"
        )
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
        return Err(bad());
    }
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit.strip_suffix('b').unwrap_or(&unit);
    let multiplier: u64 = match unit {
        "" => 1,
        "k" => 1_000,
        "m" => 1_000_000,
        "g" => 1_000_000_000,
        "t" => 1_000_000_000_000,
        "ki" => 1 << 10,
        "mi" => 1 << 20,
        "gi" => 1 << 30,
        "ti" => 1 << 40,
        _ => return Err(bad()),
    };
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if frac_part.contains('.') {
        return Err(bad());
    }
    let int: u64 = int_part.parse().map_err(|_| bad())?;
    let whole = int
        .checked_mul(multiplier)
        .ok_or_else(|| format!("{text:?} is larger than 2^64 bytes"))?;
    // The fraction, exactly in integers: frac_digits / 10^len * multiplier, rounded down.
    let mut frac_bytes: u128 = 0;
    if !frac_part.is_empty() {
        if frac_part.len() > 18 {
            return Err(bad());
        }
        let digits: u128 = frac_part.parse().map_err(|_| bad())?;
        let scale = 10u128.pow(u32::try_from(frac_part.len()).map_err(|_| bad())?);
        frac_bytes = digits * u128::from(multiplier) / scale;
    }
    let total = u128::from(whole) + frac_bytes;
    u64::try_from(total).map_err(|_| format!("{text:?} is larger than 2^64 bytes"))
}

/// Parses a TTL in days: a non-negative decimal number up to 36500.
pub fn parse_ttl_days(text: &str) -> Result<Duration, String> {
    let bad =
        || format!("expected a number of days between 0 and 36500 (e.g. 30 or 0.5), got {text:?}");
    let t = text.trim();
    if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    let days: f64 = t.parse().map_err(|_| bad())?;
    if !days.is_finite() || !(0.0..=MAX_TTL_DAYS).contains(&days) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(days * SECONDS_PER_DAY))
}

/// Parses a duration in seconds: a decimal number up to one day; zero only when `zero_ok`.
pub fn parse_seconds(text: &str, zero_ok: bool) -> Result<Duration, String> {
    let bad = || {
        format!(
            "expected a number of seconds {} and 86400 (e.g. 2 or 0.5), got {text:?}",
            if zero_ok {
                "between 0"
            } else {
                "above 0, up to"
            }
        )
    };
    let t = text.trim();
    if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    let secs: f64 = t.parse().map_err(|_| bad())?;
    if !secs.is_finite() || !(0.0..=86_400.0).contains(&secs) || (!zero_ok && secs < 0.001) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a wait in seconds: a decimal number from 0, without an upper bound (a wait beyond
/// what a `Duration` holds is the longest one: it saturates).
pub fn parse_wait(text: &str) -> Result<Duration, String> {
    let bad = || format!("expected a number of seconds, 0 or more (e.g. 600 or 0.5), got {text:?}");
    let t = text.trim();
    if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    if let Ok(whole) = t.parse::<u64>() {
        return Ok(Duration::from_secs(whole));
    }
    let secs: f64 = t.parse().map_err(|_| bad())?;
    if !secs.is_finite() {
        return Err(bad());
    }
    Ok(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
}

/// Parses `ERROR`, `WARNING` (or `WARN`), `INFO` or `DEBUG`, in any case: the one parser of
/// a log level, for the variable, the configuration file and the command line's `--log-level`.
pub fn parse_log_level(text: &str) -> Result<LogLevel, String> {
    match text.trim().to_ascii_uppercase().as_str() {
        "WARNING" | "WARN" => Ok(LogLevel::Warning),
        "INFO" => Ok(LogLevel::Info),
        "ERROR" => Ok(LogLevel::Error),
        "DEBUG" => Ok(LogLevel::Debug),
        _ => Err(format!(
            "expected ERROR, WARNING, INFO or DEBUG, got {text:?}"
        )),
    }
}

/// Parses `warn` or `fail`, in any case.
pub fn parse_cache_errors(text: &str) -> Result<CacheErrors, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "warn" => Ok(CacheErrors::Warn),
        "fail" => Ok(CacheErrors::Fail),
        _ => Err(format!("expected warn or fail, got {text:?}")),
    }
}

/// Parses an octal directory mode: owner must have rwx, others nothing (`0700`, `0750`, `0770`).
pub fn parse_dir_mode(text: &str) -> Result<u32, String> {
    let bad = || {
        format!(
            "expected an octal mode that gives the owner rwx and others nothing (0700, 0750, 0770), got {text:?}"
        )
    };
    let t = text.trim();
    let digits = t.strip_prefix("0o").unwrap_or(t);
    if digits.is_empty() || digits.len() > 4 {
        return Err(bad());
    }
    let mode = u32::from_str_radix(digits, 8).map_err(|_| bad())?;
    if mode > 0o777 || mode & 0o700 != 0o700 || mode & 0o007 != 0 {
        return Err(bad());
    }
    Ok(mode)
}

/// `rate` when it is a sampling rate, from 0 to 1 (NaN is not); the error echoes it.
pub fn check_rate(rate: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&rate) {
        Ok(rate)
    } else {
        Err(rate_error(&rate.to_string()))
    }
}

/// Parses a sampling rate written as text (the `verify_hits` setting, `--verify-hits`).
pub fn parse_rate(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(rate) => check_rate(rate).map_err(|_| rate_error(&format!("{text:?}"))),
        Err(_) => Err(rate_error(&format!("{text:?}"))),
    }
}

fn rate_error(shown: &str) -> String {
    format!("expected a rate between 0 and 1 (e.g. 0.01 or 1), got {shown}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits() {
        assert_eq!(parse_wait("600"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_wait("0"), Ok(Duration::ZERO));
        assert_eq!(parse_wait("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(
            parse_wait(&u64::MAX.to_string()),
            Ok(Duration::from_secs(u64::MAX))
        );
        assert_eq!(
            parse_wait(&format!("{}.5", "9".repeat(30))),
            Ok(Duration::MAX)
        );
        for bad in ["", "-1", "1e3", "ten", "1.2.3", "."] {
            assert!(parse_wait(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn sizes() {
        let cases = [
            ("0", 0),
            ("1000000", 1_000_000),
            ("10G", 10_000_000_000),
            ("10g", 10_000_000_000),
            ("10GB", 10_000_000_000),
            ("512M", 512_000_000),
            ("512Mi", 512 << 20),
            ("512MiB", 512 << 20),
            ("1.5G", 1_500_000_000),
            ("1.5Ki", 1536),
            ("2T", 2_000_000_000_000),
            ("3k", 3000),
            ("7B", 7),
        ];
        for (text, want) in cases {
            assert_eq!(parse_size(text), Ok(want), "{text}");
        }
        for bad in [
            "",
            "G",
            "-1",
            "1.2.3",
            "1.",
            ".5",
            "10X",
            "1e9",
            "99999999999999999999",
            "20000000000T",
            "1 0",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?} must be rejected");
        }
    }
}
