//! Entry 4, "XLA flags": which compiler flags reach the key.
//!
//! Tokens of `XLA_FLAGS`, then of `LIBTPU_INIT_ARGS` (split like Python's
//! `str.split()`), then command-line arguments starting with `--xla` or an
//! extra prefix; sorted by bytes; a flag whose name (text before the first
//! `=`) is on the release's exclusion list ([`super::JaxRecipe::excluded_xla_flags`]) is
//! dropped.

use super::strings::python_split;
use serde::{Deserialize, Serialize};

/// Where flags come from; the CLI fills this from the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlagSources {
    /// The `XLA_FLAGS` environment variable, if set.
    pub xla_flags: Option<String>,
    /// The `LIBTPU_INIT_ARGS` environment variable, if set.
    pub libtpu_init_args: Option<String>,
    /// The compiling program's command line (JAX reads `sys.argv`).
    pub argv: Vec<String>,
    /// Extra argument prefixes that count as flags (JAX's `add_flag_prefixes`).
    pub extra_prefixes: Vec<String>,
}

/// The flags in hash order, and those left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlagSelection {
    pub included: Vec<String>,
    pub excluded: Vec<String>,
}

/// Collects, sorts and filters flags exactly as JAX does, leaving out the flags named in
/// `excluded`.
pub fn select(sources: &FlagSources, excluded: &[&str]) -> FlagSelection {
    let mut flags: Vec<String> = Vec::new();
    for value in [&sources.xla_flags, &sources.libtpu_init_args]
        .into_iter()
        .flatten()
    {
        flags.extend(python_split(value));
    }
    flags.extend(
        sources
            .argv
            .iter()
            .filter(|arg| {
                arg.starts_with("--xla")
                    || sources
                        .extra_prefixes
                        .iter()
                        .any(|p| arg.starts_with(p.as_str()))
            })
            .cloned(),
    );
    flags.sort();
    let mut selection = FlagSelection::default();
    for flag in flags {
        let name = flag.split('=').next().unwrap_or_default();
        if excluded.contains(&name) {
            tracing::debug!("Not including XLA flag in cache key: {flag}");
            selection.excluded.push(flag);
        } else {
            tracing::debug!("Including XLA flag in cache key: {flag}");
            selection.included.push(flag);
        }
    }
    selection
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile_options::EXCLUDED_XLA_FLAGS;

    fn sources(xla: &str, libtpu: &str, argv: &[&str]) -> FlagSources {
        FlagSources {
            xla_flags: Some(xla.to_string()),
            libtpu_init_args: Some(libtpu.to_string()),
            argv: argv.iter().map(|s| s.to_string()).collect(),
            extra_prefixes: vec![],
        }
    }

    #[test]
    fn sorted_filtered_by_exact_name() {
        let s = select(
            &sources(
                "--xla_dump_to=/tmp/x --xla_cpu_enable_fast_math=false",
                "--xla_tpu_compiler_variant=a --xla_dump_to_extra=1",
                &["train.py", "--xla_b", "--other", "--xla_dump_hlo_as_text"],
            ),
            &EXCLUDED_XLA_FLAGS,
        );
        assert_eq!(
            s.included,
            [
                "--xla_b",
                "--xla_cpu_enable_fast_math=false",
                "--xla_dump_to_extra=1"
            ]
        );
        assert_eq!(
            s.excluded,
            [
                "--xla_dump_hlo_as_text",
                "--xla_dump_to=/tmp/x",
                "--xla_tpu_compiler_variant=a"
            ]
        );
    }

    #[test]
    fn extra_prefixes_and_empty_variables() {
        let s = select(
            &FlagSources {
                xla_flags: Some(String::new()),
                libtpu_init_args: None,
                argv: vec!["--my_flag=1".into(), "-x".into()],
                extra_prefixes: vec!["--my_".into()],
            },
            &EXCLUDED_XLA_FLAGS,
        );
        assert_eq!(s.included, ["--my_flag=1"]);
    }

    #[test]
    fn sort_is_by_code_point() {
        let s = select(
            &sources("--xla_é --xla_z --xla_Z", "", &[]),
            &EXCLUDED_XLA_FLAGS,
        );
        assert_eq!(s.included, ["--xla_Z", "--xla_z", "--xla_é"]);
    }
}
