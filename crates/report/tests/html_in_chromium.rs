//! The HTML report as a browser shows it: Debian's headless Chromium renders the page of a
//! hand-made report (with every network fetch sent to a dead proxy) to a screenshot, which must
//! show the plots in their colours, and dumps its DOM, whose `data-field` values must equal the
//! report's JSON.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::BufReader;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mck_report::html::{
    CAUSES_COLOUR, HIT_RATE_COLOUR, HITS_COLOUR, MISSES_COLOUR, SAVED_COLOUR, SPENT_COLOUR,
    TIERS_COLOUR, html,
};
use mck_report::{
    Bucket, CacheSource, CauseGroup, Churn, DetailCount, HostLine, ModuleLine, REPORT_SCHEMA,
    Report, TierLine, Totals,
};
use serde_json::Value;

/// A hung Chromium fails its test instead of blocking the suite.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(60);
use mck_report::html::PLOT_IDS;
/// Names with markup, quotes, ampersands and dots: they must come back as text, unchanged.
const HOSTILE_MODULE: &str = r#"<script>alert("module")</script>"#;
const HOSTILE_TIER: &str = r#"s3 "eu.west" <b>&amp;</b>"#;

const HOUR_MS: u64 = 3_600_000;
const SINCE_MS: u64 = 1_718_409_600_000; // 2024-06-15 00:00 UTC

fn bucket(hour: u64, hits: u64, misses: u64, spent: u64, saved: u64) -> Bucket {
    Bucket {
        start_ms: SINCE_MS + hour * HOUR_MS,
        hits,
        misses,
        compile_ms_spent: spent,
        compile_ms_saved: saved,
    }
}

fn cause(code: &str, label: &str, count: u64, hosts: &[&str]) -> CauseGroup {
    CauseGroup {
        cause: code.to_string(),
        label: label.to_string(),
        count,
        hosts: hosts.iter().map(|host| host.to_string()).collect(),
        example_keys: (0..count.min(3))
            .map(|i| format!("train_step-{i:02}{code}"))
            .collect(),
        details: vec![
            DetailCount {
                detail: format!("{label}: a → b"),
                count: count - count / 3,
            },
            DetailCount {
                detail: format!("{label}: b → c"),
                count: count / 3,
            },
        ],
        // 4.1 s per miss.
        compile_ms_spent: count * 4_100,
    }
}

fn tier(name: &str, hits: u64, misses: u64, down: u64, downtime_ms: u64, outages: u64) -> TierLine {
    let lookups = hits + misses + down;
    TierLine {
        tier: name.to_string(),
        lookups,
        hits,
        misses,
        down,
        hit_rate: Some(hits as f64 / lookups as f64),
        downtime_ms,
        outages,
    }
}

