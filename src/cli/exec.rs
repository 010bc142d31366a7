//! `mlir-cache-key exec`: ccache-style wrapper. Keys the module, the
//! compiler's binary and its arguments; returns the cached output, or runs the
//! compiler and stores its output (or its failure). With `--remote`, the
//! lookup and the writes go through the tiered cache (local, then the team's
//! remote), and one host compiles a key at a time across the team.

use super::address_args::AddressArgs;
use super::canon::CanonFlags;
use super::error::CliError;
use super::input;
use super::settings::CacheOptions;
use crate::canon::{CanonicalModule, module_name};
use crate::key::flags::FlagSources;
use crate::key::{Accelerator, CompileOptionsInput, Computation, KeyInputs, KeyRecord, compute};
use crate::mlir::{new_context, parse_module};
use crate::store::{
    Address, AddressClaim, CacheKey, Claim, Digest, Failure, ListFilter, Lookup, Registry,
    RunEntry, SortBy, Store, Tiered,
};
use anyhow::{Context as _, anyhow};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

/// Environment variables that change what XLA-family compilers produce.
const DEFAULT_ENV: &[&str] = &["XLA_FLAGS", "LIBTPU_INIT_ARGS"];

/// Canonical text above this size is not kept in the entry's record.
const MAX_RECORDED_TEXT: usize = 8 << 20;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The module the command compiles (MLIR text or bytecode).
    #[arg(long, value_name = "MODULE")]
    input: PathBuf,
    /// The file the command writes: stored on success, restored on a hit.
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
    /// The key's prefix [default: the module's sym_name].
    #[arg(long, value_name = "NAME")]
    module_name: Option<String>,
    /// Another environment variable that can change the output (repeatable;
    /// XLA_FLAGS and LIBTPU_INIT_ARGS always count).
    #[arg(long = "env", value_name = "NAME")]
    env: Vec<String>,
    /// Platform the command compiles for.
    #[arg(long, value_name = "S", default_value = "")]
    platform: String,
    /// Platform version.
    #[arg(long, value_name = "S", default_value = "")]
    platform_version: String,
    /// A user string hashed into the key.
    #[arg(long, value_name = "S", default_value = "")]
    custom_hook: String,
    /// Seconds to wait for another process compiling the same key before
    /// compiling anyway.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    lock_timeout: u64,
    #[command(flatten)]
    canon: CanonFlags,
    #[command(flatten)]
    address: AddressArgs,
    /// The compiler and its arguments; MODULE and FILE appear among them.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

pub fn run(args: Args, cache: &CacheOptions) -> Result<ExitCode, CliError> {
    let settings = cache.settings()?;
    let record = key_record(&args)?;
    let Some(store) = Tiered::open(&settings)? else {
        tracing::info!("caching is off (--no_cache): running the compiler");
        return Ok(exit_of(&compile(&args)?));
    };
    let key = CacheKey::from_parts(&record.module_name, Digest::parse(&record.sha256)?)?;
    let ingredients = serde_json::to_value(&record).map_err(CliError::other)?;
    let addressed = match args.address.address(&record.module_name)? {
        Some(address) => Some(Addressed::check(
            store.local(),
            address,
            &key,
            &record,
            &args.address,
        )?),
        None => None,
    };
    if let Some(Addressed {
        stop: Some(code), ..
    }) = &addressed
    {
        return Ok(*code);
    }
    let outcome = match replay(store.get(&key)?, &args.output)? {
        Some(served) => served,
        None => {
            explain_miss(store.local(), &key, &record);
            compile_once(&store, &key, &ingredients, &args)?
        }
    };
    let code = match &outcome {
        Served::Cached { code, .. } => *code,
        Served::Compiled(outcome) => exit_of(outcome),
    };
    if let Some(addressed) = addressed
        && let Some(state) = outcome.state()
    {
        return addressed.commit(&key, &ingredients, state, &args.address, code);
    }
    Ok(code)
}

/// How a result was served.
enum Served {
    /// A hit (`state` "ok") or a replayed failure ("failed"), with its exit code.
    Cached { code: ExitCode, state: &'static str },
    /// The compiler ran.
    Compiled(Outcome),
}

impl Served {
    /// The state a run records (`None`: nothing usable was produced).
    fn state(&self) -> Option<&'static str> {
        match self {
            Served::Cached { state, .. } => Some(state),
            Served::Compiled(Outcome::Success(_)) => Some("ok"),
            Served::Compiled(Outcome::Failed(_)) => Some("failed"),
            Served::Compiled(Outcome::Killed(_)) => None,
        }
    }
}

