//! The inode cache of direct mode (`mck_cli::inode_cache`): an unchanged input is not read
//! again (the DEBUG log says whether it was hashed), `touch` keeps the hit, an edit that puts
//! the old mtime back still misses (ctime moved) and compiles, concurrent processes fill it
//! without loss or error, and a corrupt inode-cache file or a file modified within 2 s is
//! simply not used.

use crate::common::{Site, compile};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Longer than the inode cache's racy window: a file this old may be remembered.
const SETTLE: Duration = Duration::from_millis(2200);
/// What the DEBUG log says of an input the inode cache served, and of one it read.
const NOT_READ: &str = "is remembered; not read";
const HASHED: &str = "hashed ";

/// A module whose canonical key is its own (`n` moves it).
fn module_text(n: u32) -> String {
    format!(
        "\"builtin.module\"() <{{sym_name = \"m\"}}> ({{\n  \"test.op\"() {{value = {n} : i64}} : () -> ()\n}}) : () -> ()\n"
    )
}

struct Run {
    status: Option<i32>,
    log: String,
    out: Vec<u8>,
}

/// Runs exec of `module` into `out` (a file per caller) with the DEBUG log, plus `flags`.
fn exec(site: &Site, module: &Path, out: &Path, flags: &str) -> Run {
    let mut command = site.bin();
    command
        .env("MLIR_CACHE_KEY_FLAGS", format!("--log_level=DEBUG {flags}"))
        .arg("exec")
        .arg("--cache-dir")
        .arg(site.path("cache"));
    compile(&mut command, &site.compiler(), module, out);
    let output = command.output().expect("run exec");
    let run = Run {
        status: output.status.code(),
        log: String::from_utf8_lossy(&output.stderr).into(),
        out: std::fs::read(out).unwrap_or_default(),
    };
    let _ = std::fs::remove_file(out);
    run
}

/// What the counting compiler writes for `module`.
fn compiled(module: &Path) -> Vec<u8> {
    let mut out = std::fs::read(module).unwrap();
    out.extend_from_slice(b"compiled\n");
    out
}

fn module(site: &Site, name: &str, n: u32) -> PathBuf {
    let path = site.path(name);
    std::fs::write(&path, module_text(n)).unwrap();
    path
}

/// A site whose module `m.mlir` is settled and compiled, its digest remembered.
fn remembered_module() -> (Site, PathBuf, PathBuf) {
    let site = Site::new("compiled");
    let path = module(&site, "m.mlir", 1);
    let out = site.path("out.bin");
    std::thread::sleep(SETTLE);
    let first = exec(&site, &path, &out, "");
    assert_eq!(first.status, Some(0), "{}", first.log);
    assert!(first.log.contains(HASHED), "{}", first.log);
    assert_eq!(site.runs(), 1);
    let second = exec(&site, &path, &out, "");
    assert!(second.log.contains("direct hit"), "{}", second.log);
    assert!(second.log.contains(NOT_READ), "{}", second.log);
    assert!(!second.log.contains(HASHED), "read again: {}", second.log);
    assert_eq!(second.out, compiled(&path));
    (site, path, out)
}

#[test]
fn touch_keeps_the_hit() {
    let (site, path, out) = remembered_module();
    let touched = std::process::Command::new("touch").arg(&path).status();
    assert!(touched.unwrap().success());
    let run = exec(&site, &path, &out, "");
    assert!(run.log.contains("direct hit"), "{}", run.log);
    // Its state moved: hashed again, and not remembered while it is racy.
    assert!(run.log.contains(HASHED), "{}", run.log);
    assert!(run.log.contains("within the last 2 seconds"), "{}", run.log);
    assert_eq!(run.out, compiled(&path));
    assert_eq!(site.runs(), 1);
}

