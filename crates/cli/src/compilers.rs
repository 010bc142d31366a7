//! The known compilers' argument shapes: where `wrap` finds the input a compiler reads and the
//! output it writes. A shape the table cannot read for certain is refused with the reason, and
//! the compiler then runs uncached: a wrong guess could key the wrong file.
//!
//! | compiler | input | output |
//! |---|---|---|
//! | `mlir-opt`, `mlir-opt-N` | the one positional argument | `-o OUT`, `-o=OUT` |
//! | `iree-compile` | the one positional argument | `-o OUT`, `-o=OUT` |
//! | `neuronx-cc compile` | the one positional argument after `compile` | `--output OUT`, `--output=OUT` |
//! | any other | the last positional argument | `-o OUT`, `-o=OUT`, `-oOUT`, `--output OUT`, `--output=OUT` |

/// Where a compiler's input and output are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Files {
    pub input: String,
    pub output: String,
}

/// One known compiler.
pub struct Known {
    /// The name `wrap` reports, and a symlink may have.
    pub name: &'static str,
    matches: fn(&str) -> bool,
    recognize: fn(&[String]) -> Result<Files, String>,
}

/// The compilers `wrap` knows by name (and a symlink to this binary may be named after).
pub static KNOWN: [Known; 3] = [
    Known {
        name: "mlir-opt",
        matches: |name| {
            name == "mlir-opt"
                || name
                    .strip_prefix("mlir-opt-")
                    .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        },
        recognize: |args| {
            llvm_style(
                args,
                MLIR_OPT_VALUES,
                &["load-pass-plugin", "load-dialect-plugin"],
            )
        },
    },
    Known {
        name: "iree-compile",
        matches: |name| name == "iree-compile",
        recognize: |args| llvm_style(args, IREE_VALUES, &[]),
    },
    Known {
        name: "neuronx-cc",
        matches: |name| name == "neuronx-cc",
        recognize: neuronx_cc,
    },
];

/// mlir-opt options that may take their value as the next argument.
const MLIR_OPT_VALUES: &[&str] = &[
    "pass-pipeline",
    "mlir-pass-pipeline-crash-reproducer",
    "log-actions-to",
];

/// iree-compile options that may take their value as the next argument.
const IREE_VALUES: &[&str] = &[
    "compile-from",
    "compile-to",
    "output-format",
    "iree-input-type",
    "iree-hal-target-backends",
    "iree-hal-target-device",
];

/// neuronx-cc options that take a value (as the next argument or after `=`).
const NEURONX_VALUES: &[&str] = &[
    "framework",
    "target",
    "verbose",
    "logfile",
    "model-type",
    "auto-cast",
    "auto-cast-type",
    "optlevel",
    "distribution-strategy",
    "pipeline",
    "lnc",
    "logical-nc-config",
    "O",
];

/// The table entry for a program name (a path's file name), if it is a known compiler.
pub fn known(name: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| (k.matches)(name))
}

/// The input and output of `program args…`, from the table or the generic rule; `Err` says why
/// the shape cannot be read.
pub fn recognize(program: &str, args: &[String]) -> Result<Files, String> {
    match known(program) {
        Some(k) => (k.recognize)(args).map_err(|why| format!("{} arguments: {why}", k.name)),
        None => generic(args),
    }
}

/// LLVM `cl` style: options with `-` or `--`, values after `=` (or next, for `separate`),
/// `--` ends the options, one positional input, `-o` the output.
fn llvm_style(args: &[String], separate: &[&str], plugins: &[&str]) -> Result<Files, String> {
    let (positional, output) = scan(args, "o", plugins, |name, _| separate.contains(&name))?;
    let output = output.ok_or("no -o OUT (the output would go to standard output)")?;
    files(positional, output)
}

