//! Progress on stderr for long operations (`cache verify`, `cache gc`, `runs export|import`,
//! `key` of a big module): only when stderr is a terminal, never with `--json`, never when `CI`
//! is set, and only once the operation has run for a while (1 s; the variable
//! `MLIR_CACHE_KEY_PROGRESS_DELAY_MS` changes it, for tests).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal as _;
use std::time::Duration;

const DEFAULT_DELAY: Duration = Duration::from_secs(1);

/// A bar or spinner that appears after the delay, if progress may be shown at all.
pub struct Progress {
    bar: ProgressBar,
    /// Stops the thread that reveals the bar after the delay.
    stop: Option<std::sync::mpsc::Sender<()>>,
}

/// Whether progress may be drawn: stderr is a terminal, not `--json`, not CI.
pub fn enabled(json: bool) -> bool {
    !json && std::io::stderr().is_terminal() && std::env::var_os("CI").is_none()
}

fn delay() -> Duration {
    std::env::var("MLIR_CACHE_KEY_PROGRESS_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(DEFAULT_DELAY, Duration::from_millis)
}

impl Progress {
    /// A bar of `len` steps (settable later) with `message` before it.
    pub fn bar(message: &str, json: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(message.to_owned());
        Progress::reveal_later(bar, json)
    }

    /// A spinner with `message`, for work whose size is unknown.
    pub fn spinner(message: &str, json: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(message.to_owned());
        Progress::reveal_later(bar, json)
    }

    fn reveal_later(bar: ProgressBar, json: bool) -> Progress {
        if !enabled(json) {
            return Progress { bar, stop: None };
        }
        let delay = delay();
        if delay.is_zero() {
            // Shown at once, before any work: a short operation must not race the reveal.
            Progress::reveal(&bar);
            return Progress { bar, stop: None };
        }
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let shown = bar.clone();
        std::thread::spawn(move || {
            if stopped.recv_timeout(delay).is_err() && !shown.is_finished() {
                Progress::reveal(&shown);
            }
        });
        Progress {
            bar,
            stop: Some(stop),
        }
    }

    fn reveal(bar: &ProgressBar) {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.tick();
        bar.enable_steady_tick(Duration::from_millis(100));
    }

    /// `done` of `total` steps.
    pub fn set(&self, done: u64, total: u64) {
        self.bar.set_length(total);
        self.bar.set_position(done);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.bar.finish_and_clear();
    }
}
