//! The Triton sweep (`tests/data/kernels/triton-sweep`, written by
//! `scripts/gen-triton-sweep.py` with JAX 0.12.0.1): every variant of a Pallas
//! Triton kernel lowered from three source sites that differ only in paths and
//! line numbers. Twins must share a stripped result; different programs must
//! not, before or after byte-level mutation.

use std::collections::HashMap;
use std::path::PathBuf;

use mck_bytecode::{StripOutput, strip_locations};

use super::common::kernel_manifest;

/// One kernel of the sweep.
struct Kernel {
    file: String,
    variant: String,
    /// Fingerprint of the kernel without debug info, as jaxlib prints it:
    /// equal exactly for the same program.
    program: String,
    payload: Vec<u8>,
}

fn sweep_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/kernels/triton-sweep")
}

fn sweep() -> Vec<Kernel> {
    kernel_manifest("triton-sweep")
        .into_iter()
        .map(|(cols, payload)| Kernel {
            file: cols[0].clone(),
            variant: cols[1].clone(),
            program: cols[3].clone(),
            payload,
        })
        .collect()
}

/// What a cache key sees: the stripped bytes, or the payload as it is when no
/// lossless rewrite was proven (`None` when the payload does not parse).
fn key_bytes(payload: &[u8]) -> Option<Vec<u8>> {
    match strip_locations(payload).ok()?.output {
        StripOutput::Stripped(bytes) => Some(bytes),
        StripOutput::Unchanged { .. } => Some(payload.to_vec()),
    }
}

#[test]
fn the_sweep_is_fresh_and_large_enough() {
    let kernels = sweep();
    let mut sites: HashMap<&str, usize> = HashMap::new();
    for k in &kernels {
        *sites.entry(&k.variant).or_default() += 1;
    }
    assert!(kernels.len() >= 60, "{} kernels", kernels.len());
    assert!(sites.values().all(|&n| n == 3), "three sites per variant");
    // Fresh: not the corpus pair.
    let corpus = std::fs::read(sweep_dir().join("../triton_add.a.mlirbc")).unwrap();
    assert!(kernels.iter().all(|k| k.payload != corpus));
}

#[test]
fn every_property_blob_decodes() {
    let mut decoded = 0;
    for k in sweep() {
        let report = strip_locations(&k.payload).expect(&k.file);
        assert!(
            report.blobs_undecoded.is_empty(),
            "{}: {:?}",
            k.file,
            report.blobs_undecoded
        );
        decoded += report.blobs_decoded;
    }
    eprintln!("{decoded} property blobs decoded by the table");
    assert!(decoded > 0);
}

#[test]
fn location_twins_share_their_stripped_bytes() {
    let kernels = sweep();
    let mut by_variant: HashMap<&str, Vec<&Kernel>> = HashMap::new();
    for k in &kernels {
        by_variant.entry(&k.variant).or_default().push(k);
    }
    let (mut pairs, mut shared, mut stripped) = (0, 0, 0);
    let mut split = Vec::new();
    for (variant, twins) in &by_variant {
        let keys: Vec<_> = twins.iter().map(|k| key_bytes(&k.payload)).collect();
        for k in twins.iter() {
            let report = strip_locations(&k.payload).expect(&k.file);
            if matches!(report.output, StripOutput::Stripped(_)) {
                stripped += 1;
            }
        }
        for i in 0..keys.len() {
            for j in i + 1..keys.len() {
                pairs += 1;
                if keys[i].is_some() && keys[i] == keys[j] {
                    shared += 1;
                } else {
                    split.push(format!("{variant}: {} / {}", twins[i].file, twins[j].file));
                }
            }
        }
    }
    eprintln!(
        "{} kernels, {stripped} stripped; {shared} of {pairs} location-only twin pairs share a result",
        kernels.len()
    );
    assert!(
        shared * 100 >= pairs * 95,
        "only {shared} of {pairs} twin pairs share a result: {split:#?}"
    );
}

#[test]
fn different_programs_keep_different_results() {
    let kernels = sweep();
    let mut seen: HashMap<Vec<u8>, &Kernel> = HashMap::new();
    for k in &kernels {
        let key = key_bytes(&k.payload).expect(&k.file);
        if let Some(other) = seen.get(&key) {
            assert_eq!(
                other.program, k.program,
                "{} and {} are different programs with one result",
                other.file, k.file
            );
        }
        seen.insert(key, k);
    }
    let programs: std::collections::HashSet<_> = kernels.iter().map(|k| &k.program).collect();
    eprintln!(
        "{} programs, {} distinct results",
        programs.len(),
        seen.len()
    );
    assert_eq!(programs.len(), seen.len(), "one result per program");
}

/// Every byte of a stripped kernel, changed, gives a payload that is rejected
/// or keyed apart from the original and from every other mutant: no two
/// distinct programs share a key. (Every other variant, one site: all sites
/// are the same after stripping; one change per byte, +1 or +0x80 in turn,
/// to keep the debug-build test under half a minute.)
#[test]
fn mutated_stripped_kernels_never_share_a_key() {
    let kernels = sweep();
    let mut checked = 0;
    let sample = kernels
        .iter()
        .filter(|k| k.file.ends_with(".a.mlirbc"))
        .step_by(2);
    for k in sample {
        let Some(stripped) = key_bytes(&k.payload) else {
            panic!("{} does not parse", k.file)
        };
        let mut keys: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        keys.insert(stripped.clone(), stripped.clone());
        for i in 0..stripped.len() {
            let delta = if i % 2 == 0 { 1u8 } else { 0x80 };
            let mut mutant = stripped.clone();
            mutant[i] = mutant[i].wrapping_add(delta);
            let Some(key) = key_bytes(&mutant) else {
                continue;
            };
            checked += 1;
            if let Some(previous) = keys.get(&key) {
                panic!(
                    "{}: byte {i} + {delta:#x} gives a key shared with a distinct payload{}",
                    k.file,
                    if *previous == stripped {
                        " (the original)"
                    } else {
                        ""
                    }
                );
            }
            keys.insert(key, mutant);
        }
    }
    eprintln!("{checked} parsing mutants keyed apart");
}
