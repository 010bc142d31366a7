//! Diagnostics on stderr through `tracing`: `mlir-cache-key: warning: ...`.

use crate::settings::CacheOptions;
use mck_settings::LogLevel;
use std::fmt;
use std::io::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use tracing::Level as TracingLevel;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

struct Plain;

impl<S, N> FormatEvent<S, N> for Plain
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> fmt::Result {
        let level = match *event.metadata().level() {
            TracingLevel::ERROR => "error",
            TracingLevel::WARN => "warning",
            TracingLevel::INFO => "info",
            _ => "debug",
        };
        write!(writer, "mlir-cache-key: {level}: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// Installs the stderr logger at `level` (default: warnings and errors).
pub fn init(level: Option<LogLevel>) {
    let level = level.unwrap_or_default().as_tracing();
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .event_format(Plain)
        .try_init();
}

/// Installs a logger at `level` that keeps what it formats in memory: the front binary prints
/// only what belongs to the work it finishes (the MLIR binary it hands over to logs the rest).
pub fn init_buffered(level: Option<LogLevel>) -> Buffered {
    let buffer = Buffered::default();
    let level = level.unwrap_or_default().as_tracing();
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(buffer.clone())
        .event_format(Plain)
        .try_init();
    buffer
}

/// Formatted log lines, in order.
#[derive(Clone, Default)]
pub struct Buffered(Arc<Mutex<Vec<u8>>>);

impl Buffered {
    /// How many bytes were logged so far (a position for [`Buffered::print_from`]).
    pub fn position(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Writes what was logged from `position` on to stderr.
    pub fn print_from(&self, position: usize) {
        let lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = std::io::stderr().write_all(lines.get(position..).unwrap_or_default());
    }
}

impl std::io::Write for Buffered {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buffered {
    type Writer = Buffered;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// The log level of MLIR_CACHE_KEY_FLAGS or the configuration file, when set there (bad
/// settings are reported when the cache is opened).
pub fn flags_level(cache: Option<&CacheOptions>) -> Option<LogLevel> {
    let default = CacheOptions::default();
    let resolved = cache.unwrap_or(&default).resolved().ok()?;
    (resolved.sources.get("log_level") != Some(&mck_settings::Source::Default))
        .then_some(resolved.settings.log_level)
}
