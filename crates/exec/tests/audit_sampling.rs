//! Hit audits have one home (`mck_exec::audit`). The sampling against a fixed table
//! (`data/audit_sampling.json`): the same table is checked against the Python extension
//! (python/tests/test_verify_hits.py), so one seed picks the same hits in the CLI and under
//! JAX. And the Python side spells no outcome, checks no rate and samples nothing itself.

use mck_exec::audit::{Sampler, sampled};
use serde_json::Value;

fn table() -> Vec<Value> {
    let text = include_str!("data/audit_sampling.json");
    let doc: Value = serde_json::from_str(text).expect("the table is JSON");
    doc["rows"].as_array().expect("rows").clone()
}

#[test]
fn the_table_of_decisions_holds() {
    let rows = table();
    assert!(rows.len() >= 50, "{} rows", rows.len());
    let (mut yes, mut no) = (0, 0);
    for row in &rows {
        let seed = row["seed"].as_str().unwrap();
        let rate = row["rate"].as_f64().unwrap();
        let key = row["key"].as_str().unwrap();
        let earlier = row["earlier"].as_u64().unwrap();
        let want = row["sampled"].as_bool().unwrap();
        assert_eq!(sampled(seed, rate, key, earlier), want, "{row}");
        if rate > 0.0 && rate < 1.0 {
            if want { yes += 1 } else { no += 1 }
        }
    }
    // Fractional rates decide both ways in the table, so it pins the draw, not the bounds.
    assert!(yes >= 5 && no >= 5, "{yes} sampled, {no} not");
}

#[test]
fn a_sampler_asks_the_table_function_in_order() {
    for row in table().iter().filter(|r| r["earlier"] == 0) {
        let sampler = Sampler::new(Some(row["seed"].as_str().unwrap().to_owned()));
        let rate = row["rate"].as_f64().unwrap();
        let key = row["key"].as_str().unwrap();
        assert_eq!(
            sampler.sample(rate, key),
            row["sampled"].as_bool().unwrap(),
            "{row}"
        );
    }
}

#[test]
fn python_spells_no_outcome_and_samples_nothing_itself() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for file in [
        "python/mlir_cache_key/_audit.py",
        "python/mlir_cache_key/jax.py",
        "python/src/audit.rs",
        "python/src/lib.rs",
    ] {
        let text = std::fs::read_to_string(repo.join(file)).expect(file);
        for outcome in mck_exec::audit::OUTCOMES {
            let name = mck_exec::audit::outcome_name(outcome);
            for spelling in [name.to_owned(), name.replace(' ', "_")] {
                for quoted in [format!("\"{spelling}\""), format!("'{spelling}'")] {
                    assert!(!text.contains(&quoted), "{file} spells {quoted} itself");
                }
            }
        }
        for own in ["import random", "random.Random", "0.0 <= value <= 1.0"] {
            assert!(!text.contains(own), "{file}: {own}");
        }
    }
}