/// Claims the key (local lock, and the team's lease with a remote), uses a
/// result that arrived meanwhile, else compiles and stores in both tiers.
fn compile_once(
    store: &Tiered,
    key: &CacheKey,
    ingredients: &Value,
    args: &Args,
) -> Result<Served, CliError> {
    let claim = match store.claim(key, Duration::from_secs(args.lock_timeout))? {
        Claim::Found(found) => {
            if let Some(served) = replay(found, &args.output)? {
                return Ok(served);
            }
            None
        }
        Claim::Compile(claim) => Some(claim),
    };
    let outcome = compile(args)?;
    match &outcome {
        Outcome::Success(bytes) => {
            if let Err(e) = store.put(key, bytes, ingredients) {
                tracing::warn!("could not store the artefact of {key}: {e}");
            }
        }
        Outcome::Failed(failure) => {
            if let Err(e) = store.put_failure(key, failure, ingredients) {
                tracing::warn!("could not remember the failed compilation of {key}: {e}");
            }
        }
        Outcome::Killed(signal) => {
            tracing::warn!(
                "the compiler was killed by signal {signal}; not remembered as a failure"
            );
        }
    }
    drop(claim);
    Ok(Served::Compiled(outcome))
}

/// A compilation at an address, within a run.
struct Addressed {
    registry: Registry,
    address: Address,
    run: String,
    record: KeyRecord,
    /// Set when the address already decided the outcome (a conflict).
    stop: Option<ExitCode>,
}

impl Addressed {
    /// Compares the address (and this run's earlier visits) with `key`
    /// before anything is compiled.
    fn check(
        store: &Store,
        address: Address,
        key: &CacheKey,
        record: &KeyRecord,
        options: &AddressArgs,
    ) -> Result<Addressed, CliError> {
        let registry = store.registry()?;
        let run = options.run_id()?;
        let mut this = Addressed {
            registry,
            address,
            run,
            record: record.clone(),
            stop: None,
        };
        match this
            .registry
            .claim(&this.address, &key.to_string(), &this.run)?
        {
            AddressClaim::RunConflict { earlier_key } => {
                return Err(this.run_conflict(&earlier_key, key));
            }
            AddressClaim::Conflict(existing) if !options.overwrite_cache_conflicts => {
                let mut entry = this.line(key, "conflict");
                entry.conflict_with = Some(existing.key.clone());
                this.registry.record_conflict(&this.run, &entry)?;
                this.report_conflict(&existing, key);
                this.stop = Some(ExitCode::from(super::error::Failure::Conflict.code()));
            }
            _ => {}
        }
        Ok(this)
    }

    fn line(&self, key: &CacheKey, state: &str) -> RunEntry {
        RunEntry {
            address: self.address.to_string(),
            key: key.to_string(),
            digest: key.digest().to_string(),
            state: state.to_string(),
            time_ms: now_ms(),
            conflict_with: None,
        }
    }

    /// Records the result at the address, deciding again under the registry
    /// lock (another run may have set it while we compiled).
    fn commit(
        self,
        key: &CacheKey,
        ingredients: &Value,
        state: &str,
        options: &AddressArgs,
        code: ExitCode,
    ) -> Result<ExitCode, CliError> {
        let entry = self.line(key, state);
        match self.registry.commit(
            &self.address,
            &entry,
            &self.run,
            ingredients,
            options.overwrite_cache_conflicts,
        )? {
            AddressClaim::RunConflict { earlier_key } => Err(self.run_conflict(&earlier_key, key)),
            AddressClaim::Conflict(existing) if !options.overwrite_cache_conflicts => {
                self.report_conflict(&existing, key);
                Ok(ExitCode::from(super::error::Failure::Conflict.code()))
            }
            AddressClaim::Conflict(existing) => {
                tracing::warn!(
                    "overwrote the cache conflict at {}: {} → {key} (run {})",
                    self.address,
                    existing.key,
                    self.run
                );
                Ok(code)
            }
            _ => Ok(code),
        }
    }

    fn run_conflict(&self, earlier: &str, key: &CacheKey) -> CliError {
        CliError {
            kind: super::error::Failure::Conflict,
            error: anyhow!(
                "run {} reached address {} with two fingerprints: {earlier} (earlier) and {key}; \
                 one address must name one program within a run",
                self.run,
                self.address
            ),
        }
    }

