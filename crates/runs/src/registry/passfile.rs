//! The password of a shared registry from a libpq password file (`PGPASSFILE`, else
//! `~/.pgpass`), which the PostgreSQL client crate does not read: lines of
//! `host:port:database:user:password`, `*` matching anything, `\` escaping `:` and `\`. As
//! libpq does, a file that others may read is ignored (with a warning).

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// A password file larger than this is not read.
const MAX_PASSFILE_LEN: u64 = 1 << 20;

/// What a line is matched against.
pub(crate) struct Login<'a> {
    pub host: &'a str,
    pub port: u16,
    pub database: &'a str,
    pub user: &'a str,
}

/// The password file's password for `login`, if the file exists and has a matching line.
pub(crate) fn lookup(login: &Login<'_>) -> Option<String> {
    let path = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pgpass")))?;
    let file = std::fs::File::open(&path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.permissions().mode() & 0o077 != 0 {
        tracing::warn!(
            "password file {} is readable by others (chmod 0600 it): not used",
            path.display()
        );
        return None;
    }
    let mut text = String::new();
    file.take(MAX_PASSFILE_LEN).read_to_string(&mut text).ok()?;
    find(&text, login)
}

/// The password of the first line of `text` that matches `login`.
pub(crate) fn find(text: &str, login: &Login<'_>) -> Option<String> {
    let port = login.port.to_string();
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(fields)
        .find(|f| {
            let matches = |field: &str, value: &str| field == "*" || field == value;
            matches(&f[0], login.host)
                && matches(&f[1], &port)
                && matches(&f[2], login.database)
                && matches(&f[3], login.user)
        })
        .map(|mut f| f.swap_remove(4))
}

/// A line's five fields, unescaped; `None` for a line of another shape.
fn fields(line: &str) -> Option<Vec<String>> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut()?.push(chars.next()?),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut()?.push(c),
        }
    }
    (fields.len() == 5).then_some(fields)
}

#[cfg(test)]
mod tests {
    use super::{Login, find};

    #[test]
    fn lines_match_by_field_with_wildcards_and_escapes() {
        let login = Login {
            host: "db.internal",
            port: 5432,
            database: "builds",
            user: "ci",
        };
        let text =
            "# comment\nother:5432:builds:ci:wrong\n*:5432:builds:ci:p\\:ass\\\\1\n*:*:*:*:any\n";
        assert_eq!(find(text, &login).as_deref(), Some("p:ass\\1"));
        assert_eq!(find("db.internal:5433:*:*:x\n", &login), None);
        assert_eq!(find("*:*:*:*\n", &login), None, "four fields is no line");
        assert_eq!(find("*:*:*:*:a:b\n", &login).as_deref(), Some("a:b"));
    }
}
