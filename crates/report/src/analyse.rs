//! Events → report. A miss line is joined with what the same process wrote next about the same
//! key (its cause, the remote tiers' answers, the entry it stored) up to that process's next
//! miss of the key; eviction lines of the same cache turn a later miss of the digest into
//! "evicted earlier".

use std::collections::{BTreeMap, HashMap, HashSet};

use mck_store::history::{Event, HistoryRead, TierAnswer, What};

use crate::Source;
use crate::model::*;

/// The modules listed, at most.
pub const TOP_MODULES: usize = 10;
const EXAMPLE_KEYS: usize = 3;
const TOP_DETAILS: usize = 5;
/// Most buckets a timeline has: the smallest of these widths that fits is used.
const MAX_BUCKETS: u64 = 60;
const BUCKET_WIDTHS_MS: [u64; 8] = [
    60_000,
    300_000,
    900_000,
    3_600_000,
    6 * 3_600_000,
    86_400_000,
    7 * 86_400_000,
    30 * 86_400_000,
];

/// Every cause a report groups by, with its label.
pub const CAUSES: [(&str, &str); 18] = [
    ("new_program", "new program: no stored entry of the module"),
    ("program_changed", "program changed"),
    ("compiler_version", "compiler version changed (jaxlib/XLA)"),
    (
        "xla_build",
        "XLA build changed (another binary of the same jaxlib version)",
    ),
    ("xla_flag", "XLA flag added, removed or changed"),
    ("compile_option", "compile option changed"),
    ("devices", "devices changed"),
    ("name", "module renamed"),
    ("other", "another key ingredient changed"),
    (
        "evicted",
        "evicted earlier (cache too small, or past its TTL)",
    ),
    ("remote_down", "a remote tier was down"),
    ("remote_hit", "found on a remote tier (nothing compiled)"),
    ("concurrent", "compiled by another process meanwhile"),
    ("corrupt_entry", "stored entry found damaged"),
    ("suspect", "entry condemned by a hit audit"),
    ("retry_failed", "remembered failure compiled again"),
    ("failure_replayed", "remembered failure replayed"),
    ("unexplained", "no cause recorded"),
];

/// The words for a cause code.
pub fn cause_label(code: &str) -> String {
    CAUSES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or_else(|| code.to_owned(), |(_, label)| (*label).to_owned())
}

/// The report over caches already read.
pub fn analyse(read: &[(Source, HistoryRead)], since_ms: i64, until_ms: i64) -> Report {
    let mut acc = Accumulator::default();
    let mut caches = Vec::new();
    for (source, history) in read {
        let events: Vec<&Event> = history.events.iter().filter(|e| e.t <= until_ms).collect();
        caches.push(CacheSource {
            dir: source.cache_dir.display().to_string(),
            events: events.len() as u64,
            unreadable_lines: history.unreadable,
            cache_size: source.cache_size,
        });
        acc.add_cache(&events);
    }
    let first = read
        .iter()
        .flat_map(|(_, h)| h.events.first())
        .map(|e| e.t)
        .min();
    acc.finish(caches, since_ms, until_ms, first)
}

/// A miss and what its process wrote about it next.
struct Lookup<'a> {
    event: &'a Event,
    key: &'a str,
    cause: &'static str,
    detail: Option<&'a str>,
    compile_ms: u64,
}

#[derive(Default)]
struct Accumulator {
    totals: Totals,
    /// (time, hit, miss, spent, saved)
    points: Vec<(i64, u64, u64, u64, u64)>,
    causes: BTreeMap<&'static str, CauseGroup>,
    details: BTreeMap<&'static str, BTreeMap<String, u64>>,
    modules: BTreeMap<String, ModuleLine>,
    hosts: BTreeMap<String, HostLine>,
    churn: Churn,
    tier_events: BTreeMap<String, Vec<(i64, TierAnswer)>>,
}