/// Eight hourly buckets, five causes, two tiers, three hosts.
fn report() -> Report {
    let timeline = vec![
        bucket(0, 4, 40, 164_000, 12_000),
        bucket(1, 25, 18, 73_800, 75_000),
        bucket(2, 60, 12, 49_200, 180_000),
        bucket(3, 80, 5, 20_500, 240_000),
        bucket(4, 0, 0, 0, 0),
        bucket(5, 70, 10, 41_000, 210_000),
        bucket(6, 90, 4, 16_400, 270_000),
        bucket(7, 95, 1, 4_100, 285_000),
    ];
    let hits: u64 = timeline.iter().map(|b| b.hits).sum();
    let misses: u64 = timeline.iter().map(|b| b.misses).sum();
    let spent: u64 = timeline.iter().map(|b| b.compile_ms_spent).sum();
    let saved: u64 = timeline.iter().map(|b| b.compile_ms_saved).sum();
    let hosts = ["build-01", "build-02.ci.internal", "laptop & co"];
    Report {
        schema: REPORT_SCHEMA.to_string(),
        since_ms: SINCE_MS,
        until_ms: SINCE_MS + 8 * HOUR_MS,
        caches: vec![
            CacheSource {
                dir: "/var/cache/mlir-cache-key".to_string(),
                events: 1_020,
                unreadable_lines: 2,
                cache_size: Some(512 << 20),
            },
            CacheSource {
                dir: "/home/ci/.cache/mlir-cache-key".to_string(),
                events: 310,
                unreadable_lines: 0,
                cache_size: None,
            },
        ],
        totals: Totals {
            lookups: hits + misses + 3,
            hits,
            misses,
            failures_replayed: 3,
            hit_rate: Some(hits as f64 / (hits + misses) as f64),
            puts: misses,
            evictions: 17,
            compile_ms_spent: spent,
            compile_ms_saved: saved,
        },
        causes: vec![
            cause("new_program", "a program not seen before", 41, &hosts[..3]),
            cause(
                "compiler_version",
                "the compiler version changed",
                23,
                &hosts[..2],
            ),
            cause("xla_flag", "an XLA flag changed", 14, &hosts[1..2]),
            cause("evicted", "evicted earlier", 9, &hosts[..1]),
            cause(
                "corrupt_entry",
                "the stored entry was damaged",
                3,
                &hosts[2..],
            ),
        ],
        modules: vec![
            ModuleLine {
                module: "train_step".to_string(),
                misses: 40,
                hits: 200,
                compile_ms_spent: 164_000,
            },
            ModuleLine {
                module: HOSTILE_MODULE.to_string(),
                misses: 30,
                hits: 150,
                compile_ms_spent: 123_000,
            },
            ModuleLine {
                module: "eval_step".to_string(),
                misses: 20,
                hits: 74,
                compile_ms_spent: 82_000,
            },
        ],
        hosts: vec![
            HostLine {
                host: hosts[0].to_string(),
                hits: 200,
                misses: 50,
            },
            HostLine {
                host: hosts[1].to_string(),
                hits: 180,
                misses: 30,
            },
            HostLine {
                host: hosts[2].to_string(),
                hits: 44,
                misses: 10,
            },
        ],
        eviction: Churn {
            evictions: 17,
            evicted_bytes: 96 << 20,
            recompiled_after_eviction: 9,
            size_to_keep_them: Some(700 << 20),
        },
        tiers: vec![
            tier("redis", 120, 40, 0, 0, 0),
            tier(HOSTILE_TIER, 30, 50, 12, 95_000, 2),
        ],
        timeline,
    }
}

fn chromium() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("chromium"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`chromium` is not on PATH: this test renders the HTML report in Debian's headless \
                 Chromium; run scripts/setup.sh (as root) to install it"
            )
        })
}

/// Runs headless Chromium with `args` (plus the flags every run takes) and returns its stdout.
/// Fails the test when it exits badly or outlives `CHROMIUM_TIMEOUT`.
fn run_chromium(work: &Path, name: &str, args: &[String]) -> Vec<u8> {
    let stdout_path = work.join(format!("{name}.stdout"));
    let stderr_path = work.join(format!("{name}.stderr"));
    let mut command = Command::new(chromium());
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            // Any fetch goes to a port nothing listens on, loopback included: the page must
            // render from itself alone.
            "--proxy-server=127.0.0.1:9",
            "--proxy-bypass-list=<-loopback>",
        ])
        // A profile of its own: runs of parallel tests must not share the default one's lock.
        .arg(format!(
            "--user-data-dir={}",
            work.join(format!("{name}.profile")).display()
        ))
        .args(args)
        .stdin(Stdio::null())
        // Files, not pipes: a full pipe nobody reads would block Chromium until the timeout.
        .stdout(File::create(&stdout_path).unwrap())
        .stderr(File::create(&stderr_path).unwrap())
        // Its own process group, so a timeout kills the renderer and helpers too.
        .process_group(0);
    let mut child = command.spawn().expect("cannot start chromium");
    let deadline = Instant::now() + CHROMIUM_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let group = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium ({name}) did not finish within {CHROMIUM_TIMEOUT:?}; stderr:\n{}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Chromium warns on stderr (D-Bus, GPU) even when all is well: read it only on failure.
    assert!(
        status.success(),
        "chromium ({name}) failed: {status}; stderr:\n{}",
        std::fs::read_to_string(&stderr_path).unwrap_or_default()
    );
    std::fs::read(&stdout_path).unwrap()
}

