//! The settings through their public API: the variable's flags (both spellings), the
//! configuration file, layering with sources, and the table against its documentation.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mck_settings::{
    Assignment, CONFIG_FILE, CacheErrors, ErrorKind, Layer, LogLevel, SETTINGS, Settings,
    SettingsError, Source, find, parse_config, set_config,
};

fn env(text: &str) -> Result<Settings, SettingsError> {
    Settings::from_flags_and(Some(text), &Layer::default())
}

/// What `layer` sets `name` to, as `config show` writes it (`None`: not set by it).
fn value(layer: &Layer, name: &str) -> Option<String> {
    if !layer.names().any(|n| n == name) {
        return None;
    }
    let mut s = Settings::default();
    layer.apply_to(&mut s);
    (find(name).unwrap().show)(&s)
}

#[test]
fn defaults() {
    let s = Settings::from_flags_and(None, &Layer::default()).unwrap();
    assert_eq!(s.store.cache_dir, PathBuf::from("/var/tmp/mlir-cache-key"));
    assert!(s.store.enabled);
    assert_eq!(s.store.max_size, 100_000_000_000);
    assert_eq!(s.store.ttl, Duration::from_secs(30 * 86_400));
    assert!(!s.store.retry_failed_compilation);
    assert!(!s.no_direct);
    assert_eq!(s.log_level, LogLevel::Warning);
    assert_eq!(s.store.dir_mode, 0o700);
    assert_eq!(s.lock_timeout, Duration::from_secs(600));
}

#[test]
fn the_compile_lock_wait_is_a_setting_without_an_upper_bound() {
    let s = env("--lock_timeout=1.5").unwrap();
    assert_eq!(s.lock_timeout, Duration::from_millis(1500));
    let s = env(&format!("--lock-timeout {}", u64::MAX)).unwrap();
    assert_eq!(s.lock_timeout, Duration::from_secs(u64::MAX));
    let e = env("--lock_timeout=-1").unwrap_err();
    assert!(e.message.contains("expected a number of seconds"), "{e}");
}

#[test]
fn the_table_says_which_settings_are_options_of_which_commands() {
    use mck_settings::CommandLine;
    let of = |name: &str| find(name).unwrap().command_line;
    assert_eq!(of("no_direct"), CommandLine::OptionOf(&["exec"]));
    assert_eq!(of("lock_timeout"), CommandLine::OptionOf(&["exec"]));
    assert_eq!(of("log_level"), CommandLine::Program);
    assert!(of("no_direct").of_command("exec") && !of("no_direct").of_command("wrap"));
    assert!(of("verify_hits").of_command("wrap") && of("verify_hits").of_command("exec"));
    assert!(
        !of("log_level").of_command("exec"),
        "the program's, not a command's"
    );
    // The rate's one check (the hit audits re-export it: mck_exec::audit::parse_rate).
    assert_eq!(
        env("--verify_hits=2").unwrap_err().message,
        mck_settings::parse_rate("2").unwrap_err()
    );
}

#[test]
fn all_flags_from_the_variable() {
    let s = env(
        "  --cache_dir=/tmp/c --no_cache --cache_size=10G --cache_ttl 7 \
         --retry_failed_compilation --no_direct --log_level=info --cache_dir_mode=0750 ",
    )
    .unwrap();
    assert_eq!(s.store.cache_dir, PathBuf::from("/tmp/c"));
    assert!(!s.store.enabled);
    assert_eq!(s.store.max_size, 10_000_000_000);
    assert_eq!(s.store.ttl, Duration::from_secs(7 * 86_400));
    assert!(s.store.retry_failed_compilation);
    assert!(s.no_direct);
    assert_eq!(s.log_level, LogLevel::Info);
    assert_eq!(s.store.dir_mode, 0o750);
}

#[test]
fn dashes_and_underscores_are_the_same_flag() {
    let underscores = env(
        "--cache_dir=/tmp/c --no_cache --cache_size 10G --remote_timeout=0.5 \
         --remote_read_only --cache_dir_mode=0750 --remote_retry_after 3",
    )
    .unwrap();
    let dashes = env(
        "--cache-dir=/tmp/c --no-cache --cache-size 10G --remote-timeout=0.5 \
         --remote-read-only --cache-dir-mode=0750 --remote-retry-after 3",
    )
    .unwrap();
    assert_eq!(dashes, underscores);
    assert_eq!(dashes.remote.timeout, Duration::from_millis(500));
    assert_eq!(dashes.store.cache_dir, PathBuf::from("/tmp/c"));
    // An error names the flag as it was written.
    let e = env("--remote-timeout=0").unwrap_err().to_string();
    assert!(
        e.starts_with("MLIR_CACHE_KEY_FLAGS: --remote-timeout=0: "),
        "{e}"
    );
    let e = env("--remote-timeoot=1").unwrap_err().to_string();
    assert!(e.contains("unknown flag"), "{e}");
}

