//! Byte mutations of real bytecode through `mlir-cache-key key`: no input may
//! crash it (a signal, an abort, a panic) or keep it running past its bound.
//!
//! CI runs 2,000 mutations; `scripts/fuzz-key.sh` runs the campaign
//! (`MCK_FUZZ_MUTATIONS=100000`). A mutant our reader rejects is checked
//! in-process with the same `validate` that `key` runs before MLIR sees
//! anything (and one in 50 of them through `key` too, to keep that claim
//! honest); every other mutant runs through `key`, as a process.
//!
//! Environment: `MCK_FUZZ_MUTATIONS` (2000), `MCK_FUZZ_SEED` (1),
//! `MCK_FUZZ_JOBS` (2), `MCK_FUZZ_OUT` (where failing mutants are saved, and
//! those MLIR crashed or hung on in `key`'s child process),
//! `MCK_FUZZ_BIN` (the binary to fuzz) with `MCK_FUZZ_BASELINE=1` to run
//! every mutant through a binary that predates the validation (how the
//! harness was shown to fail: 9 of 3,000 crashed or hung it).

use crate::common::{self, bin, corpus, data};
use mlir_cache_key::bytecode::validate;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What the harness allows `key` beyond its own `--parse-timeout`.
const KILL_AFTER: Duration = Duration::from_secs(60);
const PARSE_TIMEOUT: &str = "5";

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Real bytecode: corpus modules written by `canon --keep-locations`, and
/// the kernel payloads (Triton v6, Mosaic v0).
fn seeds(dir: &Path) -> Vec<Vec<u8>> {
    let modules = [
        "cpu/mlp.a.generic.mlir",
        "cpu/conv.a.generic.mlir",
        "cpu/scan_loop.a.generic.mlir",
        "gpu/cuda_pallas_triton_add.a.generic.mlir",
        "tpu/tpu_pallas_add.a.generic.mlir",
    ];
    let mut seeds: Vec<Vec<u8>> = modules
        .iter()
        .map(|m| {
            let canon = &mut bin();
            canon.args(["canon", "--keep-locations"]);
            common::written(canon, &corpus(m), &dir.join("seed.mlirbc"))
        })
        .collect();
    for k in [
        "kernels/triton_add.a.mlirbc",
        "corpus/tpu/tpu_pallas_add.a.kernel0.body.mlirbc",
    ] {
        seeds.push(std::fs::read(data(k)).expect("kernel seed"));
    }
    seeds
}

/// One to four byte-level edits: flips, random and boundary bytes, inserts,
/// deletions, and copies of a run from elsewhere.
fn mutate(seed: &[u8], rng: &mut StdRng) -> Vec<u8> {
    let mut d = seed.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        let p = rng.gen_range(0..d.len());
        match rng.gen_range(0..6) {
            0 => d[p] ^= 1 << rng.gen_range(0..8),
            1 => d[p] = rng.r#gen(),
            2 => d[p] = [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff][rng.gen_range(0..6)],
            3 => d.insert(p, rng.r#gen()),
            4 if d.len() > 8 => {
                d.remove(p);
            }
            _ => {
                let len = rng.gen_range(1..=8).min(d.len() - p);
                let from = rng.gen_range(0..=d.len() - len);
                let run = d[from..from + len].to_vec();
                d[p..p + len].copy_from_slice(&run);
            }
        }
    }
    d
}

#[derive(Debug, Default)]
struct Tally {
    rejected_in_process: usize,
    spawned: usize,
    accepted: usize,
    rejected_by_key: usize,
    /// MLIR crashed or hung in the child, and `key` reported it.
    contained: Vec<String>,
    failures: Vec<String>,
}

/// How one run of `key` ended.
enum Verdict {
    Keyed,
    /// Exit 3; `contained` when it was MLIR crashing or hanging in the child.
    Refused {
        contained: bool,
    },
    Failure(String),
}