fn write_page(work: &Path, page: &str) -> String {
    let path = work.join("report.html");
    std::fs::write(&path, page).unwrap();
    let path = path.to_str().expect("a UTF-8 temporary path");
    assert!(
        !path.contains([' ', '%', '#', '?']),
        "{path} would need escaping in a URL"
    );
    format!("file://{path}")
}

// ---- The screenshot ----

/// A pixel at most this far from white (in every channel) is background.
const WHITE_MIN: u8 = 245;
/// How far (per channel) a pixel may be from a plot colour and still count as it: Chromium
/// blends edges, but bar and dot interiors are the colour itself.
const COLOUR_TOLERANCE: u8 = 6;
/// At least this share of the screenshot is not background. Text and tables alone cover about
/// 4 % of this report's screenshot, with the plots about 11 %.
const MIN_NON_WHITE_SHARE: f64 = 0.06;
/// At least this many pixels of each plot colour: several times a legend swatch (12×12
/// pixels), so only drawn bars, dots and lines reach it (the thinnest, the hit-rate line and
/// dots, cover about 1 800).
const MIN_PLOT_PIXELS: usize = 800;

fn rgb(hex: &str) -> [u8; 3] {
    let channel = |i: usize| u8::from_str_radix(&hex[1 + 2 * i..3 + 2 * i], 16).unwrap();
    [channel(0), channel(1), channel(2)]
}

#[derive(Debug)]
struct Census {
    pixels: usize,
    non_white: usize,
    /// Pixels of each plot colour, by the colour's name.
    plots: Vec<(&'static str, usize)>,
}

fn census(png_path: &Path) -> Census {
    let mut decoder = png::Decoder::new(BufReader::new(File::open(png_path).unwrap()));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buffer).unwrap();
    let step = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("a screenshot in {other:?}"),
    };
    let colours = [
        ("hits", HITS_COLOUR),
        ("misses", MISSES_COLOUR),
        ("hit rate", HIT_RATE_COLOUR),
        ("compile time spent", SPENT_COLOUR),
        ("compile time saved", SAVED_COLOUR),
        ("causes", CAUSES_COLOUR),
        ("tiers", TIERS_COLOUR),
    ]
    .map(|(name, hex)| (name, rgb(hex)));
    let mut census = Census {
        pixels: 0,
        non_white: 0,
        plots: colours.iter().map(|(name, _)| (*name, 0)).collect(),
    };
    for row in buffer[..info.buffer_size()].chunks_exact(info.line_size) {
        for pixel in row[..info.width as usize * step].chunks_exact(step) {
            census.pixels += 1;
            if pixel[..3].iter().any(|channel| *channel < WHITE_MIN) {
                census.non_white += 1;
            }
            for (i, (_, colour)) in colours.iter().enumerate() {
                if pixel[..3]
                    .iter()
                    .zip(colour)
                    .all(|(got, want)| got.abs_diff(*want) <= COLOUR_TOLERANCE)
                {
                    census.plots[i].1 += 1;
                }
            }
        }
    }
    census
}

