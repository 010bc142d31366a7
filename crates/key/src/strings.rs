//! Python's string rules, byte for byte, where JAX's key depends on them.

/// Python's `bytes.strip()`: ASCII space, `\t`, `\n`, `\r`, `\x0b`, `\x0c` at
/// both ends. (Rust's `str::trim` also removes non-ASCII spaces, and
/// `trim_ascii` keeps `\x0b`: neither matches.)
pub fn python_strip(bytes: &[u8]) -> &[u8] {
    let is_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let start = bytes
        .iter()
        .position(|b| !is_space(b))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !is_space(b))
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

/// Python's `str.isspace()` for one character: Unicode White_Space plus the
/// information separators U+001C–U+001F, which Python also splits on.
pub fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.split()` with no arguments.
pub fn python_split(text: &str) -> Vec<String> {
    text.split(is_python_space)
        .filter(|token| !token.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_is_pythons_bytes_strip() {
        assert_eq!(python_strip(b" \t\n\r\x0b\x0cx y\x0c\x0b\r\n\t "), b"x y");
        assert_eq!(python_strip(b"   "), b"");
        assert_eq!(python_strip(b""), b"");
        // NBSP (U+00A0) and U+3000 are not ASCII whitespace: kept.
        assert_eq!(
            python_strip("\u{a0}x\u{3000}".as_bytes()),
            "\u{a0}x\u{3000}".as_bytes()
        );
        // \x1c is not stripped by bytes.strip() either.
        assert_eq!(python_strip(b"\x1cx"), b"\x1cx");
    }

    #[test]
    fn split_is_pythons_str_split() {
        assert_eq!(python_split("  --a=1\t--b\n"), ["--a=1", "--b"]);
        assert_eq!(
            python_split("--a\x1c--b\x1d--c\x1e--d\x1f--e"),
            ["--a", "--b", "--c", "--d", "--e"]
        );
        assert_eq!(
            python_split("--a\u{85}--b\u{a0}--c\u{3000}--d\u{2028}--e"),
            ["--a", "--b", "--c", "--d", "--e"]
        );
        // Zero-width space is not whitespace in Python either.
        assert_eq!(python_split("--a\u{200b}--b"), ["--a\u{200b}--b"]);
        assert!(python_split(" \t ").is_empty());
    }
}
