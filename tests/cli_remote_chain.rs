//! A chain of remote tiers with real processes and two real Redis servers on loopback (each
//! test starts its own: `remote/redis.rs`, never a silent pass): `--remote` given once per tier,
//! fastest first. A hit in a slower tier back-fills the faster ones and the local cache; a put
//! reaches every writable tier and never a read-only one; a dead tier is skipped and counted
//! while the others serve; one lease guards a compile across hosts; `cache stats` has a row
//! per tier; the configuration file's list, repeated flags and `MLIR_CACHE_KEY_FLAGS` make the
//! same chain.

use crate::common::{success, success_at_info, success_stderr};
use crate::redis::Target;
use crate::team::Team;
use crate::{common, redis};
use serde_json::Value;

/// A port nobody listens on: connections are refused at once.
const DEAD_TIER: &str = "redis://127.0.0.1:1/0";

/// Two servers, each its own tier.
fn two_servers(test: &str) -> Option<(Target, Target)> {
    let fast = redis::private(&format!("{test}_fast"))?;
    let slow = redis::private(&format!("{test}_slow"))?;
    Some((fast, slow))
}

/// `--remote` values for these tiers, in order.
fn chain(tiers: &[&str]) -> String {
    tiers.join(" ")
}

/// Tier `i`'s row of `cache stats --json`.
fn tier(stats: &Value, i: usize) -> &Value {
    &stats["tiers"][i]
}

/// `(hits, misses, writes, backfills)` of one tier's row.
fn counts(row: &Value) -> (u64, u64, u64, u64) {
    let n = |k: &str| row[k].as_u64().unwrap_or_else(|| panic!("{k} in {row}"));
    (n("hits"), n("misses"), n("writes"), n("backfills"))
}

#[test]
fn a_hit_in_the_second_tier_fills_the_first_and_local_and_the_next_hit_is_local() {
    let (fast, slow) = redis_or_skip!(two_servers("backfill"));
    let mut team = Team::new(slow.url());
    success_stderr(&mut team.exec("a", "a.mlir"));
    assert_eq!(team.runs(), 1);
    assert_eq!(slow.entry_keys().len(), 1);
    assert!(fast.entry_keys().is_empty());

    team.remote = chain(&[&fast.url(), &slow.url()]);
    let stderr = success_at_info(&mut team.exec("b", "a.mlir"));
    assert!(
        stderr.contains(&format!("Using a cached artefact from {}", slow.url())),
        "{stderr}"
    );
    assert_eq!(team.runs(), 1, "host b used tier 2's entry");
    team.assert_same_output("a", "b", "a.mlir");
    assert_eq!(fast.entry_keys().len(), 1, "tier 1 is back-filled");
    let b = team.stats("b");
    assert_eq!(b["entries"], 1, "local is back-filled");
    assert_eq!(counts(tier(&b, 0)), (0, 1, 1, 1), "{b}");
    assert_eq!(counts(tier(&b, 1)), (1, 0, 0, 0), "{b}");
    let entry_len = tier(&b, 0)["bytes_written"].as_u64().unwrap();
    assert!(entry_len > 0, "{b}");
    assert_eq!(tier(&b, 1)["bytes_read"].as_u64(), Some(entry_len), "{b}");

    // The next hit on b is local: no tier is asked.
    std::fs::remove_file(team.out("b", "a.mlir")).expect("remove");
    success_stderr(&mut team.exec("b", "a.mlir"));
    team.assert_same_output("a", "b", "a.mlir");
    let again = team.stats("b");
    assert_eq!(again["tiers"], b["tiers"], "a local hit asks no tier");
    // Another host now stops at tier 1.
    success_stderr(&mut team.exec("c", "a.mlir"));
    let c = team.stats("c");
    assert_eq!(counts(tier(&c, 0)), (1, 0, 0, 0), "{c}");
    assert_eq!(counts(tier(&c, 1)), (0, 0, 0, 0), "{c}");
    assert_eq!(team.runs(), 1);
}