    fn report_conflict(&self, existing: &crate::store::AddressEntry, key: &CacheKey) {
        let mut text = format!(
            "cache conflict at {}\n  cached fingerprint: {} (set by run {})\n  new fingerprint:    {key}\n",
            self.address, existing.key, existing.run
        );
        match serde_json::from_value::<KeyRecord>(existing.record.clone()) {
            Ok(old) => {
                text.push_str("  what moved:\n");
                for line in crate::key::explain::explain(&old, &self.record)
                    .to_string()
                    .lines()
                {
                    text.push_str(&format!("    {line}\n"));
                }
            }
            Err(_) => text.push_str("  (the cached fingerprint's ingredients were not recorded)\n"),
        }
        let pattern = self.address.to_string();
        text.push_str(&format!(
            "  nothing was overwritten; to resolve:\n    \
             rerun with --overwrite-cache-conflicts to replace it for run {run}, or\n    \
             mlir-cache-key cache clear '{pattern}' and rerun (clear, then resume), or\n    \
             mlir-cache-key cache clear --conflicts-in {run} to clear every conflict of this run",
            run = self.run
        ));
        eprintln!("mlir-cache-key: error: {text}");
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Serves a hit or a remembered failure (the store logs which); `None` on a miss.
fn replay(lookup: Lookup, output: &Path) -> Result<Option<Served>, CliError> {
    match lookup {
        Lookup::Hit(artefact) => {
            write_atomically(output, &artefact.bytes)?;
            Ok(Some(Served::Cached {
                code: ExitCode::SUCCESS,
                state: "ok",
            }))
        }
        Lookup::Failed(cached) => {
            tracing::warn!(
                "replaying the remembered failure of {} (--retry_failed_compilation compiles again)",
                cached.key
            );
            let _ = std::io::stderr().write_all(cached.failure.stderr.as_bytes());
            Ok(Some(Served::Cached {
                code: exit_code(cached.failure.exit_status),
                state: "failed",
            }))
        }
        Lookup::Miss => Ok(None),
    }
}

/// Logs the miss and, when entries of the same module exist, what moved.
fn explain_miss(store: &Store, key: &CacheKey, record: &KeyRecord) {
    let filter = ListFilter {
        name_glob: Some(glob_escape(key.name())),
        sort: SortBy::LastUsed,
        limit: Some(1),
        ..ListFilter::default()
    };
    let Ok(nearest) = store.list(&filter) else {
        return;
    };
    let Some(nearest) = nearest.first() else {
        return;
    };
    let Ok(Some(meta)) = Digest::parse(&nearest.digest).and_then(|d| store.read_metadata(&d))
    else {
        return;
    };
    if let Ok(old) = serde_json::from_value::<KeyRecord>(meta.ingredients) {
        let explanation = crate::key::explain::explain(&old, record);
        tracing::info!(
            "nearest entry {}:\n{}",
            nearest.key,
            explanation.to_string().trim_end()
        );
    }
}

/// SQLite GLOB metacharacters in a name, escaped as one-character classes.
fn glob_escape(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '*' | '?' | '[' | ']' => format!("[{c}]"),
            c => c.to_string(),
        })
        .collect()
}

fn key_record(args: &Args) -> Result<KeyRecord, CliError> {
    let module = input::read(&args.input)?;
    let context = new_context();
    let parsed = parse_module(&context, &module.bytes, &module.name).map_err(CliError::input)?;
    let name = args
        .module_name
        .clone()
        .or_else(|| module_name(&parsed))
        .ok_or_else(|| {
            CliError::input(anyhow!(
                "{}: the module has no sym_name to name its key; pass --module-name",
                module.name
            ))
        })?;
    let canonical = CanonicalModule::from_owned(parsed, &args.canon.options())?;
    let argv = placeholder_args(args)?;
    let mut env = serde_json::Map::new();
    for var in DEFAULT_ENV
        .iter()
        .copied()
        .chain(args.env.iter().map(String::as_str))
    {
        let value = match std::env::var_os(var) {
            None => Value::Null,
            Some(v) => Value::String(v.into_string().map_err(|_| {
                CliError::input(anyhow!("environment variable {var} is not valid UTF-8"))
            })?),
        };
        env.insert(var.to_string(), value);
    }
    let command_line = json!({ "argv": argv, "env": env });
    let env_text = |var: &str| env.get(var).and_then(Value::as_str).map(str::to_string);
    let inputs = KeyInputs {
        module_name: name,
        compiler_version: format!("sha256:{}", compiler_digest(&args.command[0])?),
        platform: args.platform.clone(),
        platform_version: args.platform_version.clone(),
        flags: FlagSources {
            xla_flags: env_text("XLA_FLAGS"),
            libtpu_init_args: env_text("LIBTPU_INIT_ARGS"),
            argv: argv.clone(),
            extra_prefixes: Vec::new(),
        },
        compile_options: CompileOptionsInput::Json {
            name: "the command line".into(),
            bytes: command_line.to_string().into_bytes(),
            ignored_keys: Vec::new(),
        },
        accelerator: Accelerator::default(),
        compression: "none".into(),
        custom_hook: args.custom_hook.clone(),
    };
    let computation = Computation::Module {
        module: &canonical,
        record_text: true,
    };
    let mut record = compute(computation, &inputs).map_err(CliError::input)?;
    if let Some(crate::key::Readable::Computation { text, .. }) =
        record.entries.first_mut().map(|e| &mut e.readable)
        && text.as_ref().is_some_and(|t| t.len() > MAX_RECORDED_TEXT)
    {
        *text = None;
    }
    Ok(record)
}