/// Runs `key FILE`; a run past [`KILL_AFTER`] is a hang.
fn run_key(binary: &Path, file: &Path, baseline: bool, rejected: bool) -> (Verdict, String) {
    let mut command = Command::new(binary);
    command.env_remove("MLIR_CACHE_KEY_FLAGS").arg("key");
    if !baseline {
        command.args(["--parse-timeout", PARSE_TIMEOUT]);
    }
    let mut child = command
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn key");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > KILL_AFTER {
            let _ = child.kill();
            let _ = child.wait();
            return (Verdict::Failure("hang".into()), String::new());
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let mut stderr = String::new();
    let _ = child
        .stderr
        .take()
        .map(|mut e| e.read_to_string(&mut stderr));
    let stderr = stderr.trim_end().to_string();
    let verdict = match status.code() {
        // A binary that predates validation may key what our reader rejects.
        Some(0) if !rejected || baseline => Verdict::Keyed,
        Some(common::EX_DATAERR)
            if rejected && !baseline && !stderr.contains("malformed MLIR bytecode") =>
        {
            Verdict::Failure(format!("rejected in-process but not by key: {stderr}"))
        }
        Some(common::EX_DATAERR) => Verdict::Refused {
            contained: stderr.contains("MLIR's bytecode reader"),
        },
        _ => Verdict::Failure(format!("{status}: {stderr}")),
    };
    (verdict, stderr)
}

/// Runs `mutations` mutants (numbered from `seed`) on `MCK_FUZZ_JOBS` threads.
fn campaign(mutations: usize, seed: u64) -> Tally {
    let binary = std::env::var_os("MCK_FUZZ_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_mlir-cache-key")));
    let baseline = std::env::var_os("MCK_FUZZ_BASELINE").is_some();
    let out = std::env::var_os("MCK_FUZZ_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("mck-fuzz-key"));
    std::fs::create_dir_all(&out).expect("output folder");
    let work = tempfile::tempdir().expect("tempdir");
    let seeds = seeds(work.path());
    let next = AtomicUsize::new(0);
    let tally = Mutex::new(Tally::default());
    let save = |name: String, mutant: &[u8]| {
        let saved = out.join(name);
        std::fs::write(&saved, mutant).expect("save mutant");
        saved.display().to_string()
    };
    std::thread::scope(|s| {
        for job in 0..env_or("MCK_FUZZ_JOBS", 2usize) {
            let (seeds, next, tally, save, binary) = (&seeds, &next, &tally, &save, &binary);
            let file = work.path().join(format!("mutant{job}.mlirbc"));
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= mutations {
                        break;
                    }
                    let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(1 << 32) ^ i as u64);
                    let mutant = mutate(&seeds[rng.gen_range(0..seeds.len())], &mut rng);
                    let rejected = mutant.starts_with(b"ML\xefR") && validate(&mutant).is_err();
                    if rejected && !baseline && i % 50 != 0 {
                        tally.lock().unwrap().rejected_in_process += 1;
                        continue;
                    }
                    std::fs::write(&file, &mutant).expect("write mutant");
                    let (verdict, stderr) = run_key(binary, &file, baseline, rejected);
                    let mut t = tally.lock().unwrap();
                    t.spawned += 1;
                    match verdict {
                        Verdict::Keyed => t.accepted += 1,
                        Verdict::Refused { contained } => {
                            t.rejected_by_key += 1;
                            if contained {
                                // Kept for study: what validation alone misses.
                                let saved =
                                    save(format!("contained-seed{seed}-{i}.mlirbc"), &mutant);
                                t.contained.push(format!("{saved}: {stderr}"));
                            }
                        }
                        Verdict::Failure(what) => {
                            let saved = save(format!("seed{seed}-mutant{i}.mlirbc"), &mutant);
                            t.failures.push(format!("{saved}: {what}"));
                        }
                    }
                }
            });
        }
    });
    tally.into_inner().unwrap()
}

#[test]
fn mutated_bytecode_never_crashes_or_hangs_key() {
    let mutations = env_or("MCK_FUZZ_MUTATIONS", 2000usize);
    let seed = env_or("MCK_FUZZ_SEED", 1u64);
    let start = Instant::now();
    let t = campaign(mutations, seed);
    eprintln!(
        "fuzz-key: {mutations} mutations (seed {seed}) in {:.0} s: {} rejected by our reader \
         in-process, {} run through key ({} keyed, {} refused with exit 3, of which {} were \
         MLIR crashes or hangs contained in the child), {} crashes or hangs",
        start.elapsed().as_secs_f64(),
        t.rejected_in_process,
        t.spawned,
        t.accepted,
        t.rejected_by_key,
        t.contained.len(),
        t.failures.len()
    );
    for line in &t.contained {
        eprintln!("contained: {line}");
    }
    assert!(
        t.failures.is_empty(),
        "{} mutants crashed or hung key:\n{}",
        t.failures.len(),
        t.failures.join("\n")
    );
}
