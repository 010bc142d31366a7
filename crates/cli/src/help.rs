//! `completions` and `man`: shell completions and a man page generated from the clap
//! definitions and, for its SETTINGS section, from the settings table. They need no MLIR.

use crate::command_line::{Cli, CompletionsArgs};
use crate::error::CliError;
use crate::manage::output;
use clap::CommandFactory as _;
use std::process::ExitCode;

/// The completions of `command` (the whole command line, its `--version` included).
pub fn completions(
    args: CompletionsArgs,
    mut command: clap::Command,
) -> Result<ExitCode, CliError> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut command, "mlir-cache-key", &mut out);
    output::stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

pub fn man() -> Result<ExitCode, CliError> {
    let command = Cli::command()
        .version(env!("CARGO_PKG_VERSION"))
        .long_version(None::<&str>);
    let mut out = Vec::new();
    main_page(&command, &mut out).map_err(CliError::other)?;
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

/// The program's page: clap_mangen's sections, with the settings (from their table) after the
/// commands.
fn main_page(command: &clap::Command, out: &mut Vec<u8>) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(command.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    man.render_subcommands_section(out)?;
    out.extend_from_slice(mck_settings::man_section().as_bytes());
    man.render_extra_section(out)?;
    man.render_version_section(out)
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
    fn the_man_page_documents_every_setting() {
        let mut page = Vec::new();
        super::main_page(&crate::command_line::command("0"), &mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        let settings = page.find(".SH SETTINGS").expect("a SETTINGS section");
        assert!(page.find(".SH SUBCOMMANDS").unwrap() < settings, "{page}");
        for s in mck_settings::SETTINGS {
            let flag = format!("\\fB\\-\\-{}", s.name.replace('-', "\\-"));
            assert!(page[settings..].contains(&flag), "{flag} missing:\n{page}");
        }
    }

    #[test]
    fn every_option_positional_and_command_is_described() {
        let mut missing = Vec::new();
        undocumented(&crate::command_line::Cli::command(), "", &mut missing);
        assert!(missing.is_empty(), "undocumented:\n{}", missing.join("\n"));
    }
}