/// The command's arguments (not the command itself, which is keyed by its
/// binary) with the input and output paths replaced by placeholders, so the
/// key does not depend on where the files are.
fn placeholder_args(args: &Args) -> Result<Vec<String>, CliError> {
    let input = args.input.to_string_lossy().into_owned();
    let output = args.output.to_string_lossy().into_owned();
    args.command[1..]
        .iter()
        .enumerate()
        .map(|(i, arg)| {
            let arg = arg.to_str().ok_or_else(|| {
                CliError::input(anyhow!(
                    "argument {} of the command is not valid UTF-8",
                    i + 1
                ))
            })?;
            Ok(if arg == input {
                "{input}".to_string()
            } else if arg == output {
                "{output}".to_string()
            } else if let Some((flag, value)) = arg.split_once('=')
                && (value == input || value == output)
            {
                format!(
                    "{flag}={}",
                    if value == input {
                        "{input}"
                    } else {
                        "{output}"
                    }
                )
            } else {
                arg.to_string()
            })
        })
        .collect()
}

/// SHA-256 of the compiler's executable, found like the shell would.
fn compiler_digest(command: &OsString) -> Result<String, CliError> {
    let path = resolve(Path::new(command)).ok_or_else(|| {
        CliError::input(anyhow!("command not found: {}", command.to_string_lossy()))
    })?;
    let mut file = std::fs::File::open(&path)
        .with_context(|| format!("cannot read the compiler {}", path.display()))
        .map_err(CliError::input)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read(&mut buffer)
            .with_context(|| format!("cannot read the compiler {}", path.display()))
            .map_err(CliError::input)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

fn resolve(command: &Path) -> Option<PathBuf> {
    if command.components().count() > 1 {
        return command.is_file().then(|| command.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|p| p.is_file())
}

enum Outcome {
    Success(Vec<u8>),
    Failed(Failure),
    Killed(i32),
}

/// Runs the command, passing its stderr through while keeping a copy.
fn compile(args: &Args) -> Result<Outcome, CliError> {
    let mut child = Command::new(&args.command[0])
        .args(&args.command[1..])
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {}", args.command[0].to_string_lossy()))
        .map_err(CliError::input)?;
    let mut captured = Vec::new();
    if let Some(mut pipe) = child.stderr.take() {
        let mut chunk = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut chunk) {
            if n == 0 {
                break;
            }
            let _ = std::io::stderr().write_all(&chunk[..n]);
            captured.extend_from_slice(&chunk[..n]);
        }
    }
    let status = child
        .wait()
        .context("waiting for the compiler")
        .map_err(CliError::other)?;
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal() {
        return Ok(Outcome::Killed(signal));
    }
    if !status.success() {
        return Ok(Outcome::Failed(Failure {
            exit_status: status.code(),
            stderr: String::from_utf8_lossy(&captured).into_owned(),
        }));
    }
    let bytes = std::fs::read(&args.output)
        .with_context(|| {
            format!(
                "{} exited successfully but {} cannot be read",
                args.command[0].to_string_lossy(),
                args.output.display()
            )
        })
        .map_err(CliError::other)?;
    Ok(Outcome::Success(bytes))
}

/// The compiler's own status (128 + signal when killed, as shells report).
fn exit_of(outcome: &Outcome) -> ExitCode {
    match outcome {
        Outcome::Success(_) => ExitCode::SUCCESS,
        Outcome::Failed(f) => exit_code(f.exit_status),
        Outcome::Killed(signal) => exit_code(Some(128 + signal)),
    }
}

fn exit_code(status: Option<i32>) -> ExitCode {
    ExitCode::from(status.unwrap_or(1).clamp(1, 255) as u8)
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// reader never sees a partial artefact.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a file in {}", dir.display()))
        .map_err(CliError::other)?;
    file.write_all(bytes)
        .and_then(|()| file.as_file().sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
        .map_err(CliError::other)?;
    file.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))
        .map_err(CliError::other)?;
    Ok(())
}
