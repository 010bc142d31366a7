//! `runs import` of crafted archives, with real processes and real files: every member the
//! manifest does not list, every duplicate, link, device or unknown state is refused with a
//! message naming it, and then nothing at all is written; an archive claiming huge members is
//! imported (refused) in bounded memory, measured as the child's peak RSS.

use crate::common::{self, bin, corpus, failure, success};
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Peak RSS allowed for importing any crafted archive, above the same binary's `runs list`.
const MAX_EXTRA_RSS_KIB: i64 = 32 << 10;

struct Fixture {
    dir: tempfile::TempDir,
    /// The members of a real export of run `r1` (two artefacts), in order.
    members: Vec<(String, Vec<u8>)>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = Fixture {
            dir,
            members: Vec::new(),
        };
        common::write_compiler(&f.path("cc.sh"), "compiled");
        for (step, module) in [
            ("s1", "cpu/mlp.a.generic.mlir"),
            ("s2", "cpu/mlp.a_batch5.generic.mlir"),
        ] {
            let (input, out) = (corpus(module), f.path("out.bin"));
            success(
                f.mck("src")
                    .args(["exec", "--namespace", "ns", "--step", step, "--run", "r1"])
                    .arg("--input")
                    .arg(&input)
                    .arg("--output")
                    .arg(&out)
                    .arg("--")
                    .arg(f.path("cc.sh"))
                    .arg(&input)
                    .arg(&out),
            );
        }
        let export = f.path("r1.tar");
        success(f.mck("src").args(["runs", "export", "r1"]).arg(&export));
        let members = members_of(&export)
            .into_iter()
            .map(|m| (m.name, m.data))
            .collect();
        Fixture { members, ..f }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn mck(&self, cache: &str) -> Command {
        let mut c = bin();
        c.env("RUNS", self.path("runs")).env(
            "MLIR_CACHE_KEY_FLAGS",
            format!("--cache_dir={}", self.path(cache).display()),
        );
        c
    }

    fn manifest(&self) -> Value {
        serde_json::from_slice(&self.members[0].1).expect("run.json")
    }

    /// The export's members as plain regular files, with `manifest` as run.json.
    fn regular(&self, manifest: &Value) -> Vec<Member> {
        let mut out = vec![Member::file(
            "run.json",
            &serde_json::to_vec(manifest).unwrap(),
        )];
        out.extend(self.members[1..].iter().map(|(n, b)| Member::file(n, b)));
        out
    }

    /// As [`Fixture::mck`], with the shared secret in `secret` (a file).
    fn mck_signing(&self, cache: &str, secret: &Path) -> Command {
        let mut c = self.mck(cache);
        c.env(
            "MLIR_CACHE_KEY_FLAGS",
            format!(
                "--cache_dir={} --remote_secret_file={}",
                self.path(cache).display(),
                secret.display()
            ),
        );
        c
    }

    /// A secret file of mode 0600 holding `text`.
    fn secret(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write secret");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        path
    }

    /// Imports `members` into a fresh cache `dst`: must fail with exit 3 mentioning `want`, and
    /// leave no entry, no run and no temporary file behind.
    fn refused(&self, what: &str, members: &[Member], want: &str) {
        self.refused_under(what, members, None, want);
    }

    /// As [`Fixture::refused`], importing with the shared secret in `secret` if given.
    fn refused_under(&self, what: &str, members: &[Member], secret: Option<&Path>, want: &str) {
        let file = self.path(&format!("{}.tar", what.replace(' ', "_")));
        write_tar(&file, members);
        let dst = format!("dst-{}", what.replace(' ', "_"));
        let mut import = match secret {
            Some(secret) => self.mck_signing(&dst, secret),
            None => self.mck(&dst),
        };
        let e = failure(
            import.args(["runs", "import"]).arg(&file),
            common::EX_DATAERR,
        );
        assert!(e.contains(want), "{what}: {e}");
        assert!(
            e.contains(&file.display().to_string()),
            "{what}: names the file: {e}"
        );
        assert!(e.contains("nothing was imported"), "{what}: {e}");
        assert!(e.len() < 1000, "{what}: a long message: {e}");
        let entries = success(self.mck(&dst).args(["cache", "entries", "--json"]));
        let entries: Value = serde_json::from_slice(&entries).expect("json");
        assert_eq!(entries, Value::Array(vec![]), "{what}: entries written");
        let runs = common::text(success(self.mck(&dst).args(["runs", "list"])));
        assert_eq!(runs, "no runs", "{what}");
        let tmp = std::fs::read_dir(self.path(&dst).join("v1/tmp"))
            .expect("tmp")
            .count();
        assert_eq!(tmp, 0, "{what}: temporary files left");
    }
}

