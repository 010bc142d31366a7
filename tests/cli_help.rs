//! `--version`, `completions`, `man`, and help that documents every option and positional.

use crate::common::{EX_USAGE, bin, failure, success, text};

#[test]
fn version_names_mlir_and_the_producer() {
    for flag in ["--version", "-V"] {
        let v = text(success(bin().arg(flag)));
        assert!(v.starts_with("mlir-cache-key 0."), "{v}");
        assert!(v.contains("(MLIR 2"), "{v}");
        assert!(v.contains("canonical producer mlir-cache-key/"), "{v}");
    }
}

#[test]
fn completions_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef mlir-cache-key"),
        ("fish", "complete -c mlir-cache-key"),
    ] {
        let out = text(success(bin().args(["completions", shell])));
        assert!(
            out.contains(marker),
            "{shell}: {}",
            &out[..out.len().min(300)]
        );
        assert!(out.contains("stats"), "{shell} completes subcommands");
    }
    failure(bin().args(["completions", "tcsh"]), EX_USAGE);
}

#[test]
fn man_page_documents_the_subcommands() {
    let man = text(success(bin().arg("man")));
    assert!(man.starts_with(".ie"), "roff");
    assert!(man.contains(".TH mlir-cache-key 1"), "{}", &man[..200]);
    for sub in ["mlir\\-cache\\-key\\-exec", "mlir\\-cache\\-key\\-config"] {
        assert!(man.contains(sub), "{sub} missing from the man page");
    }
}

#[test]
fn help_shows_exit_codes_and_examples() {
    let help = text(success(bin().arg("--help")));
    assert!(help.contains("Exit codes:"), "{help}");
    assert!(help.contains("74"), "{help}");
    for sub in [
        &["cache", "stats", "--help"][..],
        &["cache", "show", "--help"],
        &["config", "set", "--help"],
        &["why", "--help"],
        &["completions", "--help"],
    ] {
        let h = text(success(bin().args(sub)));
        assert!(h.contains("Example"), "{sub:?}: {h}");
    }
}