impl Accumulator {
    fn add_cache(&mut self, events: &[&Event]) {
        // Each process's events about each key, and where each key was stored, in order.
        let mut by_process: HashMap<(&str, u32, &str), Vec<usize>> = HashMap::new();
        let mut stores: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, e) in events.iter().enumerate() {
            if let Some(key) = key_of(&e.what) {
                by_process.entry((&e.host, e.pid, key)).or_default().push(i);
            }
            if let What::Stored { key, .. } = &e.what {
                stores.entry(key).or_default().push(i);
            }
        }
        let joins = Joins {
            events,
            by_process,
            stores,
        };
        // Digests evicted and not stored or used since.
        let mut evicted: HashSet<&str> = HashSet::new();
        let mut reuse = ReuseDistance::new(events.len());
        for (i, e) in events.iter().enumerate() {
            if let Some((digest, size)) = use_of(&e.what) {
                reuse.used(digest, i, size);
                evicted.remove(digest);
            }
            match &e.what {
                What::Hit { key, saved_ms, .. } => {
                    let saved = saved_ms.unwrap_or(0);
                    self.totals.hits += 1;
                    self.totals.compile_ms_saved += saved;
                    self.points.push((e.t, 1, 0, 0, saved));
                    self.module(key).hits += 1;
                    self.host(&e.host).hits += 1;
                }
                What::FailureReplayed { key } => {
                    self.totals.failures_replayed += 1;
                    self.group(
                        &Lookup {
                            event: e,
                            key,
                            cause: "failure_replayed",
                            detail: None,
                            compile_ms: 0,
                        },
                        false,
                    );
                }
                What::Miss { key, corrupt } => {
                    let lookup = joins.miss(&evicted, i, key, *corrupt);
                    self.totals.misses += 1;
                    self.points.push((e.t, 0, 1, 0, 0));
                    let module = self.module(key);
                    module.misses += 1;
                    module.compile_ms_spent += lookup.compile_ms;
                    self.host(&e.host).misses += 1;
                    if lookup.cause == "evicted" {
                        self.churn.recompiled_after_eviction += 1;
                        let needed = reuse.bytes_to_keep(digest_of(key), i);
                        self.churn.size_to_keep_them = self.churn.size_to_keep_them.max(needed);
                    }
                    self.group(&lookup, true);
                }
                What::Stored { compile_ms, .. } => {
                    let spent = compile_ms.unwrap_or(0);
                    self.totals.puts += 1;
                    self.totals.compile_ms_spent += spent;
                    self.points.push((e.t, 0, 0, spent, 0));
                }
                What::Evicted { digest, size } => {
                    self.totals.evictions += 1;
                    self.churn.evictions += 1;
                    self.churn.evicted_bytes += size;
                    evicted.insert(digest);
                }
                What::Tier { tier, answer, .. } => {
                    self.tier_events
                        .entry(tier.clone())
                        .or_default()
                        .push((e.t, *answer));
                }
                What::Cause { .. } => {}
            }
        }
    }

    fn module(&mut self, key: &str) -> &mut ModuleLine {
        let name = module_of(key);
        self.modules
            .entry(name.to_owned())
            .or_insert_with(|| ModuleLine {
                module: name.to_owned(),
                ..ModuleLine::default()
            })
    }

    fn host(&mut self, host: &str) -> &mut HostLine {
        self.hosts
            .entry(host.to_owned())
            .or_insert_with(|| HostLine {
                host: host.to_owned(),
                ..HostLine::default()
            })
    }

    fn group(&mut self, lookup: &Lookup<'_>, counts_compile: bool) {
        let group = self
            .causes
            .entry(lookup.cause)
            .or_insert_with(|| CauseGroup {
                cause: lookup.cause.to_owned(),
                label: cause_label(lookup.cause),
                ..CauseGroup::default()
            });
        group.count += 1;
        if counts_compile {
            group.compile_ms_spent += lookup.compile_ms;
        }
        if !group.hosts.contains(&lookup.event.host) {
            group.hosts.push(lookup.event.host.clone());
            group.hosts.sort();
        }
        if group.example_keys.len() < EXAMPLE_KEYS
            && !group.example_keys.iter().any(|k| k == lookup.key)
        {
            group.example_keys.push(lookup.key.to_owned());
        }
        if let Some(detail) = lookup.detail {
            *self
                .details
                .entry(lookup.cause)
                .or_default()
                .entry(detail.to_owned())
                .or_insert(0) += 1;
        }
    }

    fn finish(
        mut self,
        caches: Vec<CacheSource>,
        since_ms: i64,
        until_ms: i64,
        first_event: Option<i64>,
    ) -> Report {
        let t = &mut self.totals;
        t.lookups = t.hits + t.misses + t.failures_replayed;
        t.hit_rate = rate(t.hits, t.hits + t.misses);
        let start = since_ms.max(first_event.unwrap_or(since_ms)).min(until_ms);
        let timeline = timeline(&self.points, start, until_ms);
        let mut causes: Vec<CauseGroup> = std::mem::take(&mut self.causes)
            .into_values()
            .map(|mut group| {
                if let Some(details) = self.details.get(group.cause.as_str()) {
                    let mut details: Vec<DetailCount> = details
                        .iter()
                        .map(|(detail, count)| DetailCount {
                            detail: detail.clone(),
                            count: *count,
                        })
                        .collect();
                    details.sort_by(|a, b| b.count.cmp(&a.count).then(a.detail.cmp(&b.detail)));
                    details.truncate(TOP_DETAILS);
                    group.details = details;
                }
                group
            })
            .collect();
        causes.sort_by(|a, b| b.count.cmp(&a.count).then(a.cause.cmp(&b.cause)));
        let mut modules: Vec<ModuleLine> = self
            .modules
            .into_values()
            .filter(|m| m.misses > 0)
            .collect();
        modules.sort_by(|a, b| b.misses.cmp(&a.misses).then(a.module.cmp(&b.module)));
        modules.truncate(TOP_MODULES);
        let tiers = self
            .tier_events
            .into_iter()
            .map(|(tier, mut answers)| {
                answers.sort_by_key(|(t, _)| *t);
                tier_line(tier, &answers)
            })
            .collect();
        Report {
            schema: REPORT_SCHEMA.to_owned(),
            since_ms: since_ms.max(0) as u64,
            until_ms: until_ms.max(0) as u64,
            caches,
            totals: self.totals,
            timeline,
            causes,
            modules,
            hosts: self.hosts.into_values().collect(),
            eviction: self.churn,
            tiers,
        }
    }
}

