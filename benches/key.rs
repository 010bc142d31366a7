//! Benchmark of the key path on the large corpus modules (issue: beat JAX).
//!
//! Measures, best and median of N runs, in one process:
//! - library path: `CanonicalModule::of` on the caller's module (in place:
//!   snapshot, kernels, strip) + streamed key + putting the module back, all
//!   inside the clock, as JAX's computation entry destroys its clone inside it;
//! - owned path: `CanonicalModule::from_owned` on a fresh parse + streamed key
//!   (what the CLI and the plugin do; the parse is outside the timing, and so
//!   is the module's teardown, which the CLI never does: it exits);
//! - digest only vs the full record with JAX's trace (the cost of `--explain`);
//! - peak extra memory of keying (streamed) vs materialising the bytes first.
//!
//! Run: `cargo bench --bench key -- [--runs N] [--json] MODULE...`
//! (bench/compare.sh runs it beside JAX's own key path).

use mlir_cache_key::canon::{CanonicalModule, Options};
use mlir_cache_key::key::{Computation, JaxRecipe, KeyInputs, compute};
use mlir_cache_key::mlir::{new_context, parse_module};
use std::io::Read;
use std::time::{Duration, Instant};

fn read_module(path: &str) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(raw.as_slice())
            .read_to_end(&mut text)
            .expect("gunzip");
        text
    } else {
        raw
    }
}

/// A `/proc/self/status` memory field (`VmHWM`: peak since the last reset,
/// `VmRSS`: now), in bytes (Linux).
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Returns freed heap to the OS, resets the peak-RSS counter (writing 5 to
/// clear_refs), then measures the peak above the current RSS while `f` runs.
fn peak_extra(f: impl FnOnce()) -> u64 {
    // SAFETY: malloc_trim only releases free memory.
    unsafe { libc::malloc_trim(0) };
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let base = status_bytes("VmRSS");
    f();
    status_bytes("VmHWM").saturating_sub(base)
}

struct Stats {
    best: Duration,
    median: Duration,
}

fn measure(runs: usize, mut f: impl FnMut() -> Duration) -> Stats {
    stats_of((0..runs).map(|_| f()).collect())
}

fn stats_of(mut times: Vec<Duration>) -> Stats {
    times.sort();
    Stats {
        best: times[0],
        median: times[times.len() / 2],
    }
}

/// Peak extra memory of one way of writing canonical bytes, measured in a
/// fresh process (this bench, re-run with `--peak MODE`) so earlier
/// allocations cannot hide it.
fn peak_in_child(path: &str, mode: &str) -> u64 {
    let output = std::process::Command::new(std::env::current_exe().expect("own path"))
        .args(["--peak", mode, path])
        .output()
        .expect("run peak child");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| {
            panic!(
                "peak child failed: {}",
                String::from_utf8_lossy(&output.stderr)
            )
        })
}

