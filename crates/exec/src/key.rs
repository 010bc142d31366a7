//! The exec key: JAX's eight entries with the compiler in place of JAX's version (see
//! `compiler_check`), its arguments (input and output paths as placeholders) and environment as
//! the "compile options", so the key does not depend on where the files are. XLA flags — from
//! `XLA_FLAGS`, `LIBTPU_INIT_ARGS` and the compiler's own `--xla…` arguments — go through JAX's
//! flag filter (entry 4), so `--xla_dump_to=DIR` and the other flags JAX leaves out do not move
//! the key; `--ignore-arg` patterns leave other arguments out. What was left out is recorded.

use crate::compiler_check;
use crate::error::ExecError;
use crate::request::ExecRequest;
use anyhow::anyhow;
use mck_key::flags::FlagSources;
use mck_key::{
    Accelerator, CompileOptionsInput, Computation, JaxRecipe, KeyInputs, KeyRecord, Readable,
    compute,
};
use mck_store::{CacheKey, Digest};
use serde_json::{Value, json};
use std::path::Path;

/// Environment variables that change what XLA-family compilers produce.
pub const DEFAULT_ENV: &[&str] = &["XLA_FLAGS", "LIBTPU_INIT_ARGS"];

/// Canonical text above this size is not kept in the entry's record.
pub(crate) const MAX_RECORDED_TEXT: usize = 8 << 20;

/// The key record of compiling `computation` (the canonical module named `module_name`) as
/// `request` says; `digest_cache` is where compiler digests are remembered (the cache's
/// `compilers/` directory), if anywhere.
pub fn exec_key(
    request: &ExecRequest,
    module_name: String,
    computation: Computation<'_>,
    digest_cache: Option<&Path>,
) -> Result<KeyRecord, ExecError> {
    let inputs = key_inputs(request, module_name, digest_cache)?;
    let mut record = compute(computation, &inputs, JaxRecipe::newest())?;
    log_excluded_flags(&record);
    if let Some(Readable::Computation { text, .. }) =
        record.entries.first_mut().map(|e| &mut e.readable)
        && text.as_ref().is_some_and(|t| t.len() > MAX_RECORDED_TEXT)
    {
        *text = None;
    }
    Ok(record)
}

/// The direct-mode manifest key: the exec key's entries 2–8 as for the canonical key, a
/// digest of the raw input bytes as the computation (the caller's: the CLI's BLAKE3,
/// `mck_cli::raw_digest`; hashed once rather than twice as entry bytes; `direct/3` since it
/// replaced SHA-256, so older manifests are misses), and `canon_identity` (the canonicalizer's version and
/// options) and the module-name override in entry 8, so any change of what could move the
/// canonical key moves this one too.
pub fn direct_key(
    request: &ExecRequest,
    raw_input_digest: &[u8; 32],
    canon_identity: &str,
    name_override: Option<&str>,
    digest_cache: Option<&Path>,
) -> Result<CacheKey, ExecError> {
    let mut inputs = key_inputs(request, String::new(), digest_cache)?;
    inputs.custom_hook = json!([
        "direct/3",
        inputs.custom_hook,
        canon_identity,
        name_override
    ])
    .to_string();
    let record = compute(
        Computation::Bytes(raw_input_digest),
        &inputs,
        JaxRecipe::newest(),
    )?;
    log_excluded_flags(&record);
    Ok(CacheKey::from_parts(
        DIRECT_NAME,
        Digest::parse(&record.sha256)?,
    )?)
}

/// Says which XLA flags entry 4 left out (on a direct hit, too).
fn log_excluded_flags(record: &KeyRecord) {
    if let Some(Readable::Flags { excluded, .. }) = record.entries.get(3).map(|e| &e.readable)
        && !excluded.is_empty()
    {
        tracing::info!(
            "XLA flags left out of the key (as JAX does): {}",
            excluded.join(" ")
        );
    }
}

/// The name part of every manifest key (`direct-<64 hex>`).
pub const DIRECT_NAME: &str = mck_store::MANIFEST_NAME;