/// What a miss is joined with: its process's later events about its key, and its key's stores.
struct Joins<'a, 'e> {
    events: &'e [&'a Event],
    by_process: HashMap<(&'a str, u32, &'a str), Vec<usize>>,
    stores: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Joins<'a, '_> {
    /// The miss at `i` joined with what its process wrote next about its key.
    fn miss(&self, evicted: &HashSet<&str>, i: usize, key: &'a str, corrupt: bool) -> Lookup<'a> {
        let event = self.events[i];
        let mut lookup = Lookup {
            event,
            key,
            cause: "unexplained",
            detail: None,
            compile_ms: 0,
        };
        let mine = &self.by_process[&(event.host.as_str(), event.pid, key)];
        let after = mine.partition_point(|&j| j <= i);
        let mut said: Option<(&'a str, &'a str)> = None;
        let (mut remote_hit, mut remote_down) = (false, false);
        for &j in &mine[after..] {
            match &self.events[j].what {
                What::Miss { .. } => break,
                What::Cause { cause, detail, .. } if said.is_none() => said = Some((cause, detail)),
                What::Tier { answer, .. } => match answer {
                    TierAnswer::Hit => remote_hit = true,
                    TierAnswer::Down => remote_down = true,
                    TierAnswer::Miss => {}
                },
                What::Stored { compile_ms, .. } => {
                    lookup.compile_ms += compile_ms.unwrap_or(0);
                }
                _ => {}
            }
        }
        let evicted_before = evicted.contains(digest_of(key));
        lookup.cause = if corrupt {
            "corrupt_entry"
        } else if remote_hit {
            "remote_hit"
        } else if evicted_before {
            "evicted"
        } else if remote_down {
            "remote_down"
        } else if let Some((cause, detail)) = said {
            lookup.detail = Some(detail);
            known_cause(cause)
        } else if self.stored_by_another(i, key) {
            "concurrent"
        } else {
            "unexplained"
        };
        lookup
    }

    /// True when another process stored `key` after the miss at `i`.
    fn stored_by_another(&self, i: usize, key: &str) -> bool {
        let me = self.events[i];
        let Some(stores) = self.stores.get(key) else {
            return false;
        };
        stores[stores.partition_point(|&j| j <= i)..]
            .iter()
            .any(|&j| {
                let e = self.events[j];
                e.host != me.host || e.pid != me.pid
            })
    }
}

/// A cause code as the report knows it (a newer writer's unknown code counts as `other`).
fn known_cause(code: &str) -> &'static str {
    CAUSES
        .iter()
        .map(|(c, _)| *c)
        .find(|c| *c == code)
        .unwrap_or("other")
}

/// LRU reuse distances in bytes, in O(log n) per event: each digest's size sits in a Fenwick
/// tree at its latest use, so the bytes at positions between an entry's last use and its miss
/// are those of the distinct entries used in between — what an LRU cache must hold besides it
/// to keep it.
struct ReuseDistance<'a> {
    tree: Vec<u64>,
    latest: HashMap<&'a str, (usize, u64)>,
}

impl<'a> ReuseDistance<'a> {
    fn new(events: usize) -> Self {
        ReuseDistance {
            tree: vec![0; events + 1],
            latest: HashMap::new(),
        }
    }

    /// `digest` (of `size` bytes) was used at event `at`.
    fn used(&mut self, digest: &'a str, at: usize, size: u64) {
        if let Some((before, old)) = self.latest.insert(digest, (at, size)) {
            self.add(before, old.wrapping_neg());
        }
        self.add(at, size);
    }

