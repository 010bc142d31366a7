//! A layer of settings: the assignments one source makes (the configuration file, the
//! variable, the command line), parsed through [`SETTINGS`](super::SETTINGS) and applied in
//! order on top of the layers below.
//!
//! The variable `MLIR_CACHE_KEY_FLAGS` (in the style of `NEURON_CC_FLAGS`) holds flags separated
//! by whitespace; single or double quotes group a value that contains spaces
//! (`--cache_dir="/tmp/my cache"`), a backslash escapes the next character. A flag's value
//! follows `=` or comes as the next word; `--remote_timeout` and `--remote-timeout` are the same
//! flag (users copy command-line options there). Unknown flags and bad values are errors that
//! name the flag and where it came from.

use std::fmt;

use super::defs::{Setter, Setting, find};
use super::{ErrorKind, SETTINGS, Settings, SettingsError};

/// One setting given a value by one source.
#[derive(Clone)]
pub struct Assignment {
    pub setting: &'static Setting,
    apply: Setter,
}

impl Assignment {
    /// `setting` given the value `text` (a switch takes `true` or `false`, as in the
    /// configuration file); the error says what was expected.
    pub fn parse(setting: &'static Setting, text: &str) -> Result<Assignment, String> {
        Ok(Assignment::typed(setting, setting.parse(text)?))
    }

    /// `setting` with a value parsed already (by clap, with the setting's own parser).
    pub fn typed(setting: &'static Setting, apply: Setter) -> Assignment {
        Assignment { setting, apply }
    }
}

/// The assignments of one source, in order (a later one wins; a list setting's add up).
#[derive(Clone, Default)]
pub struct Layer {
    assignments: Vec<Assignment>,
}

impl fmt::Debug for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Layer {
    /// Parses flags in the variable's syntax; `source_name` names them in errors
    /// (`MLIR_CACHE_KEY_FLAGS`, `command line`).
    pub fn parse_flags(source_name: &str, text: &str) -> Result<Layer, SettingsError> {
        let err = |flag: &str, message: String| SettingsError {
            source_name: source_name.to_owned(),
            flag: flag.to_owned(),
            message,
            kind: ErrorKind::Invalid,
        };
        let mut layer = Layer::default();
        let mut words = split_words(text)
            .map_err(|message| err(text, message))?
            .into_iter();
        while let Some(word) = words.next() {
            let (flag, inline) = match word.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (word.as_str(), None),
            };
            let Some(setting) = flag.strip_prefix("--").and_then(find) else {
                let known: Vec<String> = SETTINGS.iter().map(|s| format!("--{}", s.name)).collect();
                return Err(err(
                    &word,
                    format!("unknown flag (known flags: {})", known.join(", ")),
                ));
            };
            if setting.is_switch() {
                if inline.is_some() {
                    return Err(err(&word, "this flag takes no value".to_owned()));
                }
                layer.push(Assignment::parse(setting, "true").map_err(|m| err(&word, m))?);
                continue;
            }
            let value = match inline {
                Some(v) => v,
                None => words
                    .next()
                    .ok_or_else(|| err(flag, "missing value".to_owned()))?,
            };
            let shown = format!("{flag}={}", setting.shown_value(&value));
            layer.push(Assignment::parse(setting, &value).map_err(|m| err(&shown, m))?);
        }
        Ok(layer)
    }

    /// Adds an assignment (it wins over the earlier ones of its setting).
    pub fn push(&mut self, assignment: Assignment) {
        self.assignments.push(assignment);
    }

    /// Gives setting `name` the value `text`, as the configuration file would; errors name
    /// `source_name` and show the flag as `--NAME=VALUE` (a password redacted).
    pub fn set(&mut self, source_name: &str, name: &str, text: &str) -> Result<(), SettingsError> {
        let error = |flag: String, message: String| SettingsError {
            source_name: source_name.to_owned(),
            flag,
            message,
            kind: ErrorKind::Invalid,
        };
        let setting = find(name).ok_or_else(|| error(name.to_owned(), "unknown setting".into()))?;
        let shown = format!("--{}={}", setting.name, setting.shown_value(text));
        self.push(Assignment::parse(setting, text).map_err(|m| error(shown, m))?);
        Ok(())
    }

    /// Applies the assignments on top of `base`. A list setting's values add up within this
    /// layer and replace what the layers below gave it.
    pub fn apply_to(&self, base: &mut Settings) {
        let mut listed: Vec<&str> = Vec::new();
        for a in &self.assignments {
            if a.setting.kind.is_list() && !listed.contains(&a.setting.name) {
                listed.push(a.setting.name);
                a.setting.kind.clear_list(base);
            }
            (a.apply)(base);
        }
    }

    /// The names of the settings this layer sets.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.assignments.iter().map(|a| a.setting.name)
    }
}

/// Splits the variable into words: whitespace separates, quotes group, backslash escapes.
fn split_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => cur.push(ch),
                        None => return Err("unterminated single quote".to_owned()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(ch) => cur.push(ch),
                            None => return Err("unterminated double quote".to_owned()),
                        },
                        Some(ch) => cur.push(ch),
                        None => return Err("unterminated double quote".to_owned()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(ch) => cur.push(ch),
                    None => return Err("trailing backslash".to_owned()),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}
