//! A false hit caught by a hit audit stays caught with a remote tier behind the cache: the
//! remote's copy of the condemned artefact is not served either (real processes, real Redis;
//! see `remote/redis.rs` for where the server comes from).

use crate::common::{self, read, success, success_stderr};
use crate::team::Team;

#[test]
fn the_remote_copy_of_a_suspect_entry_is_not_served() {
    let (_target, team) = redis_or_skip!(Team::shared("verify_hits_suspect"));
    // The compiler's identity is a fixed string: a new compiler under the old key.
    let check = ["--compiler-check", "string:v1"];
    success(&mut team.exec_with("a", "a.mlir", &check));
    common::write_compiler(&team.site.compiler(), "compiled-v2");
    let audited = [&check[..], &["--verify-hits", "1"]].concat();
    let caught = success_stderr(&mut team.exec_with("a", "a.mlir", &audited));
    assert!(caught.contains("false hit"), "{caught}");
    assert_eq!(team.runs(), 3, "one store, two fresh compiles");
    assert_eq!(team.stats("a")["audits"]["false_hits"], 1);

    // Locally a miss; the remote still holds the stale bytes, which must not come back.
    success(&mut team.exec_with("a", "a.mlir", &check));
    assert_eq!(
        team.runs(),
        4,
        "the remote copy of the suspect entry was served"
    );
    let out = read(&team.out("a", "a.mlir"));
    assert!(
        out.ends_with(b"compiled-v2\n"),
        "{}",
        String::from_utf8_lossy(&out)
    );
}
