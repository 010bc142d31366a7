//! The sampling of hit audits against a fixed table (`data/audit_sampling.json`): the same
//! table is checked against the Python extension (python/tests/test_verify_hits.py), so one
//! seed picks the same hits in the CLI and under JAX.

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