#[test]
fn an_edit_with_the_old_mtime_put_back_misses_and_compiles() {
    let (site, path, out) = remembered_module();
    let before = std::fs::metadata(&path).unwrap();
    // One byte, in place (same inode and size): `value = 1` becomes `value = 7`.
    let text = std::fs::read(&path).unwrap();
    let at = text.windows(9).position(|w| w == b"value = 1").unwrap() + 8;
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, b"7", at as u64).unwrap();
    file.set_modified(before.modified().unwrap()).unwrap();
    drop(file);
    let after = std::fs::metadata(&path).unwrap();
    assert_eq!(after.modified().unwrap(), before.modified().unwrap());
    assert_eq!(after.len(), before.len());
    let run = exec(&site, &path, &out, "");
    assert_eq!(run.status, Some(0), "{}", run.log);
    assert!(run.log.contains(HASHED), "{}", run.log);
    assert!(!run.log.contains("direct hit"), "{}", run.log);
    assert_eq!(site.runs(), 2, "the edited module was not compiled");
    assert_eq!(run.out, compiled(&path));
    assert!(run.out.starts_with(module_text(7).as_bytes()));
}

#[test]
fn two_processes_filling_it_at_once_lose_nothing_and_serve_nothing_wrong() {
    let site = Site::new("compiled");
    let modules: Vec<PathBuf> = (0..8)
        .map(|n| module(&site, &format!("m{n}.mlir"), 100 + n))
        .collect();
    std::thread::sleep(SETTLE);
    std::thread::scope(|scope| {
        for worker in 0..2 {
            let (site, modules) = (&site, &modules);
            scope.spawn(move || {
                let out = site.path(&format!("out-{worker}.bin"));
                let order: Vec<&PathBuf> = match worker {
                    0 => modules.iter().collect(),
                    _ => modules.iter().rev().collect(),
                };
                for module in order {
                    let run = exec(site, module, &out, "");
                    assert_eq!(run.status, Some(0), "{}", run.log);
                    assert_eq!(run.out, compiled(module), "{}", run.log);
                }
            });
        }
    });
    let out = site.path("out.bin");
    for module in &modules {
        let run = exec(&site, module, &out, "");
        assert!(
            run.log.contains(NOT_READ),
            "{}: {}",
            module.display(),
            run.log
        );
        assert!(run.log.contains("direct hit"), "{}", run.log);
        assert_eq!(run.out, compiled(module), "{}", module.display());
    }
}

#[test]
fn a_corrupt_inode_cache_file_is_ignored() {
    let (site, path, out) = remembered_module();
    let inode_cache = site.path("cache/v1/inode-cache");
    for garbage in [vec![0xA5u8; 4 << 20], b"not an inode cache".to_vec()] {
        std::fs::write(&inode_cache, &garbage).unwrap();
        let run = exec(&site, &path, &out, "");
        assert_eq!(run.status, Some(0), "{}", run.log);
        assert!(run.log.contains(HASHED), "{}", run.log);
        assert!(run.log.contains("direct hit"), "{}", run.log);
        assert_eq!(run.out, compiled(&path));
    }
    // Written anew by that run: remembered again.
    let run = exec(&site, &path, &out, "");
    assert!(run.log.contains(NOT_READ), "{}", run.log);
    assert_eq!(site.runs(), 1);
}

/// Compiles a module (settled first when `settle`) and looks it up again with `flags`:
/// both runs must hash it, the first compiling, the second a hit.
fn hashed_every_time(settle: bool, flags: &str) -> Site {
    let site = Site::new("compiled");
    let path = module(&site, "m.mlir", 3);
    let out = site.path("out.bin");
    if settle {
        std::thread::sleep(SETTLE);
    }
    for _ in 0..2 {
        let run = exec(&site, &path, &out, flags);
        assert_eq!(run.status, Some(0), "{}", run.log);
        assert!(run.log.contains(HASHED), "{}", run.log);
        assert!(!run.log.contains(NOT_READ), "{}", run.log);
    }
    assert_eq!(site.runs(), 1);
    site
}

#[test]
fn a_file_modified_within_2_seconds_is_not_remembered() {
    hashed_every_time(false, "");
}

#[test]
fn the_setting_turns_it_off() {
    let site = hashed_every_time(true, "--no_inode_cache");
    assert!(!site.path("cache/v1/inode-cache").exists());
}
