//! Links Debian's MLIR 22 and builds the C++ shim.
//!
//! - MLIR lives in `libMLIR.so`; its C API ships only as static
//!   `libMLIRCAPI*.a` archives, while mlir-sys (shared mode) asks for
//!   `-lMLIR-C`. We provide `libMLIR-C.so` as a GNU ld linker script that
//!   groups those archives, so one shared MLIR is in the process (the pass
//!   plugin must share mlir-opt's registry).
//! - The shim (`shim/`) is compiled with LLVM 22's C++ flags, and bindgen turns
//!   its header into the Rust declarations: one source of truth for the FFI.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let prefix = PathBuf::from(
        env::var("MLIR_SYS_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".to_string()),
    );
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    println!("cargo:rerun-if-changed=shim");
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let llvm_config = prefix.join("bin/llvm-config");
    let lib_dir = PathBuf::from(llvm_config_output(&llvm_config, "--libdir"));
    let include_dir = llvm_config_output(&llvm_config, "--includedir");
    // For `--version`.
    println!(
        "cargo:rustc-env=MCK_MLIR_VERSION={}",
        llvm_config_output(&llvm_config, "--version")
    );

    write_capi_linker_script(&lib_dir, &out_dir);
    println!("cargo:rustc-link-search=native={}", out_dir.display());
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    // libMLIR.so is not on the default loader path.
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib_dir.display());

    compile_shim(&llvm_config);
    generate_bindings(&include_dir, &out_dir);
}

fn llvm_config_output(llvm_config: &Path, arg: &str) -> String {
    let output = Command::new(llvm_config)
        .arg(arg)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} (install LLVM 22 with scripts/setup.sh): {e}",
                llvm_config.display()
            )
        });
    assert!(
        output.status.success(),
        "{} {arg} failed",
        llvm_config.display()
    );
    String::from_utf8(output.stdout)
        .expect("llvm-config prints UTF-8")
        .trim()
        .to_string()
}

fn write_capi_linker_script(lib_dir: &Path, out_dir: &Path) {
    let mut archives: Vec<String> = fs::read_dir(lib_dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", lib_dir.display()))
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libMLIRCAPI") && n.ends_with(".a"))
        })
        .map(|path| path.display().to_string())
        .collect();
    archives.sort();
    assert!(
        !archives.is_empty(),
        "no libMLIRCAPI*.a in {} (install libmlir-22-dev)",
        lib_dir.display()
    );
    let script = format!("GROUP ( {} )\n", archives.join(" "));
    fs::write(out_dir.join("libMLIR-C.so"), script).expect("write libMLIR-C.so linker script");
}

fn compile_shim(llvm_config: &Path) {
    let mut build = cc::Build::new();
    // Warnings on for the shim; LLVM's own headers come in as system headers.
    build
        .cpp(true)
        .include("shim/include")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true);
    let include_dir = llvm_config_output(llvm_config, "--includedir");
    for flag in llvm_config_output(llvm_config, "--cxxflags").split_whitespace() {
        match flag.strip_prefix("-I") {
            Some(dir) if dir == include_dir => {
                build.flag(format!("-isystem{dir}"));
            }
            _ => {
                build.flag(flag);
            }
        }
    }
    for file in [
        "bytecode.cpp",
        "parse.cpp",
        "passes.cpp",
        "symbols.cpp",
        "walk.cpp",
    ] {
        let path = Path::new("shim/lib").join(file);
        println!("cargo:rerun-if-changed={}", path.display());
        build.file(path);
    }
    build.compile("mlir_cache_key_shim");
}

fn generate_bindings(include_dir: &str, out_dir: &Path) {
    let header = "shim/include/mlir_cache_key/shim.h";
    println!("cargo:rerun-if-changed={header}");
    bindgen::Builder::default()
        .header(header)
        .clang_arg(format!("-I{include_dir}"))
        .allowlist_function("mck.*")
        .allowlist_type("Mck.*")
        // MLIR's C types come from mlir-sys, so handles pass between both.
        .blocklist_type("Mlir.*")
        .raw_line("use mlir_sys::*;")
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate()
        .expect("bindgen on shim.h")
        .write_to_file(out_dir.join("shim_bindings.rs"))
        .expect("write shim bindings");
}
