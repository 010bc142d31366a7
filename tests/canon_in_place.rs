//! The library canonicalizes a borrowed module in place and puts it back: every corpus module
//! reads back byte for byte as it was (locations and attributes included), and its canonical
//! bytes equal those of a module canonicalized as the CLI does (owned, never put back); and the
//! library path walks the module once.

use crate::common::{corpus, read};
use melior::ir::Module;
use mlir_cache_key::canon::{CanonicalModule, KernelMode, Options};
use mlir_cache_key::mlir::{
    PRODUCER, new_context, parse_module, walks_on_this_thread, write_bytecode_with,
};

/// The module as it is, locations included: bytecode as any tool would write it.
fn as_is(module: &Module) -> Vec<u8> {
    let mut bytes = Vec::new();
    write_bytecode_with(module.as_operation().to_raw(), 6, PRODUCER, &mut |c| {
        bytes.extend_from_slice(c)
    })
    .expect("write");
    bytes
}

fn corpus_modules() -> Vec<std::path::PathBuf> {
    let mut paths = Vec::new();
    for dir in ["cpu", "gpu", "tpu"] {
        for entry in std::fs::read_dir(corpus(dir)).expect("corpus dir") {
            let path = entry.expect("entry").path();
            if path.to_string_lossy().ends_with(".generic.mlir") {
                paths.push(path);
            }
        }
    }
    paths.push(corpus("large/large_deep_ops.generic.mlir"));
    paths.sort();
    assert!(paths.len() >= 19, "the corpus is missing: {paths:?}");
    paths
}

fn option_sets() -> Vec<Options> {
    vec![
        Options::default(),
        Options {
            ignore_custom_partitioning: true,
            ..Options::default()
        },
        Options {
            keep_locations: true,
            ..Options::default()
        },
        Options {
            kernels: KernelMode::Keep,
            ..Options::default()
        },
        // Renames symbols throughout: canonicalized on a clone instead.
        Options {
            canonical_symbols: true,
            ..Options::default()
        },
    ]
}

#[test]
fn every_corpus_module_is_put_back_and_keys_as_the_cli_does() {
    let context = new_context();
    let mut checked = 0;
    for path in corpus_modules() {
        let source = read(&path);
        let name = path.display().to_string();
        let mut module = parse_module(&context, &source, &name).expect("parse");
        let before = as_is(&module);
        for options in option_sets() {
            let borrowed = {
                let canonical = CanonicalModule::of(&mut module, &options).expect("canonicalize");
                let bytes = canonical.to_bytes().expect("bytes");
                // With locations kept and nothing to strip, canonical is as it was.
                assert!(
                    options.keep_locations || bytes != before,
                    "{name} {options:?}: canonical bytes are the module as it was"
                );
                bytes
            };
            assert!(
                as_is(&module) == before,
                "{name} {options:?}: the module was not put back as it was"
            );
            let fresh = parse_module(&context, &source, &name).expect("parse again");
            let owned = CanonicalModule::from_owned(fresh, &options).expect("canonicalize owned");
            assert!(
                owned.to_bytes().expect("bytes") == borrowed,
                "{name} {options:?}: in place and owned canonical bytes differ"
            );
            checked += 1;
        }
    }
    assert!(checked >= 95, "{checked}");
}

#[test]
fn an_error_midway_puts_the_module_back() {
    // The corpus's Mosaic call (rewritten first), then one whose config is not JSON: stripping
    // fails after the first kernel changed.
    let text =
        String::from_utf8(read(&corpus("tpu/tpu_pallas_add.a.generic.mlir"))).expect("utf-8");
    let broken = "    %1 = \"stablehlo.custom_call\"(%0, %arg1) <{api_version = 1 : i32, \
                  backend_config = \"{not json\", call_target_name = \"tpu_custom_call\"}> \
                  : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32> loc(#loc15)\n";
    let at = text.find("    \"func.return\"(%0)").expect("the return");
    let text = format!("{}{broken}{}", &text[..at], &text[at..]);
    let context = new_context();
    let mut module = parse_module(&context, text.as_bytes(), "broken").expect("parse");
    let before = as_is(&module);
    let error = CanonicalModule::of(&mut module, &Options::default())
        .map(|_| ())
        .expect_err("a config that is not JSON");
    assert!(error.to_string().contains("backend_config"), "{error}");
    assert!(as_is(&module) == before, "not put back after: {error}");
}

#[test]
fn the_library_path_walks_the_module_once() {
    // Kernels of both kinds (stripped by the container rewriter, which walks no MLIR module).
    for file in [
        "tpu/tpu_pallas_add.a.generic.mlir",
        "gpu/cuda_pallas_triton_add.a.generic.mlir",
    ] {
        let context = new_context();
        let mut module = parse_module(&context, &read(&corpus(file)), file).expect("parse");
        let before = walks_on_this_thread();
        let digest = {
            let canonical = CanonicalModule::of(&mut module, &Options::default()).expect("canon");
            assert!(
                !canonical.report().kernels.is_empty(),
                "{file}: no kernel found"
            );
            canonical.digest().expect("digest")
        };
        assert_eq!(
            walks_on_this_thread() - before,
            1,
            "{file}: walks of one digest"
        );
        let before = walks_on_this_thread();
        let fresh = parse_module(&context, &read(&corpus(file)), file).expect("parse");
        let owned = CanonicalModule::from_owned(fresh, &Options::default()).expect("canon");
        assert_eq!(
            walks_on_this_thread() - before,
            1,
            "{file}: walks of the owned path"
        );
        assert_eq!(owned.digest().expect("digest"), digest, "{file}");
    }
}
