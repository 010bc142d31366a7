//! The exec key: JAX's eight entries with the compiler in place of JAX's version (its binary's
//! digest), its arguments (input and output paths as placeholders) and environment as the
//! "compile options", so the key does not depend on where the files are.

use crate::compiler;
use crate::error::ExecError;
use crate::request::ExecRequest;
use anyhow::anyhow;
use mck_key::flags::FlagSources;
use mck_key::{
    Accelerator, CompileOptionsInput, Computation, KeyInputs, KeyRecord, Readable, compute,
};
use serde_json::{Value, json};

/// Environment variables that change what XLA-family compilers produce.
pub const DEFAULT_ENV: &[&str] = &["XLA_FLAGS", "LIBTPU_INIT_ARGS"];

/// Canonical text above this size is not kept in the entry's record.
const MAX_RECORDED_TEXT: usize = 8 << 20;

/// The key record of compiling `computation` (the canonical module named `module_name`) as
/// `request` says.
pub fn exec_key(
    request: &ExecRequest,
    module_name: String,
    computation: Computation<'_>,
) -> Result<KeyRecord, ExecError> {
    let compiler = request
        .command
        .first()
        .ok_or_else(|| ExecError::input(anyhow!("no compiler command given")))?;
    let argv = placeholder_args(request)?;
    let mut env = serde_json::Map::new();
    for var in DEFAULT_ENV
        .iter()
        .copied()
        .chain(request.env.iter().map(String::as_str))
    {
        let value = match std::env::var_os(var) {
            None => Value::Null,
            Some(v) => Value::String(v.into_string().map_err(|_| {
                ExecError::input(anyhow!("environment variable {var} is not valid UTF-8"))
            })?),
        };
        env.insert(var.to_string(), value);
    }
    let command_line = json!({ "argv": argv, "env": env });
    let env_text = |var: &str| env.get(var).and_then(Value::as_str).map(str::to_string);
    let inputs = KeyInputs {
        module_name,
        compiler_version: format!("sha256:{}", compiler::digest(compiler)?),
        platform: request.platform.clone(),
        platform_version: request.platform_version.clone(),
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
        custom_hook: request.custom_hook.clone(),
    };
    let mut record = compute(computation, &inputs)?;
    if let Some(Readable::Computation { text, .. }) =
        record.entries.first_mut().map(|e| &mut e.readable)
        && text.as_ref().is_some_and(|t| t.len() > MAX_RECORDED_TEXT)
    {
        *text = None;
    }
    Ok(record)
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