/// `neuronx-cc compile INPUT … --output OUT` (argparse style).
fn neuronx_cc(args: &[String]) -> Result<Files, String> {
    let Some(rest) = args.strip_prefix(&["compile".to_string()]) else {
        return Err("the first argument is not `compile`".into());
    };
    let (positional, output) = scan(rest, "output", &[], |name, arg| {
        NEURONX_VALUES.contains(&name) || arg == "-O"
    })?;
    files(positional, output.ok_or("no --output OUT")?)
}

/// The option scan LLVM `cl` and argparse share: options start with `-` or `--`, take their
/// value after `=` or (when `separate` says so) as the next argument, and `--` ends them.
/// Returns the positional arguments and the value of the `output` option (given once at most);
/// an option named in `plugins` is refused.
fn scan(
    args: &[String],
    output: &str,
    plugins: &[&str],
    separate: impl Fn(&str, &str) -> bool,
) -> Result<(Vec<String>, Option<String>), String> {
    let flag = if output.len() == 1 { "-" } else { "--" };
    let mut found = None;
    let mut positional = Vec::new();
    let mut options_end = false;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if options_end || arg == "-" || !arg.starts_with('-') {
            positional.push(arg.clone());
            continue;
        }
        if arg == "--" {
            options_end = true;
            continue;
        }
        let body = arg.trim_start_matches('-');
        let (name, value) = match body.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (body, None),
        };
        if plugins.contains(&name) {
            return Err(format!(
                "{arg} loads a plugin, whose content the key would miss"
            ));
        }
        if name == output {
            let value = match value {
                Some(v) => v,
                None => {
                    i += 1;
                    args.get(i - 1)
                        .cloned()
                        .ok_or(format!("{flag}{output} without a file"))?
                }
            };
            if found.replace(value).is_some() {
                return Err(format!("more than one {flag}{output}"));
            }
        } else if value.is_none() && separate(name, arg) {
            i += 1;
        }
    }
    Ok((positional, found))
}

/// Any other compiler: `-o OUT`/`--output OUT` (or `=OUT`, or `-oOUT`), and the last positional
/// argument as the input. Refused when another positional argument is an existing file too (the
/// compiler might read it, and the key would miss it).
fn generic(args: &[String]) -> Result<Files, String> {
    let mut output = None;
    let mut positional = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let value = match arg.as_str() {
            "-o" | "--output" => {
                i += 1;
                Some(
                    args.get(i - 1)
                        .cloned()
                        .ok_or(format!("{arg} without a file"))?,
                )
            }
            a if a.starts_with("--output=") || a.starts_with("-o=") => {
                a.split_once('=').map(|(_, v)| v.to_string())
            }
            a if a.starts_with("-o") && !a.starts_with("--") => Some(a[2..].to_string()),
            a => {
                if a == "-" || !a.starts_with('-') {
                    positional.push(a.to_string());
                }
                None
            }
        };
        if let Some(value) = value
            && output.replace(value).is_some()
        {
            return Err("more than one output option".into());
        }
    }
    let output = output.ok_or("no -o OUT or --output OUT")?;
    let input = positional
        .pop()
        .ok_or("no positional argument to read as the input")?;
    if let Some(other) = positional
        .iter()
        .find(|p| std::path::Path::new(p).is_file())
    {
        return Err(format!(
            "{other} and {input} are both files: cannot tell which one is the input"
        ));
    }
    files(vec![input], output)
}

fn files(positional: Vec<String>, output: String) -> Result<Files, String> {
    if output == "-" {
        return Err("the output is standard output".into());
    }
    match positional.as_slice() {
        [] => Err("no input file (it would read standard input)".into()),
        [input] if input == "-" => Err("the input is standard input".into()),
        [input] => Ok(Files {
            input: input.clone(),
            output,
        }),
        many => Err(format!(
            "{} positional arguments ({}): cannot tell which one is the input",
            many.len(),
            many.join(", ")
        )),
    }
}

#[cfg(test)]
#[path = "compilers_tests.rs"]
mod tests;