/// One tar member as written, header fields set by hand.
#[derive(Clone)]
struct Member {
    name: String,
    kind: u8,
    data: Vec<u8>,
    /// The size the header claims (default: the data's).
    claimed: Option<u64>,
    link: Option<String>,
}

impl Member {
    fn file(name: &str, data: &[u8]) -> Member {
        Member {
            name: name.to_owned(),
            kind: b'0',
            data: data.to_vec(),
            claimed: None,
            link: None,
        }
    }

    fn kind(mut self, kind: u8) -> Member {
        self.kind = kind;
        self
    }

    fn claiming(mut self, size: u64) -> Member {
        self.claimed = Some(size);
        self
    }

    fn linking(mut self, target: &str) -> Member {
        self.link = Some(target.to_owned());
        self
    }
}

/// Writes `members` as a tar file: GNU headers filled in directly (so names such as `../x` and
/// sizes larger than the data are possible), data padded to 512 bytes, two zero blocks.
fn write_tar(path: &Path, members: &[Member]) {
    let mut out = Vec::new();
    for m in members {
        let mut h = tar::Header::new_gnu();
        {
            let gnu = h.as_gnu_mut().expect("gnu");
            gnu.name[..m.name.len()].copy_from_slice(m.name.as_bytes());
            if let Some(link) = &m.link {
                gnu.linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
        }
        h.set_mode(0o600);
        h.set_size(m.claimed.unwrap_or(m.data.len() as u64));
        h.set_entry_type(tar::EntryType::new(m.kind));
        if m.kind == b'S' {
            sparse(&mut h, m.claimed.unwrap_or(0), m.data.len() as u64);
        }
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(&m.data);
        out.resize(out.len().next_multiple_of(512), 0);
    }
    out.resize(out.len() + 1024, 0);
    std::fs::write(path, out).expect("write tar");
}

/// A GNU sparse header: `real` bytes of which only the last `stored` are in the archive.
fn sparse(h: &mut tar::Header, real: u64, stored: u64) {
    let octal = |v: u64| format!("{v:011o}\0").into_bytes();
    let gnu = h.as_gnu_mut().expect("gnu");
    gnu.realsize.copy_from_slice(&octal(real));
    gnu.sparse[0].offset.copy_from_slice(&octal(real - stored));
    gnu.sparse[0].numbytes.copy_from_slice(&octal(stored));
    gnu.size.copy_from_slice(&octal(stored));
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[test]
fn an_intact_export_imports_and_adopts() {
    let f = Fixture::new();
    let file = f.path("again.tar");
    write_tar(&file, &f.regular(&f.manifest()));
    let out = common::text(success(
        f.mck("dst")
            .args(["runs", "import", "--adopt-cache"])
            .arg(&file),
    ));
    common::assert_contains(
        &out,
        &[
            "imported run r1: 2 lines, 2 artefacts",
            "adopted 2 addresses",
        ],
    );
}

#[test]
fn unlisted_duplicated_and_misplaced_members_are_refused() {
    let f = Fixture::new();
    let m = f.manifest();
    let ok = f.regular(&m);
    let (e1, e2) = (ok[1].clone(), ok[2].clone());
    let mut unlisted = ok.clone();
    let other = format!("entries/{}", "ab".repeat(32));
    unlisted.insert(2, Member::file(&other, &e1.data));
    f.refused(
        "unlisted entry",
        &unlisted,
        &format!("{other} is not listed"),
    );
    let mut evil = ok.clone();
    evil.push(Member::file("../../evil", b"x"));
    f.refused("unlisted path", &evil, "../../evil is not listed");
    let dup = vec![ok[0].clone(), e1.clone(), e1.clone(), e2.clone()];
    f.refused(
        "duplicate member",
        &dup,
        &format!("{} appears twice", e1.name),
    );
    let mut twice = ok.clone();
    twice.insert(2, ok[0].clone());
    f.refused("duplicate manifest", &twice, "run.json appears twice");
    let late = vec![e1.clone(), ok[0].clone(), e2.clone()];
    f.refused("manifest not first", &late, "not run.json");
    f.refused(
        "missing member",
        &ok[..2],
        &format!("{} is listed", e2.name),
    );
}

#[test]
fn links_devices_and_other_member_types_are_refused() {
    let f = Fixture::new();
    let ok = f.regular(&f.manifest());
    let name = ok[2].name.clone();
    for (what, kind) in [
        ("hard link", b'1'),
        ("symlink", b'2'),
        ("char device", b'3'),
        ("block device", b'4'),
        ("directory", b'5'),
        ("fifo", b'6'),
        ("contiguous", b'7'),
        ("pax header", b'x'),
        ("gnu long name", b'L'),
        ("sparse", b'S'),
    ] {
        let mut members = ok.clone();
        members[2] = Member::file(&name, b"").kind(kind).linking(&ok[1].name);
        if kind == b'S' {
            members[2] = Member::file(&name, &[0; 512]).kind(b'S').claiming(1 << 32);
        }
        f.refused(what, &members, &format!("{name} is not a regular file"));
    }
}

#[test]
fn bad_states_checksums_and_entries_are_refused() {
    let f = Fixture::new();
    let base = f.manifest();
    let mut m = base.clone();
    m["entries"][0]["state"] = "shipped".into();
    f.refused("unknown state", &f.regular(&m), "unknown state \"shipped\"");

    let mut m = base.clone();
    let long = "v".repeat(100_000);
    m["entries"][0]["address"] = format!("ns/s1[k:\"{long}\"]").into();
    f.refused("long address", &f.regular(&m), "invalid address");

    let mut m = base.clone();
    m["run"] = "r/../x".into();
    f.refused("bad run id", &f.regular(&m), "run id");

    let mut m = base.clone();
    let first = m["entries"][0].clone();
    m["entries"].as_array_mut().unwrap().push(first);
    f.refused("duplicate line", &f.regular(&m), "appears twice");

    // The second entry damaged: the first (valid) one must not be written either.
    let mut members = f.regular(&base);
    let last = members[2].data.len() - 1;
    members[2].data[last] ^= 1;
    f.refused(
        "flipped byte",
        &members,
        &format!("{}: does not match its checksum", members[2].name),
    );
    // With a recomputed checksum the entry's own checksums still catch it.
    let mut m = base.clone();
    m["files"][&members[2].name] = sha256(&members[2].data).into();
    members[0] = Member::file("run.json", &serde_json::to_vec(&m).unwrap());
    f.refused("bad entry", &members, "not a valid entry");
    // A valid entry file under another entry's name.
    let mut swapped = f.regular(&base);
    let (d1, d2) = (swapped[1].data.clone(), swapped[2].data.clone());
    swapped[1].data = d2.clone();
    swapped[2].data = d1.clone();
    let mut m = base.clone();
    m["files"][&swapped[1].name] = sha256(&d2).into();
    m["files"][&swapped[2].name] = sha256(&d1).into();
    swapped[0] = Member::file("run.json", &serde_json::to_vec(&m).unwrap());
    f.refused("swapped entries", &swapped, "not a valid entry");
}

#[test]
fn an_existing_run_with_another_record_is_refused_before_writing() {
    let f = Fixture::new();
    // r1 with its first line only, imported into a fresh cache.
    let mut m = f.manifest();
    m["entries"].as_array_mut().unwrap().truncate(1);
    let name = format!("entries/{}", m["entries"][0]["digest"].as_str().unwrap());
    let data = f
        .members
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap()
        .1
        .clone();
    m["files"] = serde_json::json!({ &name: sha256(&data) });
    let partial = f.path("partial.tar");
    write_tar(
        &partial,
        &[
            Member::file("run.json", &serde_json::to_vec(&m).unwrap()),
            Member::file(&name, &data),
        ],
    );
    success(f.mck("dst").args(["runs", "import"]).arg(&partial));
    // The whole r1 is another record under the same id: refused, and its other artefact
    // is not written either.
    let whole = f.path("whole.tar");
    write_tar(&whole, &f.regular(&f.manifest()));
    let e = failure(
        f.mck("dst").args(["runs", "import"]).arg(&whole),
        common::EX_DATAERR,
    );
    assert!(e.contains("already exists here with another record"), "{e}");
    let entries = success(f.mck("dst").args(["cache", "entries", "--json"]));
    let entries: Value = serde_json::from_slice(&entries).unwrap();
    assert_eq!(entries.as_array().map(Vec::len), Some(1), "{entries}");
}

#[test]
fn archives_claiming_huge_members_import_in_bounded_memory() {
    let f = Fixture::new();
    let ok = f.regular(&f.manifest());
    let name = ok[2].name.clone();
    let (code, baseline) = common::peak_rss_kib(f.mck("dst").args(["runs", "list"]));
    assert_eq!(code, 0);
    let four_gib = 4u64 << 30;
    let cases: Vec<(&str, Vec<Member>)> = vec![
        ("sparse 4 GiB", {
            let mut m = ok.clone();
            m[2] = Member::file(&name, &[7; 512]).kind(b'S').claiming(four_gib);
            m
        }),
        ("truncated 4 GiB", {
            let mut m = ok.clone();
            m[2] = Member::file(&name, &ok[2].data).claiming(four_gib);
            m
        }),
        ("1 TiB", {
            let mut m = ok.clone();
            m[2] = Member::file(&name, &ok[2].data).claiming(1 << 40);
            m
        }),
        ("manifest of 4 GiB", {
            let mut m = ok.clone();
            m[0] = m[0].clone().claiming(four_gib);
            m
        }),
        ("pax header of 4 GiB", {
            let mut m = ok.clone();
            m.insert(2, Member::file("pax", b"").kind(b'x').claiming(four_gib));
            m
        }),
    ];
    for (what, members) in cases {
        let file = f.path(&format!("{}.tar", what.replace(' ', "_")));
        write_tar(&file, &members);
        let (code, rss) = common::peak_rss_kib(f.mck("dst").args(["runs", "import"]).arg(&file));
        eprintln!("{what}: peak RSS {rss} KiB (runs list: {baseline} KiB)");
        assert_eq!(code, common::EX_DATAERR, "{what}: refused as a bad input");
        assert!(
            rss - baseline < MAX_EXTRA_RSS_KIB,
            "{what}: peak RSS {rss} KiB, {} KiB above `runs list`",
            rss - baseline
        );
    }
}

/// The members of the tar file at `path`, in order.
fn members_of(path: &Path) -> Vec<Member> {
    let mut archive = tar::Archive::new(std::fs::File::open(path).expect("open"));
    archive
        .entries()
        .expect("entries")
        .map(|m| {
            let mut m = m.expect("member");
            let name = m.path().expect("path").to_string_lossy().into_owned();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut m, &mut bytes).expect("read");
            Member::file(&name, &bytes)
        })
        .collect()
}

/// `entry` (an entry file) with its payload replaced by `payload`: a valid entry of the same
/// key, as anyone can make.
fn with_payload(entry: &[u8], digest: &str, payload: &[u8]) -> Vec<u8> {
    use mlir_cache_key::store::{CacheKey, Digest, EntryMeta, decode_digested, encode_prefix};
    let (meta, _) = decode_digested(entry, &Digest::parse(digest).unwrap(), None).unwrap();
    let key = CacheKey::parse(&meta.key).unwrap();
    let forged = EntryMeta::new(
        &key,
        meta.state,
        None,
        payload,
        meta.created_ms,
        meta.ingredients,
    );
    let mut out = encode_prefix(&forged).unwrap();
    out.extend_from_slice(payload);
    out
}

/// With a shared secret, `runs export` signs the archive (`run.seal`) and `runs import` takes
/// only an archive signed with that secret. Refused, naming the file, with nothing written: an
/// unsigned archive, one signed with another secret, and a signed one whose payload was replaced
/// by another valid entry of the same key and whose run.json was re-summed to match. Without a
/// secret that crafted archive imports, as before: archives are then trusted.
#[test]
fn with_a_shared_secret_only_archives_signed_with_it_import() {
    let f = Fixture::new();
    let ours = f.secret("ours", "the team's own shared secret");
    let theirs = f.secret("theirs", "another team's shared secret");
    let signed = f.path("signed.tar");
    let out = common::text(success(
        f.mck_signing("src", &ours)
            .args(["runs", "export", "r1"])
            .arg(&signed),
    ));
    assert!(out.contains("(signed with the shared secret)"), "{out}");
    let out = common::text(success(
        f.mck_signing("dst-ours", &ours)
            .args(["runs", "import", "--json"])
            .arg(&signed),
    ));
    let report: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        (report["artefacts"].as_u64(), report["signed"].as_bool()),
        (Some(2), Some(true))
    );

    let members = members_of(&signed);
    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(&names[..2], ["run.seal", "run.json"]);
    f.refused_under(
        "another secret",
        &members,
        Some(&theirs),
        "does not match the shared secret",
    );
    f.refused_under("unsigned", &members[1..], Some(&ours), "is not signed");
    f.refused_under(
        "bad seal",
        &[
            vec![Member::file("run.seal", b"forged\n")],
            members[1..].to_vec(),
        ]
        .concat(),
        Some(&ours),
        "not a seal",
    );

    // A payload replaced by another valid entry of its key, run.json re-summed, the seal kept.
    let mut forged = members.clone();
    let digest = forged[3].name.trim_start_matches("entries/").to_owned();
    forged[3].data = with_payload(&forged[3].data, &digest, b"what the attacker wants run");
    let mut m: Value = serde_json::from_slice(&forged[1].data).expect("run.json");
    m["files"][&forged[3].name] = sha256(&forged[3].data).into();
    forged[1] = Member::file("run.json", &serde_json::to_vec_pretty(&m).unwrap());
    f.refused_under(
        "forged payload",
        &forged,
        Some(&ours),
        "does not match the shared secret",
    );
    f.refused_under(
        "forged and unsigned",
        &forged[1..],
        Some(&ours),
        "is not signed",
    );
    // Without a secret the same archive imports: the seal is what tells them apart.
    let file = f.path("forged-no-secret.tar");
    write_tar(&file, &forged[1..]);
    success(f.mck("dst-trusting").args(["runs", "import"]).arg(&file));
}
