//! Diagnostics on stderr through `tracing`: `mlir-cache-key: warning: ...`.

use std::fmt;
use tracing::Level as TracingLevel;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Level {
    Error,
    #[value(alias = "warn")]
    Warning,
    Info,
    Debug,
}

impl From<crate::store::LogLevel> for Level {
    fn from(level: crate::store::LogLevel) -> Self {
        match level {
            crate::store::LogLevel::Error => Level::Error,
            crate::store::LogLevel::Warning => Level::Warning,
            crate::store::LogLevel::Info => Level::Info,
            crate::store::LogLevel::Debug => Level::Debug,
        }
    }
}

impl Level {
    fn tracing(self) -> TracingLevel {
        match self {
            Level::Error => TracingLevel::ERROR,
            Level::Warning => TracingLevel::WARN,
            Level::Info => TracingLevel::INFO,
            Level::Debug => TracingLevel::DEBUG,
        }
    }
}

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
pub fn init(level: Option<Level>) {
    let level = level.unwrap_or(Level::Warning).tracing();
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .event_format(Plain)
        .try_init();
}
