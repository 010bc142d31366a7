//! Relocated kernels (`tests/data/kernels/relocations`, written by
//! `scripts/gen-kernel-relocations.py` with JAX 0.12.0.1): Pallas Triton and
//! Mosaic kernels lowered from programs at other path depths, file names,
//! lines and call-site chains (0, 1 or 3 wrappers in other files), and
//! random location rewrites of the repository's real kernels. Every twin
//! (same program fingerprint) must give the same stripped bytes, every other
//! program different ones; and the stripped bytes must be what MLIR's own
//! writer produces for the kernel after `strip-debuginfo`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use mck_bytecode::{StripOutput, strip_locations};
use sha2::{Digest, Sha256};

use super::common::kernel_manifest;

/// One generated kernel.
struct Kernel {
    file: String,
    /// Fingerprint of the kernel without debug info, as jaxlib prints it.
    program: String,
    /// SHA-256 of what jaxlib's MLIR writes after `strip-debuginfo`.
    mlir_stripped: String,
    payload: Vec<u8>,
}

fn relocations_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/kernels/relocations")
}

fn relocations() -> Vec<Kernel> {
    kernel_manifest("relocations")
        .into_iter()
        .map(|(cols, payload)| Kernel {
            file: cols[0].clone(),
            program: format!("{}:{}", cols[1], cols[4]),
            mlir_stripped: cols[5].clone(),
            payload,
        })
        .collect()
}

/// The stripped bytes; panics when the kernel is not stripped (every
/// generated kernel must be).
fn stripped(k: &Kernel) -> Vec<u8> {
    let report = strip_locations(&k.payload).expect(&k.file);
    match report.output {
        StripOutput::Stripped(bytes) => bytes,
        StripOutput::Unchanged { reason } => panic!("{}: not stripped: {reason}", k.file),
    }
}

#[test]
fn the_generated_set_moves_every_program_across_sites() {
    let kernels = relocations();
    let mut sites: BTreeMap<&str, BTreeSet<&[u8]>> = BTreeMap::new();
    for k in &kernels {
        sites.entry(&k.program).or_default().insert(&k.payload);
    }
    assert!(sites.len() >= 12, "{} programs", sites.len());
    for backend in ["triton:", "mosaic:"] {
        assert!(sites.keys().filter(|p| p.starts_with(backend)).count() >= 5);
    }
    // Every program is lowered at five sites, whose payloads all differ.
    assert!(
        sites.values().all(|payloads| payloads.len() >= 5),
        "{sites:?}"
    );
}

#[test]
fn twins_share_stripped_bytes_and_programs_stay_apart() {
    let mut results: BTreeMap<Vec<u8>, BTreeSet<String>> = BTreeMap::new();
    let mut by_program: BTreeMap<String, BTreeSet<Vec<u8>>> = BTreeMap::new();
    for k in relocations() {
        let bytes = stripped(&k);
        results
            .entry(bytes.clone())
            .or_default()
            .insert(k.program.clone());
        by_program.entry(k.program).or_default().insert(bytes);
    }
    let split: Vec<_> = by_program
        .iter()
        .filter(|(_, r)| r.len() > 1)
        .map(|(p, r)| format!("{p}: {} results", r.len()))
        .collect();
    assert!(split.is_empty(), "twins apart: {split:?}");
    let merged: Vec<_> = results.values().filter(|p| p.len() > 1).collect();
    assert!(merged.is_empty(), "programs merged: {merged:?}");
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn stripped_bytes_are_what_mlir_writes_without_locations() {
    let mismatched: Vec<String> = relocations()
        .iter()
        .filter(|k| sha256_hex(&stripped(k)) != k.mlir_stripped)
        .map(|k| k.file.clone())
        .collect();
    assert!(
        mismatched.is_empty(),
        "not MLIR's numbering: {mismatched:?}"
    );
}

#[test]
fn random_location_rewrites_of_real_kernels_strip_like_the_original() {
    let data = relocations_dir().join("../..");
    let mut checked = 0;
    for (cols, payload) in kernel_manifest("relocations/rewrites") {
        let rewrite = Kernel {
            file: cols[0].clone(),
            program: cols[2].clone(),
            mlir_stripped: String::new(),
            payload,
        };
        let original = Kernel {
            file: cols[1].clone(),
            program: cols[2].clone(),
            mlir_stripped: String::new(),
            payload: std::fs::read(data.join(&cols[1])).expect(&cols[1]),
        };
        assert_ne!(rewrite.payload, original.payload);
        assert_eq!(rewrite.program, original.program);
        assert!(
            stripped(&rewrite) == stripped(&original),
            "{} strips apart from {}",
            rewrite.file,
            original.file
        );
        checked += 1;
    }
    assert!(checked >= 50, "{checked} rewrites");
}
