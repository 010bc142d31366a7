//! `completions` and `man`: shell completions and a man page generated from the clap
//! definitions; the long `--version`.

use super::error::CliError;
use super::output;
use clap::CommandFactory as _;
use std::process::ExitCode;
use std::sync::LazyLock;

/// `--version`: the crate's version, the MLIR it is built against, the canonical producer.
pub static LONG_VERSION: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} (MLIR {}, canonical producer {})",
        env!("CARGO_PKG_VERSION"),
        env!("MCK_MLIR_VERSION"),
        crate::mlir::PRODUCER
    )
});

/// `-V` and `--version`.
pub fn long_version() -> &'static str {
    LONG_VERSION.as_str()
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  mlir-cache-key completions bash > /etc/bash_completion.d/mlir-cache-key\n  \
                        mlir-cache-key completions zsh > ~/.zfunc/_mlir-cache-key\n  \
                        mlir-cache-key completions fish > ~/.config/fish/completions/mlir-cache-key.fish"
)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

pub fn completions(args: CompletionsArgs) -> Result<ExitCode, CliError> {
    let mut command = super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut command, "mlir-cache-key", &mut out);
    output::stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

pub fn man() -> Result<ExitCode, CliError> {
    let command = super::Cli::command()
        .version(env!("CARGO_PKG_VERSION"))
        .long_version(None::<&str>);
    let mut out = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut out)
        .map_err(CliError::other)?;
    // One section per subcommand, so that their options are documented too.
    for sub in command.get_subcommands() {
        let name: &'static str =
            Box::leak(format!("mlir-cache-key-{}", sub.get_name()).into_boxed_str());
        let sub = sub.clone().name(name);
        out.extend_from_slice(b"\n");
        clap_mangen::Man::new(sub)
            .render(&mut out)
            .map_err(CliError::other)?;
    }
    output::stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    fn undocumented(command: &clap::Command, path: &str, out: &mut Vec<String>) {
        let path = format!("{path} {}", command.get_name());
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                out.push(format!("{path} {id}"));
            }
        }
        for sub in command.get_subcommands() {
            if sub.get_about().is_none() {
                out.push(format!("{path} {} (no about)", sub.get_name()));
            }
            undocumented(sub, &path, out);
        }
    }

    #[test]
    fn every_option_positional_and_command_is_described() {
        let mut missing = Vec::new();
        undocumented(&super::super::Cli::command(), "", &mut missing);
        assert!(missing.is_empty(), "undocumented:\n{}", missing.join("\n"));
    }
}
