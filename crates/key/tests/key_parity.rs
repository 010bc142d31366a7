//! JAX parity: every vector in tests/data/parity (inputs captured from JAX
//! 0.12.0.1's `cache_key.get`) and in tests/data/parity/<release>/ (made by
//! scripts/gen-jax-parity.py from that release's `cache_key.get`) gives that release's key,
//! trace lines and flag order under the release's recipe.

use std::path::PathBuf;

/// A file under the workspace's `tests/data/`.
fn data(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(relative)
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}
use mck_key::flags::FlagSources;
use mck_key::{
    Accelerator, CompileOptionsInput, Computation, JaxRecipe, KeyInputs, Readable, compute,
};
use serde_json::Value;
use std::path::Path;

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The recipe a vector was made with: env.json's `jax_version` (vectors without it are 0.12's).
pub fn recipe_of(dir: &Path) -> &'static JaxRecipe {
    let env: Value = serde_json::from_slice(&read(&dir.join("env.json"))).expect("env.json");
    match env["jax_version"].as_str() {
        Some(version) => JaxRecipe::for_version(version).expect("known release"),
        None => JaxRecipe::newest(),
    }
}

/// The key inputs a vector's env.json describes.
pub fn inputs_of(dir: &Path) -> KeyInputs {
    let env: Value = serde_json::from_slice(&read(&dir.join("env.json"))).expect("env.json");
    let text = |k: &str| env[k].as_str().map(str::to_string);
    KeyInputs {
        module_name: text("module_name").expect("module_name"),
        compiler_version: text("jaxlib_version").expect("jaxlib_version"),
        platform: text("platform").expect("platform"),
        platform_version: text("platform_version").expect("platform_version"),
        runtime_type: text("runtime_type").unwrap_or_default(),
        flags: FlagSources {
            xla_flags: text("XLA_FLAGS"),
            libtpu_init_args: text("LIBTPU_INIT_ARGS"),
            argv: strings(&env["argv"]),
            extra_prefixes: strings(&env["extra_flag_prefixes"]),
        },
        compile_options: CompileOptionsInput::Proto {
            name: "compile_options.pb".into(),
            bytes: read(&dir.join("compile_options.pb")),
        },
        accelerator: match env["topology_fingerprint"].as_u64() {
            Some(fingerprint) => Accelerator::TopologyFingerprint(fingerprint),
            None if dir.join("topology.bin").exists() => {
                Accelerator::TopologySerialized(read(&dir.join("topology.bin")))
            }
            None => Accelerator::DeviceKinds(strings(&env["device_kinds"])),
        },
        compression: text("compression").expect("compression"),
        custom_hook: text("custom_hook").unwrap_or_default(),
    }
}

fn vectors() -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<_> = std::fs::read_dir(data("parity"))
        .expect("parity dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("expected.json").exists())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 7, "parity vectors missing");
    dirs
}

#[test]
fn every_parity_vector_gives_jaxs_key_and_trace() {
    for dir in vectors() {
        check_vector(&dir);
    }
}

/// Asserts that the vector in `dir` gives JAX's key, trace, flag order and hashed options.
pub fn check_vector(dir: &Path) {
    let expected: Value =
        serde_json::from_slice(&read(&dir.join("expected.json"))).expect("expected.json");
    let computation = read(&dir.join("computation.mlirbc"));
    let record = compute(
        Computation::Bytes(&computation),
        &inputs_of(dir),
        recipe_of(dir),
    )
    .expect("compute");
    let name = dir.display().to_string();
    assert_eq!(record.key, expected["key"].as_str().unwrap(), "{name}: key");
    assert_eq!(
        record.trace_lines(),
        strings(&expected["debug_lines"]),
        "{name}: trace"
    );
    let Readable::Flags { included, .. } = &record.entries[3].readable else {
        panic!("entry 4 is the flags")
    };
    assert_eq!(
        included,
        &strings(&expected["included_xla_flags_in_hash_order"]),
        "{name}: flags"
    );
    let Readable::CompileOptions { hashed, .. } = &record.entries[4].readable else {
        panic!("entry 5 is the compile options")
    };
    use base64::Engine;
    let normalized = base64::engine::general_purpose::STANDARD
        .decode(hashed)
        .unwrap();
    assert_eq!(
        normalized,
        read(&dir.join("compile_options.normalized.pb")),
        "{name}: options"
    );
}

/// The per-release folders, e.g. tests/data/parity/0.10.2/jit_mlp.
fn release_vectors() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for release in std::fs::read_dir(data("parity")).expect("parity dir") {
        let release = release.expect("parity entry").path();
        if !release.is_dir() || release.join("expected.json").exists() {
            continue;
        }
        for case in std::fs::read_dir(&release).expect("release dir") {
            let case = case.expect("case entry").path();
            if case.join("expected.json").exists() {
                dirs.push(case);
            }
        }
    }
    dirs.sort();
    dirs
}

#[test]
fn every_release_vector_gives_that_releases_key_and_trace() {
    let dirs = release_vectors();
    let mut releases: Vec<&str> = dirs.iter().map(|d| recipe_of(d).name).collect();
    releases.sort();
    releases.dedup();
    // 0.8.3 and 0.9.2 share a recipe; 0.8.0 and 0.8.1 (runtime_type hashed) have their own.
    assert!(
        releases.len() >= 5,
        "vectors of at least five recipes expected, found {releases:?}"
    );
    for dir in dirs {
        check_vector(&dir);
    }
}

/// The release folders, e.g. tests/data/parity/0.8.0.
fn release_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = release_vectors()
        .iter()
        .filter_map(|case| case.parent().map(Path::to_path_buf))
        .collect();
    dirs.dedup();
    dirs
}

#[test]
fn releases_that_hash_runtime_type_have_vectors_that_record_it() {
    for release in ["0.8.0", "0.8.1"] {
        let dir = data(&format!("parity/{release}/jit_mlp"));
        assert!(recipe_of(&dir).hashes_runtime_type, "{release}");
        let runtime_type = inputs_of(&dir).runtime_type;
        assert!(
            !runtime_type.is_empty(),
            "{release}: env.json has no runtime_type"
        );
    }
}

/// Every release, 0.8.0 to 0.12.0.1, lowers a Pallas kernel for GPU on a CPU jaxlib (0.8.3–0.10
/// with `jax_pallas_use_mosaic_gpu` off): its vector holds the Triton custom call with the
/// kernel's own locations (the generator's file name), which JAX hashes as lowered.
#[test]
fn every_release_has_a_pallas_gpu_vector_with_its_triton_kernel_as_lowered() {
    let releases = release_dirs();
    assert!(releases.len() >= 7, "0.8.0 … 0.12.0.1: {releases:?}");
    for release in releases {
        let dir = release.join("pallas_gpu");
        let computation = read(&dir.join("computation.mlirbc"));
        let holds = |needle: &[u8]| computation.windows(needle.len()).any(|w| w == needle);
        assert!(
            holds(b"__gpu$xla.gpu.triton") && holds(b"gen-jax-parity.py"),
            "{}: no Triton kernel with its locations",
            dir.display()
        );
    }
}

#[test]
fn gpu_device_assignment_is_rebuilt_so_processes_share_a_key() {
    let key = |v: &str| {
        let dir = data(&format!("parity/{v}"));
        let computation = read(&dir.join("computation.mlirbc"));
        compute(
            Computation::Bytes(&computation),
            &inputs_of(&dir),
            recipe_of(&dir),
        )
        .unwrap()
        .key
    };
    assert_eq!(key("07a_gpu_assign_1"), key("07b_gpu_assign_0"));
}
