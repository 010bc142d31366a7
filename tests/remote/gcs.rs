//! PyPI's gcp-storage-emulator for the GCS tests: the one `scripts/test.sh` starts (its host in
//! `MCK_TEST_GCS_HOST`), or, by hand, one started here by `scripts/gcs-emulator.sh`. Never a
//! silent pass: without it under CI a test fails.

use std::path::Path;
use std::process::Command;

use crate::common::success;

/// The GCS emulator's host: the test script's, or one started here (stopped on drop).
pub struct Emulator {
    pub host: String,
    pub bucket: String,
    dir: Option<tempfile::TempDir>,
}

impl Emulator {
    pub fn get() -> Emulator {
        if let (Ok(host), Ok(bucket)) = (
            std::env::var("MCK_TEST_GCS_HOST"),
            std::env::var("MCK_TEST_GCS_BUCKET"),
        ) {
            return Emulator {
                host,
                bucket,
                dir: None,
            };
        }
        if std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false") {
            panic!("MCK_TEST_GCS_HOST is not set under CI: scripts/test.sh starts the emulator");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let out = success(
            Command::new("bash")
                .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gcs-emulator.sh"))
                .arg("start")
                .arg(dir.path()),
        );
        let env = String::from_utf8_lossy(&out).into_owned();
        let value = |name: &str| {
            env.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}=")).map(str::to_owned))
                .expect(name)
        };
        Emulator {
            host: value("MCK_TEST_GCS_HOST"),
            bucket: value("MCK_TEST_GCS_BUCKET"),
            dir: Some(dir),
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = Command::new("bash")
                .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gcs-emulator.sh"))
                .arg("stop")
                .arg(dir.path())
                .status();
        }
    }
}