#[test]
fn a_put_goes_to_every_writable_tier_and_never_to_a_read_only_one() {
    let (first, third) = redis_or_skip!(two_servers("put_all"));
    // The read-only tier: another prefix on the first server.
    let read_only = format!("{}-ro?read_only=1", first.url());
    let mut team = Team::new(chain(&[&first.url(), &read_only, &third.url()]));
    success_stderr(&mut team.exec("a", "a.mlir"));
    assert_eq!(first.entry_keys().len(), 1);
    assert_eq!(third.entry_keys().len(), 1);
    // Keys under the read-only tier's prefix (`Target::keys` scans the first tier's only).
    let ro_keys = |t: &Target| -> Vec<String> {
        let pattern = format!("{}-ro/*", t.prefix);
        let scan = t.cli(&["--scan", "--pattern", &pattern]);
        scan.lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let written_to_ro = ro_keys(&first);
    assert!(written_to_ro.is_empty(), "{written_to_ro:?}");
    let a = team.stats("a");
    assert_eq!(tier(&a, 1)["read_only"], true, "{a}");
    assert_eq!(
        (
            tier(&a, 0)["writes"].as_u64(),
            tier(&a, 1)["writes"].as_u64(),
            tier(&a, 2)["writes"].as_u64()
        ),
        (Some(1), Some(0), Some(1)),
        "{a}"
    );
    assert_eq!(a["remote_writes"], 2);

    // A hit in the last tier back-fills the writable first one, never the read-only one.
    team.remote = chain(&[&read_only, &third.url()]);
    success_stderr(&mut team.exec("b", "a.mlir"));
    assert_eq!(team.runs(), 1);
    let b = team.stats("b");
    assert_eq!(counts(tier(&b, 0)), (0, 1, 0, 0), "{b}");
    assert_eq!(counts(tier(&b, 1)), (1, 0, 0, 0), "{b}");
    assert!(
        ro_keys(&first).is_empty(),
        "the read-only tier got a backfill"
    );
}

#[test]
fn a_dead_tier_is_skipped_and_counted_while_the_chain_hits_the_next() {
    let (live, _spare) = redis_or_skip!(two_servers("dead_tier"));
    let mut team = Team::new(live.url());
    success_stderr(&mut team.exec("a", "a.mlir"));

    team.remote = chain(&[DEAD_TIER, &live.url()]);
    let stderr = success_stderr(&mut team.exec("b", "a.mlir"));
    assert_eq!(team.runs(), 1, "the live tier served despite the dead one");
    team.assert_same_output("a", "b", "a.mlir");
    let lines: Vec<&str> = stderr.lines().collect();
    let warned: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains(DEAD_TIER))
        .collect();
    assert_eq!(warned.len(), 1, "one warning about the dead tier: {stderr}");
    let warning = lines[warned[0]];
    assert!(
        warning.contains("remote cache unavailable, going on with the other tiers")
            && warning.contains("cannot "),
        "names the operation and the cause: {warning}"
    );
    assert!(
        !lines.get(warned[0] + 1).is_some_and(|l| l.starts_with(' ')),
        "no nested dump after the warning: {stderr}"
    );
    // b.mlir: the dead tier's breaker is open now (skipped), the live tier still answers.
    success_stderr(&mut team.exec("b", "b.mlir"));
    assert_eq!(team.runs(), 2);
    let b = team.stats("b");
    let dead = tier(&b, 0);
    assert!(dead["errors"].as_u64() >= Some(1), "{b}");
    assert!(dead["skipped"].as_u64() >= Some(1), "{b}");
    assert!(dead["down_until_ms"].is_i64(), "{b}");
    let alive = tier(&b, 1);
    common::assert_counters(alive, ["hits", "writes"], [1, 1]);
    assert!(
        alive["down_until_ms"].is_null(),
        "its own breaker stays closed: {b}"
    );
    common::assert_counters(alive, ["errors", "skipped"], [0, 0]);
    let text = team.stats_text("b");
    common::assert_contains(
        &text,
        &[
            &format!("tier 1              {DEAD_TIER} (down until "),
            &format!("tier 2              {}: 1 hits / 1 misses", live.url()),
            &format!("remote lease        {DEAD_TIER} (one compile per key across hosts)"),
        ],
    );
}

#[test]
fn one_lease_across_two_cache_dirs_through_the_chain() {
    let (fast, slow) = redis_or_skip!(two_servers("chain_lease"));
    let team = Team::new(chain(&[&fast.url(), &slow.url()]));
    let outputs = team.race(&["h1", "h2"], "a.mlir", "2");
    assert_eq!(team.runs(), 1, "two cache directories, one compile");
    let waited: Vec<String> = outputs
        .iter()
        .map(common::stderr)
        .filter(|e| e.contains("Blocking waiting for"))
        .collect();
    assert_eq!(waited.len(), 1, "{waited:?}");
    assert!(
        waited[0].contains(&format!("(lease on {},", fast.url())),
        "the first tier leases: {}",
        waited[0]
    );
    assert!(fast.keys().iter().all(|k| !k.contains("/leases/")));
    assert!(
        slow.keys().iter().all(|k| !k.contains("/leases/")),
        "only tier 1 leases"
    );
    assert_eq!(team.stats("h1")["lease_tier"], fast.url());
}

#[test]
fn the_config_file_list_and_repeated_flags_give_the_same_chain() {
    let (fast, slow) = redis_or_skip!(two_servers("chain_sources"));
    let read_only = format!("{}?read_only=1", slow.url());
    let mut team = Team::new(chain(&[&fast.url(), &read_only]));
    let by_flags = team.stats("flags");
    let tiers = &by_flags["tiers"];
    assert_eq!(tiers[0]["url"], fast.url(), "{by_flags}");
    assert_eq!(tiers[1]["url"], slow.url(), "{by_flags}");
    assert_eq!(
        (
            tiers[0]["read_only"].as_bool(),
            tiers[1]["read_only"].as_bool()
        ),
        (Some(false), Some(true))
    );

    team.remote = String::new();
    let list = format!("[{}, {read_only}]", fast.url());
    success(&mut team.mck("file", &["config", "set", "remote", &list]));
    let by_file = team.stats("file");
    assert_eq!(by_file["tiers"], *tiers, "{by_file}");
    let shown = String::from_utf8(success(&mut team.mck("file", &["config", "show"]))).unwrap();
    assert!(shown.contains(&list), "{shown}");

    let variable = format!("--remote={} --remote={read_only}", fast.url());
    let by_variable = team.stats_with("variable", &[]);
    assert!(by_variable["tiers"].as_array().unwrap().is_empty());
    let mut stats = team.mck("variable", &["cache", "stats", "--json"]);
    stats.env("MLIR_CACHE_KEY_FLAGS", &variable);
    let by_variable: Value = serde_json::from_slice(&success(&mut stats)).unwrap();
    assert_eq!(by_variable["tiers"], *tiers, "{by_variable}");

    // The file's chain is used: a compile there fills the writable tier only.
    success_stderr(&mut team.exec("file", "a.mlir"));
    assert_eq!(fast.entry_keys().len(), 1);
    assert!(slow.entry_keys().is_empty(), "tier 2 is read-only");
}