/// Whether the screenshot shows a page with its plots: not blank, and every plot colour drawn.
fn check_screenshot(census: &Census) -> Result<(), String> {
    let share = census.non_white as f64 / census.pixels.max(1) as f64;
    let mut problems = Vec::new();
    if share < MIN_NON_WHITE_SHARE {
        problems.push(format!(
            "only {:.2} % of the pixels are not white (want {:.2} %)",
            share * 100.0,
            MIN_NON_WHITE_SHARE * 100.0
        ));
    }
    for (name, count) in &census.plots {
        if *count < MIN_PLOT_PIXELS {
            problems.push(format!(
                "{count} pixels of the {name} colour (want {MIN_PLOT_PIXELS})"
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

fn screenshot(page: &str) -> Census {
    let work = tempfile::tempdir().unwrap();
    let url = write_page(work.path(), page);
    let png_path = work.path().join("report.png");
    run_chromium(
        work.path(),
        "screenshot",
        &[
            "--window-size=1280,3000".to_string(),
            format!("--screenshot={}", png_path.display()),
            url,
        ],
    );
    assert!(png_path.is_file(), "chromium wrote no screenshot");
    census(&png_path)
}

#[test]
fn screenshot_shows_every_plot_without_network() {
    let census = screenshot(&html(&report()));
    eprintln!("{census:?}");
    if let Err(problems) = check_screenshot(&census) {
        panic!("the screenshot of the report looks wrong: {problems}");
    }
}

/// The screenshot check has teeth: the same page without its plots fails it.
#[test]
fn screenshot_check_rejects_a_page_without_plots() {
    let mut page = html(&report());
    while let Some(start) = page.find("<svg") {
        let end = start + page[start..].find("</svg>").unwrap() + "</svg>".len();
        page.replace_range(start..end, "");
    }
    let census = screenshot(&page);
    eprintln!("{census:?}");
    assert!(
        check_screenshot(&census).is_err(),
        "a page without plots passed the screenshot check: {census:?}"
    );
}

// ---- The DOM ----

/// An element of the dumped DOM that carries a `data-field`.
#[derive(Debug)]
struct Tagged {
    tag: String,
    attributes: BTreeMap<String, String>,
    /// The text up to the next tag.
    text: String,
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// Every start tag of `dom` with its attributes and the text after it. Chromium serialises
/// attributes as `name="value"` with `&`, `"` (and `<`, `>`) escaped, which is all this reads.
fn elements(dom: &str) -> Vec<Tagged> {
    let mut found = Vec::new();
    let mut rest = dom;
    while let Some(open) = rest.find('<') {
        rest = &rest[open + 1..];
        if !rest.starts_with(|c: char| c.is_ascii_alphabetic()) {
            continue;
        }
        let name_end = rest
            .find(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/')
            .unwrap();
        let tag = rest[..name_end].to_ascii_lowercase();
        rest = &rest[name_end..];
        let mut attributes = BTreeMap::new();
        loop {
            rest = rest.trim_start();
            if let Some(after) = rest.strip_prefix("/>").or_else(|| rest.strip_prefix('>')) {
                rest = after;
                break;
            }
            let name_end = rest
                .find(|c: char| c == '=' || c == '>' || c.is_ascii_whitespace())
                .unwrap();
            let name = rest[..name_end].to_string();
            rest = &rest[name_end..];
            let value = match rest.strip_prefix("=\"") {
                Some(quoted) => {
                    let close = quoted.find('"').expect("an unterminated attribute");
                    rest = &quoted[close + 1..];
                    unescape(&quoted[..close])
                }
                None => String::new(),
            };
            attributes.insert(name, value);
        }
        let text = unescape(&rest[..rest.find('<').unwrap_or(rest.len())]);
        found.push(Tagged {
            tag,
            attributes,
            text,
        });
    }
    found
}

/// The JSON value a `data-field` path names: dot-separated, with the item's name in place of
/// the index under `causes` (cause codes hold no dot), `hosts` and `tiers` (whose names may: one
/// field follows the name there), and indexes elsewhere.
fn resolve<'a>(json: &'a Value, path: &str) -> Option<&'a Value> {
    let (top, rest) = path.split_once('.').unwrap_or((path, ""));
    let root = json.get(top)?;
    if rest.is_empty() {
        return Some(root);
    }
    let named = |key: &str, name: &str| {
        root.as_array()?
            .iter()
            .find(|item| item.get(key).and_then(Value::as_str) == Some(name))
    };
    let (item, rest) = match top {
        "causes" => {
            let (name, rest) = rest.split_once('.')?;
            (named("cause", name)?, rest)
        }
        "hosts" | "tiers" => {
            let (name, field) = rest.rsplit_once('.')?;
            let key = if top == "hosts" { "host" } else { "tier" };
            (named(key, name)?, field)
        }
        _ => (root, rest),
    };
    rest.split('.').try_fold(item, |value, step| match value {
        Value::Array(items) => items.get(step.parse::<usize>().ok()?),
        _ => value.get(step),
    })
}

fn same(shown: &Value, expected: &Value) -> bool {
    shown == expected || matches!((shown.as_f64(), expected.as_f64()), (Some(a), Some(b)) if a == b)
}

/// The fields the page must show: the whole JSON but the buckets' start times (the timeline's
/// axis shows those as times) and the schema's structure itself.
fn required_fields(json: &Value) -> BTreeSet<String> {
    let mut required = BTreeSet::new();
    let object = |value: &Value| value.as_object().unwrap().clone();
    for key in ["schema", "since_ms", "until_ms"] {
        required.insert(key.to_string());
    }
    for (key, _) in object(&json["totals"]) {
        required.insert(format!("totals.{key}"));
    }
    for (key, _) in object(&json["eviction"]) {
        required.insert(format!("eviction.{key}"));
    }
    for (i, bucket) in json["timeline"].as_array().unwrap().iter().enumerate() {
        for key in object(bucket).keys().filter(|key| *key != "start_ms") {
            required.insert(format!("timeline.{i}.{key}"));
        }
    }
    for (list, name) in [("causes", "cause"), ("hosts", "host"), ("tiers", "tier")] {
        for item in json[list].as_array().unwrap() {
            let id = item[name].as_str().unwrap();
            for (key, value) in object(item) {
                if !value.is_array() {
                    required.insert(format!("{list}.{id}.{key}"));
                }
            }
        }
    }
    for list in ["caches", "modules"] {
        for (i, item) in json[list].as_array().unwrap().iter().enumerate() {
            for key in object(item).keys() {
                required.insert(format!("{list}.{i}.{key}"));
            }
        }
    }
    required
}

#[test]
fn dumped_dom_matches_the_report() {
    let report = report();
    let work = tempfile::tempdir().unwrap();
    let url = write_page(work.path(), &html(&report));
    let dom = run_chromium(work.path(), "dump-dom", &["--dump-dom".to_string(), url]);
    let dom = String::from_utf8(dom).expect("a UTF-8 DOM");
    assert!(dom.contains("</html>"), "no DOM dumped:\n{dom}");
    let json = serde_json::to_value(&report).unwrap();

    let elements = elements(&dom);
    assert!(
        !elements.iter().any(|e| e.tag == "script"),
        "a <script> element made it into the DOM"
    );
    let mut seen = BTreeSet::new();
    for element in &elements {
        let Some(path) = element.attributes.get("data-field") else {
            continue;
        };
        let expected = resolve(&json, path)
            .unwrap_or_else(|| panic!("data-field=\"{path}\" names nothing in the report's JSON"));
        let shown = match element.attributes.get("data-value") {
            Some(value) => serde_json::from_str::<Value>(value)
                .unwrap_or_else(|e| panic!("data-value of {path} is not JSON ({e}): {value}")),
            None => Value::String(element.text.clone()),
        };
        assert!(
            same(&shown, expected),
            "data-field=\"{path}\": the page shows {shown}, the report has {expected}"
        );
        seen.insert(path.clone());
    }
    let missing: Vec<_> = required_fields(&json).difference(&seen).cloned().collect();
    assert!(missing.is_empty(), "the page does not show {missing:?}");
    // The hostile names came back as text, unchanged.
    assert!(seen.contains(&format!("tiers.{HOSTILE_TIER}.hits")));
    assert!(
        elements
            .iter()
            .any(|e| e.attributes.get("data-field").map(String::as_str)
                == Some("modules.1.module")
                && e.text == HOSTILE_MODULE)
    );

    let plots: BTreeSet<&str> = elements
        .iter()
        .filter(|e| e.tag == "svg" && e.attributes.get("class").map(String::as_str) == Some("plot"))
        .filter_map(|e| e.attributes.get("id").map(String::as_str))
        .collect();
    assert_eq!(plots, BTreeSet::from(PLOT_IDS), "the plots in the DOM");
}
