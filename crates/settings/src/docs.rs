//! The settings table rendered for readers: the Markdown table of docs/settings.md (a test
//! compares the file with it) and the SETTINGS section of the man page.

use super::defs::{CommandLine, SETTINGS, Setting};

/// How a setting is written in `MLIR_CACHE_KEY_FLAGS`: `--NAME` or `--NAME=VALUE`.
fn flag(setting: &Setting) -> String {
    match setting.kind.value_name() {
        None => format!("--{}", setting.name),
        Some(value_name) => format!("--{}={value_name}", setting.name),
    }
}

/// Where else than the variable a setting may be given.
fn also(setting: &Setting) -> String {
    let mut places = Vec::new();
    if setting.in_config_file {
        places.push("file".to_owned());
    }
    match setting.command_line {
        CommandLine::Absent => {}
        CommandLine::OptionOf(commands) => {
            for command in commands {
                places.push(format!("`{command} --{}`", setting.dashed()));
            }
        }
        CommandLine::Option | CommandLine::ParsedLater | CommandLine::Program => {
            places.push(format!("`--{}`", setting.dashed()))
        }
    }
    places.join(", ")
}

/// The Markdown table of every setting, as docs/settings.md holds it between its markers.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| setting | in `MLIR_CACHE_KEY_FLAGS` | also | default | meaning |\n|---|---|---|---|---|\n",
    );
    for s in SETTINGS {
        out.push_str(&format!(
            "| `{}` | `{}` | {} | `{}` | {} |\n",
            s.name,
            flag(s),
            also(s),
            s.default,
            s.doc.replace('|', "\\|")
        ));
    }
    out
}

/// Text escaped for roff: backslashes, dashes (so they stay ASCII), a leading dot or quote.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with('.') || escaped.starts_with('\'') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// The SETTINGS section of the man page, in roff.
pub fn man_section() -> String {
    let mut out = String::from(
        ".SH SETTINGS\n\
         Each setting is read, lowest precedence first, from its default, the file \
         mlir\\-cache\\-key.conf in the cache directory (NAME = VALUE; switches take true or \
         false), the variable MLIR_CACHE_KEY_FLAGS (\\-\\-NAME or \\-\\-NAME=VALUE; dashes or \
         underscores), and the command line. `mlir\\-cache\\-key config show` prints each \
         value and its source.\n",
    );
    for s in SETTINGS {
        out.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{} [default: {}]\n",
            roff(&flag(s)),
            roff(s.doc),
            roff(s.default)
        ));
    }
    out
}