#[test]
fn quotes_group_a_path_with_spaces() {
    let s = env(r#"--cache_size='1 Ki'"#).unwrap();
    assert_eq!(
        s.store.max_size, 1024,
        "the unit may follow after a space inside quotes"
    );
    let s = env(r#"--cache_dir="/tmp/my cache""#).unwrap();
    assert_eq!(s.store.cache_dir, PathBuf::from("/tmp/my cache"));
    let s = env(r"--cache_dir=/tmp/a\ b").unwrap();
    assert_eq!(s.store.cache_dir, PathBuf::from("/tmp/a b"));
}

#[test]
fn overrides_win_over_the_variable() {
    let mut o = Layer::default();
    o.set("test", "cache_dir", "/o").unwrap();
    o.push(Assignment::parse(find("no_cache").unwrap(), "false").unwrap());
    o.set("test", "cache_size", "5").unwrap();
    let s =
        Settings::from_flags_and(Some("--cache_dir=/e --no_cache --cache_size=1k"), &o).unwrap();
    assert_eq!(s.store.cache_dir, PathBuf::from("/o"));
    assert!(s.store.enabled);
    assert_eq!(s.store.max_size, 5);
    let cli = Layer::parse_flags("command line", "--cache_ttl=0.5").unwrap();
    let s = Settings::from_flags_and(Some("--cache_ttl=3"), &cli).unwrap();
    assert_eq!(s.store.ttl, Duration::from_secs(43_200));
}

#[test]
fn remote_flags() {
    let s = env(
        "--remote=redis://127.0.0.1:7000/2 --remote_read_only --remote_timeout=0.5 \
         --remote_retry_after 0 --remote_lease=10",
    )
    .unwrap();
    assert_eq!(chain(&s), ["redis://127.0.0.1:7000/2"]);
    assert!(s.remote.read_only);
    assert_eq!(s.remote.timeout, Duration::from_millis(500));
    assert_eq!(s.remote.retry_after, Duration::ZERO);
    assert_eq!(s.remote.lease, Duration::from_secs(10));
    let d = Settings::from_flags_and(None, &Layer::default()).unwrap();
    assert!(d.remote.tiers.is_empty());
    assert_eq!(d.remote.timeout, Duration::from_secs(2));
}

/// The chain in force, each tier as the configuration file writes it.
fn chain(s: &Settings) -> Vec<String> {
    s.remote.tiers.iter().map(ToString::to_string).collect()
}

#[test]
fn a_repeated_remote_is_a_chain_and_a_higher_source_replaces_it() {
    let two = "--remote=redis://a:1/0 --remote redis://b:2/0?read_only=1";
    let s = env(two).unwrap();
    assert_eq!(chain(&s), ["redis://a:1/0", "redis://b:2/0?read_only=1"]);
    assert!(!s.remote.tiers[0].read_only);
    assert!(s.remote.tiers[1].read_only);
    let listed = env("--remote=[redis://a:1/0,redis://b:2/0?read_only=1]").unwrap();
    assert_eq!(listed, s, "a list in one value is the same chain");
    let cli = Layer::parse_flags("command line", "--remote=redis://c:3/0").unwrap();
    let s = Settings::from_flags_and(Some(two), &cli).unwrap();
    assert_eq!(
        chain(&s),
        ["redis://c:3/0"],
        "the command line's chain wins whole"
    );
    let shown = find("remote").unwrap().show;
    assert_eq!(
        shown(&env(two).unwrap()).as_deref(),
        Some("[redis://a:1/0, redis://b:2/0?read_only=1]")
    );
}

#[test]
fn a_bad_remote_url_names_the_flag_and_hides_the_password() {
    let e = env("--remote=redis://u:hunter2@h:1/x")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("MLIR_CACHE_KEY_FLAGS: --remote=redis://***@h:1/x: "),
        "{e}"
    );
    assert!(e.contains("database number"), "{e}");
    assert!(!e.contains("hunter2"), "{e}");
    let e = Layer::parse_flags("command line", "--remote=ftp://h")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("command line: --remote=ftp://h: "), "{e}");
    let e = Layer::default()
        .set("command line", "remote", "redis://u:hunter2@h:1/x")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("command line: --remote=redis://***@h:1/x: "),
        "{e}"
    );
    for bad in [
        "--remote_timeout=0",
        "--remote_timeout=x",
        "--remote_lease=-1",
    ] {
        let e = env(bad).expect_err(bad).to_string();
        assert!(e.contains(bad), "{e}");
    }
}

