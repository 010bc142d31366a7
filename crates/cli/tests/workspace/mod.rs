//! The workspace as Cargo sees it (`cargo metadata --no-deps`), for the tests that hold every
//! package to a rule: a crate added to `[workspace] members` is covered without editing them.

use std::path::{Path, PathBuf};

/// One workspace package.
#[derive(Debug)]
pub struct Package {
    pub name: String,
    /// The directory of its `Cargo.toml`.
    pub dir: PathBuf,
    /// The root file of each of its targets (lib, bins, tests, examples, build script…).
    #[allow(dead_code, reason = "not every test binary reads every field")]
    pub roots: Vec<PathBuf>,
}

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// Every package of the workspace, in `cargo metadata`'s order.
pub fn packages() -> Vec<Package> {
    let output = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(repo())
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("its JSON");
    let text = |v: &serde_json::Value| v.as_str().expect("a string").to_owned();
    let packages: Vec<Package> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| Package {
            name: text(&p["name"]),
            dir: Path::new(&text(&p["manifest_path"]))
                .parent()
                .expect("the manifest's directory")
                .to_owned(),
            roots: p["targets"]
                .as_array()
                .expect("targets")
                .iter()
                .map(|t| PathBuf::from(text(&t["src_path"])))
                .collect(),
        })
        .collect();
    assert!(packages.iter().any(|p| p.name == "mck-cli"), "{packages:?}");
    packages
}