/// Child side of [`peak_in_child`]: parse and canonicalize (not measured),
/// then measure writing the canonical bytes one way.
fn peak_child(mode: &str, path: &str) {
    let source = read_module(path);
    let context = new_context();
    let module = parse_module(&context, &source, path).expect("parse");
    drop(source);
    let canonical = CanonicalModule::from_owned(module, &Options::default()).expect("canonicalize");
    let extra = peak_extra(|| match mode {
        "discard" => canonical
            .write(&mut |c| {
                std::hint::black_box(c);
            })
            .expect("write"),
        "streamed" => {
            canonical.digest().expect("digest");
        }
        _ => {
            let bytes = canonical.to_bytes().expect("bytes");
            use sha2::Digest;
            std::hint::black_box(sha2::Sha256::digest(&bytes));
        }
    });
    println!("{extra}");
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let mut args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("--peak") {
        return peak_child(&args[1], &args[2]);
    }
    let mut runs = 5;
    if let Some(i) = args.iter().position(|a| a == "--runs") {
        runs = args
            .get(i + 1)
            .and_then(|n| n.parse().ok())
            .expect("--runs N");
        args.drain(i..i + 2);
    }
    let json = args.iter().any(|a| a == "--json");
    args.retain(|a| a != "--json");
    if args.is_empty() {
        args.push(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/data/corpus/large/large_deep_ops.generic.mlir"
            )
            .to_string(),
        );
    }
    let options = Options::default();
    let inputs = KeyInputs {
        module_name: "bench".into(),
        compression: "zstandard".into(),
        ..KeyInputs::default()
    };
    let mut results = Vec::new();
    for path in &args {
        let source = read_module(path);
        let context = new_context();
        let mut module = parse_module(&context, &source, path).expect("parse");
        let key = |canonical: &CanonicalModule| {
            compute(
                Computation::Module {
                    module: canonical,
                    record_text: false,
                },
                &inputs,
                JaxRecipe::newest(),
            )
            .expect("key")
        };
        let library_path = measure(runs, || {
            let start = Instant::now();
            let canonical = CanonicalModule::of(&mut module, &options).expect("canonicalize");
            key(&canonical);
            // Putting the module back is inside the clock, as JAX's clone teardown is.
            drop(canonical);
            start.elapsed()
        });
        let owned_path = measure(runs, || {
            let fresh = parse_module(&context, &source, path).expect("parse");
            let start = Instant::now();
            let canonical = CanonicalModule::from_owned(fresh, &options).expect("canonicalize");
            key(&canonical);
            let elapsed = start.elapsed();
            // The CLI leaks its module at exit (`CanonicalModule::leak`); dropped here, untimed,
            // so that the runs do not pile up.
            drop(canonical);
            elapsed
        });
        let canonical = CanonicalModule::of(&mut module, &options).expect("canonicalize");
        // Alternate the two so drift and noise hit both alike; more runs,
        // since the difference (one SHA-256 pass) is small.
        let (mut plain, mut traced) = (Vec::new(), Vec::new());
        for _ in 0..runs * 4 {
            let start = Instant::now();
            canonical.digest().expect("digest");
            plain.push(start.elapsed());
            let start = Instant::now();
            key(&canonical);
            traced.push(start.elapsed());
        }
        let digest_only = stats_of(plain);
        let with_trace = stats_of(traced);
        let streamed_peak = peak_in_child(path, "streamed");
        let discard_peak = peak_in_child(path, "discard");
        let materialised_peak = peak_in_child(path, "materialised");
        let canonical_bytes = canonical.to_bytes().expect("bytes").len();
        results.push(serde_json::json!({
            "module": path,
            "canonical_bytes": canonical_bytes,
            "runs": runs,
            "library_path_ms": {"best": ms(library_path.best), "median": ms(library_path.median)},
            "owned_path_ms": {"best": ms(owned_path.best), "median": ms(owned_path.median)},
            "digest_only_ms": {"best": ms(digest_only.best), "median": ms(digest_only.median)},
            "key_with_trace_ms": {"best": ms(with_trace.best), "median": ms(with_trace.median)},
            "peak_extra_bytes": {"write_discarded": discard_peak, "streamed_key": streamed_peak, "materialised_bytes": materialised_peak},
        }));
        if !json {
            println!("{path} ({canonical_bytes} canonical bytes, best/median of {runs})");
            for (name, s) in [
                ("library path (put back)", &library_path),
                ("owned path (CLI, plugin)", &owned_path),
                ("digest only (no trace)", &digest_only),
                ("key with trace (--explain)", &with_trace),
            ] {
                println!(
                    "  {name:<28} {:>9.2} ms {:>9.2} ms",
                    ms(s.best),
                    ms(s.median)
                );
            }
            println!(
                "  trace overhead              {:>8.1} % (best vs best)",
                (ms(with_trace.best) / ms(digest_only.best) - 1.0) * 100.0
            );
            println!(
                "  peak extra memory           {discard_peak:>9} B writing to nowhere, {streamed_peak} B streamed into the key, {materialised_peak} B materialised then hashed"
            );
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&results).expect("json"));
    }
}