#[test]
fn bad_values_name_the_flag_and_the_variable() {
    let cases = [
        ("--cache_size=lots", "--cache_size=lots"),
        ("--cache_ttl=-1", "--cache_ttl=-1"),
        ("--cache_ttl=NaN", "--cache_ttl=NaN"),
        ("--cache_ttl=99999", "--cache_ttl=99999"),
        ("--log_level=LOUD", "--log_level=LOUD"),
        ("--cache_dir_mode=0777", "--cache_dir_mode=0777"),
        ("--cache_dir_mode=0600", "--cache_dir_mode=0600"),
        ("--cache_dir=", "--cache_dir="),
        ("--no_cache=1", "--no_cache=1"),
        ("--frobnicate", "--frobnicate"),
        ("--cache-dirr=/x", "--cache-dirr=/x"),
        ("cache_dir=/x", "cache_dir=/x"),
        ("--cache_size", "--cache_size"),
        ("'unterminated", "'unterminated"),
    ];
    for (text, flag) in cases {
        let e = env(text).expect_err(text);
        let msg = e.to_string();
        assert!(msg.starts_with("MLIR_CACHE_KEY_FLAGS: "), "{msg}");
        assert!(msg.contains(flag), "{msg} should name {flag}");
    }
    let e = Layer::parse_flags("command line", "--cache_ttl=x").unwrap_err();
    assert!(
        e.to_string().starts_with("command line: --cache_ttl=x: "),
        "{e}"
    );
}

#[test]
fn the_documented_defaults_are_the_defaults() {
    let defaults = Settings::default();
    for s in SETTINGS {
        let shown = (s.show)(&defaults);
        if s.default == "none" {
            assert_eq!(shown, None, "{}", s.name);
            continue;
        }
        if s.name == "cache_dir" {
            // The user's own directory, from the environment: tested with `user_cache_dir`.
            continue;
        }
        let mut layer = Layer::default();
        layer.set("table", s.name, s.default).unwrap();
        let mut parsed = Settings::default();
        layer.apply_to(&mut parsed);
        assert_eq!(
            parsed, defaults,
            "{}'s documented default {:?}",
            s.name, s.default
        );
    }
}

#[test]
fn every_setting_is_unique_and_documented() {
    for (i, s) in SETTINGS.iter().enumerate() {
        assert!(
            SETTINGS[..i].iter().all(|o| o.name != s.name),
            "{} twice",
            s.name
        );
        assert!(s.doc.ends_with('.'), "{}: {:?}", s.name, s.doc);
        assert!(std::ptr::eq(find(&s.dashed()).unwrap(), s));
        assert_eq!(s.kind.value_name().is_none(), s.is_switch(), "{}", s.name);
    }
}

fn parse(text: &str) -> Result<Layer, SettingsError> {
    parse_config(Path::new("/c/mlir-cache-key.conf"), text)
}

#[test]
fn parses_names_values_comments_and_switches() {
    let o = parse(
        "# a comment\n\ncache_size = 100K\n  cache_ttl=2\nremote_read_only = true\nno_cache = false\nlog_level = info\nno_direct = yes\n",
    )
    .unwrap();
    assert_eq!(value(&o, "no_direct").as_deref(), Some("true"));
    assert_eq!(value(&o, "cache_size").as_deref(), Some("100000"));
    assert_eq!(value(&o, "cache_ttl").as_deref(), Some("2"));
    assert_eq!(value(&o, "remote_read_only").as_deref(), Some("true"));
    assert_eq!(value(&o, "no_cache").as_deref(), Some("false"));
    assert_eq!(value(&o, "log_level").as_deref(), Some("INFO"));
    assert_eq!(value(&o, "remote_timeout"), None);
}