/// Entries 2–8 of the exec key and its name.
fn key_inputs(
    request: &ExecRequest,
    module_name: String,
    digest_cache: Option<&Path>,
) -> Result<KeyInputs, ExecError> {
    let compiler =
        compiler_check::identify(&request.compiler_check, &request.command, digest_cache)?;
    let argv = placeholder_args(request)?;
    let ignore = request
        .ignore_args
        .iter()
        .map(|p| {
            glob::Pattern::new(p).map_err(|e| ExecError::input(anyhow!("--ignore-arg {p:?}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (ignored, kept): (Vec<String>, Vec<String>) = argv
        .iter()
        .cloned()
        .partition(|arg| ignore.iter().any(|p| p.matches(arg)));
    // XLA flags among the arguments are keyed, filtered, by entry 4; the rest here.
    let plain: Vec<&String> = kept.iter().filter(|a| !a.starts_with("--xla")).collect();
    if !ignored.is_empty() {
        tracing::info!("left out of the key (--ignore-arg): {}", ignored.join(" "));
    }
    let mut env = serde_json::Map::new();
    for var in DEFAULT_ENV
        .iter()
        .copied()
        .chain(request.env.iter().map(String::as_str))
    {
        if env.contains_key(var) {
            continue;
        }
        let value = match std::env::var_os(var) {
            None => Value::Null,
            Some(v) => Value::String(v.into_string().map_err(|_| {
                ExecError::input(anyhow!("environment variable {var} is not valid UTF-8"))
            })?),
        };
        env.insert(var.to_string(), value);
    }
    let env_text = |var: &str| env.get(var).and_then(Value::as_str).map(str::to_string);
    let (xla_flags, libtpu_init_args) = (env_text("XLA_FLAGS"), env_text("LIBTPU_INIT_ARGS"));
    // XLA_FLAGS and LIBTPU_INIT_ARGS are keyed, filtered, by entry 4; other variables here.
    let hashed_env: serde_json::Map<String, Value> = env
        .iter()
        .filter(|(k, _)| !DEFAULT_ENV.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let command_line = json!({ "argv": plain, "env": hashed_env, "ignored_args": ignored });
    let inputs = KeyInputs {
        module_name,
        compiler_version: compiler,
        platform: request.platform.clone(),
        platform_version: request.platform_version.clone(),
        runtime_type: String::new(),
        flags: FlagSources {
            xla_flags,
            libtpu_init_args,
            argv: kept.clone(),
            extra_prefixes: Vec::new(),
        },
        compile_options: CompileOptionsInput::Json {
            name: "the command line".into(),
            bytes: command_line.to_string().into_bytes(),
            ignored_keys: vec!["ignored_args".into()],
        },
        accelerator: Accelerator::default(),
        compression: "none".into(),
        custom_hook: request.custom_hook.clone(),
    };
    Ok(inputs)
}

/// The command's arguments (not the command itself, which is keyed by its binary) with the
/// input and output paths replaced by placeholders.
fn placeholder_args(request: &ExecRequest) -> Result<Vec<String>, ExecError> {
    let input = request.input.to_string_lossy().into_owned();
    let output = request.output.to_string_lossy().into_owned();
    let placeholder = |value: &str| {
        if value == input {
            Some("{input}")
        } else if value == output {
            Some("{output}")
        } else {
            None
        }
    };
    request.command[1..]
        .iter()
        .enumerate()
        .map(|(i, arg)| {
            let arg = arg.to_str().ok_or_else(|| {
                ExecError::input(anyhow!(
                    "argument {} of the command is not valid UTF-8",
                    i + 1
                ))
            })?;
            Ok(if let Some(p) = placeholder(arg) {
                p.to_string()
            } else if let Some((flag, value)) = arg.split_once('=')
                && let Some(p) = placeholder(value)
            {
                format!("{flag}={p}")
            } else {
                arg.to_string()
            })
        })
        .collect()
}