    /// The smallest LRU cache that would still hold `digest` at event `at`, if it was used.
    fn bytes_to_keep(&self, digest: &str, at: usize) -> Option<u64> {
        let &(last, own) = self.latest.get(digest)?;
        Some(own + self.prefix(at).wrapping_sub(self.prefix(last + 1)))
    }

    fn add(&mut self, at: usize, delta: u64) {
        let mut i = at + 1;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// The sum over positions below `end`.
    fn prefix(&self, end: usize) -> u64 {
        let (mut i, mut sum) = (end, 0u64);
        while i > 0 {
            sum = sum.wrapping_add(self.tree[i]);
            i -= i & i.wrapping_neg();
        }
        sum
    }
}

/// A hit or a store: the digest used and its entry's size.
fn use_of(what: &What) -> Option<(&str, u64)> {
    match what {
        What::Hit { key, size, .. } | What::Stored { key, size, .. } => {
            Some((digest_of(key), *size))
        }
        _ => None,
    }
}

fn key_of(what: &What) -> Option<&str> {
    match what {
        What::Hit { key, .. }
        | What::FailureReplayed { key }
        | What::Miss { key, .. }
        | What::Cause { key, .. }
        | What::Stored { key, .. }
        | What::Tier { key, .. } => Some(key),
        What::Evicted { .. } => None,
    }
}

/// `name-<digest>` → digest (a bare digest stays as it is).
fn digest_of(key: &str) -> &str {
    key.rsplit_once('-').map_or(key, |(_, digest)| digest)
}

/// `name-<digest>` → name (a bare digest names no module).
fn module_of(key: &str) -> &str {
    key.rsplit_once('-').map_or("(unknown)", |(name, _)| name)
}

fn rate(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

fn timeline(points: &[(i64, u64, u64, u64, u64)], start: i64, until: i64) -> Vec<Bucket> {
    let span = (until - start).max(1) as u64;
    let width = BUCKET_WIDTHS_MS
        .into_iter()
        .find(|w| span.div_ceil(*w) <= MAX_BUCKETS)
        .unwrap_or_else(|| span.div_ceil(MAX_BUCKETS));
    let first = start.max(0) as u64 / width * width;
    let count = (until.max(0) as u64).saturating_sub(first) / width + 1;
    let mut buckets: Vec<Bucket> = (0..count)
        .map(|n| Bucket {
            start_ms: first + n * width,
            ..Bucket::default()
        })
        .collect();
    for &(t, hit, miss, spent, saved) in points {
        let Some(n) = (t.max(0) as u64).checked_sub(first).map(|d| d / width) else {
            continue;
        };
        if let Some(b) = buckets.get_mut(n as usize) {
            b.hits += hit;
            b.misses += miss;
            b.compile_ms_spent += spent;
            b.compile_ms_saved += saved;
        }
    }
    buckets
}

fn tier_line(tier: String, answers: &[(i64, TierAnswer)]) -> TierLine {
    let mut line = TierLine {
        tier,
        lookups: answers.len() as u64,
        ..TierLine::default()
    };
    // (first failed answer, latest failed answer) of the outage under way.
    let mut outage: Option<(i64, i64)> = None;
    for &(t, answer) in answers {
        match answer {
            TierAnswer::Hit => line.hits += 1,
            TierAnswer::Miss => line.misses += 1,
            TierAnswer::Down => line.down += 1,
        }
        outage = match (answer, outage) {
            (TierAnswer::Down, None) => {
                line.outages += 1;
                Some((t, t))
            }
            (TierAnswer::Down, Some((from, _))) => Some((from, t)),
            (_, Some((from, _))) => {
                line.downtime_ms += (t - from).max(0) as u64;
                None
            }
            (_, None) => None,
        };
    }
    if let Some((from, to)) = outage {
        line.downtime_ms += (to - from).max(0) as u64;
    }
    line.hit_rate = rate(line.hits, line.lookups);
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn at(t: i64, pid: u32, what: What) -> Event {
        Event {
            t,
            host: format!("h{}", pid % 2),
            pid,
            run: None,
            what,
        }
    }

    fn digest(c: char) -> String {
        c.to_string().repeat(64)
    }

    fn key(c: char) -> String {
        format!("jit_f-{}", digest(c))
    }

    fn stored(t: i64, pid: u32, c: char, size: u64, ms: u64) -> Event {
        at(
            t,
            pid,
            What::Stored {
                key: key(c),
                size,
                compile_ms: Some(ms),
                failed: false,
            },
        )
    }

    fn miss(t: i64, pid: u32, c: char) -> Event {
        at(
            t,
            pid,
            What::Miss {
                key: key(c),
                corrupt: false,
            },
        )
    }

    fn analysed(events: Vec<Event>) -> Report {
        let source = Source {
            cache_dir: PathBuf::from("/c"),
            cache_size: Some(100),
        };
        let read = HistoryRead {
            events,
            unreadable: 0,
        };
        analyse(&[(source, read)], 0, 1_000_000)
    }

    #[test]
    fn a_miss_takes_its_own_process_cause_and_compile_time_and_an_eviction_overrides_it() {
        let report = analysed(vec![
            miss(1, 1, 'a'),
            miss(2, 2, 'a'),
            at(
                3,
                1,
                What::Cause {
                    key: key('a'),
                    cause: "new_program".into(),
                    detail: "no stored entry".into(),
                },
            ),
            stored(4, 1, 'a', 40, 900),
            stored(5, 3, 'b', 70, 100),
            at(
                6,
                3,
                What::Evicted {
                    digest: digest('a'),
                    size: 40,
                },
            ),
            miss(7, 1, 'a'),
            at(
                8,
                1,
                What::Cause {
                    key: key('a'),
                    cause: "new_program".into(),
                    detail: "no stored entry".into(),
                },
            ),
            stored(9, 1, 'a', 40, 800),
        ]);
        let causes: Vec<(&str, u64, u64)> = report
            .causes
            .iter()
            .map(|c| (c.cause.as_str(), c.count, c.compile_ms_spent))
            .collect();
        assert_eq!(
            causes,
            vec![
                ("concurrent", 1, 0),
                ("evicted", 1, 800),
                ("new_program", 1, 900)
            ]
        );
        assert_eq!(report.totals.misses, 3);
        assert_eq!(report.totals.compile_ms_spent, 1800);
        assert_eq!(report.eviction.recompiled_after_eviction, 1);
        assert_eq!(
            report.eviction.size_to_keep_them,
            Some(110),
            "a's 40 + b's 70"
        );
        assert_eq!(report.causes[2].details[0].detail, "no stored entry");
    }

    #[test]
    fn remote_answers_name_the_cause_and_outages_are_timed() {
        let tier = |t, answer| {
            at(
                t,
                1,
                What::Tier {
                    tier: "redis://r".into(),
                    key: key('a'),
                    answer,
                },
            )
        };
        let report = analysed(vec![
            miss(10, 1, 'a'),
            tier(11, TierAnswer::Down),
            miss(20, 1, 'a'),
            tier(21, TierAnswer::Down),
            miss(30, 1, 'a'),
            tier(31, TierAnswer::Hit),
        ]);
        let causes: Vec<_> = report
            .causes
            .iter()
            .map(|c| (c.cause.as_str(), c.count))
            .collect();
        assert_eq!(causes, vec![("remote_down", 2), ("remote_hit", 1)]);
        let t = &report.tiers[0];
        assert_eq!((t.lookups, t.hits, t.down, t.outages), (3, 1, 2, 1));
        assert_eq!(
            t.downtime_ms, 20,
            "from the first failure to the next answer"
        );
    }

    #[test]
    fn reuse_distances_equal_the_distinct_bytes_used_in_between() {
        const DIGESTS: [&str; 7] = ["a", "b", "c", "d", "e", "f", "g"];
        let mut reuse = ReuseDistance::new(500);
        let mut uses: Vec<(&str, u64)> = Vec::new();
        let mut seed = 7u64;
        for at in 0..500 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let digest = DIGESTS[(seed >> 33) as usize % DIGESTS.len()];
            let size = 1 + (seed >> 40) % 1000;
            if let Some(last) = uses.iter().rposition(|(d, _)| *d == digest) {
                let mut between: HashMap<&str, u64> = HashMap::new();
                for (d, s) in &uses[last + 1..] {
                    if *d != digest {
                        between.insert(d, *s);
                    }
                }
                let naive = uses[last].1 + between.values().sum::<u64>();
                assert_eq!(reuse.bytes_to_keep(digest, at), Some(naive), "at {at}");
            }
            reuse.used(digest, at, size);
            uses.push((digest, size));
        }
        assert_eq!(reuse.bytes_to_keep("never", 500), None);
    }

    #[test]
    fn an_empty_history_reports_zeroes_and_no_rate() {
        let report = analysed(Vec::new());
        assert_eq!(report.totals, Totals::default());
        assert!(report.causes.is_empty() && report.tiers.is_empty());
        assert!(!report.timeline.is_empty());
    }
}