#[test]
fn the_file_takes_both_spellings_too() {
    let o = parse("remote-timeout = 3\ncache-size=1k\nno-direct = true\n").unwrap();
    assert_eq!(value(&o, "remote_timeout").as_deref(), Some("3"));
    assert_eq!(value(&o, "cache_size").as_deref(), Some("1000"));
    assert_eq!(value(&o, "no_direct").as_deref(), Some("true"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(CONFIG_FILE);
    std::fs::write(&path, "remote_timeout = 1\n").unwrap();
    set_config(dir.path(), "remote-timeout", Some("4"), 0o700).unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "remote_timeout = 4\n"
    );
    std::fs::write(&path, "remote-timeout = 1\ncache_ttl = 2\n").unwrap();
    set_config(dir.path(), "remote_timeout", None, 0o700).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "cache_ttl = 2\n");
}

#[test]
fn errors_name_the_file_and_line() {
    for (text, line) in [
        ("cache_size = 1G\nfrobnicate = 3\n", 2),
        ("cache_size = lots\n", 1),
        ("\n\nno_cache = maybe\n", 3),
        ("cache_dir = /x\n", 1),
        ("just words\n", 1),
        ("remote = redis://u:hunter2@h:1/x\n", 1),
    ] {
        let e = parse(text).expect_err(text).to_string();
        assert!(
            e.starts_with(&format!("/c/mlir-cache-key.conf:{line}: ")),
            "{text:?}: {e}"
        );
        assert!(!e.contains("hunter2"), "{e}");
    }
}

#[test]
fn the_file_sits_between_defaults_and_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(CONFIG_FILE),
        "cache_size = 1k\ncache_ttl = 2\nlog_level = error\n",
    )
    .unwrap();
    let mut cli = Layer::default();
    cli.set("command line", "cache_dir", dir.path().to_str().unwrap())
        .unwrap();
    cli.set("command line", "cache_ttl", "1").unwrap();
    let r = Settings::resolve(Some("--cache_ttl=3 --log_level=info"), &cli).unwrap();
    assert_eq!(r.settings.store.max_size, 1000);
    assert_eq!(r.sources["cache_size"], Source::ConfigFile);
    assert_eq!(r.settings.log_level, LogLevel::Info);
    assert_eq!(r.sources["log_level"], Source::Environment);
    assert_eq!(r.settings.store.ttl, Duration::from_secs(86_400));
    assert_eq!(r.sources["cache_ttl"], Source::CommandLine);
    assert_eq!(r.sources["remote_timeout"], Source::Default);
}

#[test]
fn set_and_unset_keep_other_lines() {
    use std::os::unix::fs::PermissionsExt as _;
    let read = |path: &Path| std::fs::read_to_string(path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = set_config(dir.path(), "cache_size", Some("5M"), 0o700).unwrap();
    set_config(dir.path(), "cache_ttl", Some("1"), 0o700).unwrap();
    set_config(dir.path(), "cache_size", Some("6M"), 0o700).unwrap();
    assert_eq!(read(&path), "cache_size = 6M\ncache_ttl = 1\n");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    set_config(dir.path(), "cache_size", None, 0o700).unwrap();
    assert_eq!(read(&path), "cache_ttl = 1\n");
    assert!(set_config(dir.path(), "cache_size", Some("lots"), 0o700).is_err());
    assert!(set_config(dir.path(), "nope", Some("1"), 0o700).is_err());
    assert!(set_config(dir.path(), "nope", None, 0o700).is_err());
    assert_eq!(read(&path), "cache_ttl = 1\n");
}

#[test]
fn cache_errors_and_read_only() {
    let d = Settings::from_flags_and(None, &Layer::default()).unwrap();
    assert_eq!(d.cache_errors, CacheErrors::Warn);
    assert!(!d.store.read_only);
    let s = env("--cache-errors=FAIL --read_only").unwrap();
    assert_eq!(s.cache_errors, CacheErrors::Fail);
    assert!(s.store.read_only);
    let e = env("--cache_errors=maybe").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(e.to_string().contains("expected warn or fail"), "{e}");
}

#[test]
fn an_unreadable_file_is_the_caches_fault_a_bad_line_the_users() {
    let dir = tempfile::tempdir().unwrap();
    let mut cli = Layer::default();
    cli.set("command line", "cache_dir", dir.path().to_str().unwrap())
        .unwrap();
    // A directory where the file should be cannot be read, even by root.
    std::fs::create_dir(dir.path().join(CONFIG_FILE)).unwrap();
    let e = Settings::resolve(None, &cli).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unreadable, "{e}");
    std::fs::remove_dir(dir.path().join(CONFIG_FILE)).unwrap();
    std::fs::write(dir.path().join(CONFIG_FILE), "frob = 1\n").unwrap();
    let e = Settings::resolve(None, &cli).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
}
