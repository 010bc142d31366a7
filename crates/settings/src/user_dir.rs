//! The per-user default cache directory, as ccache, sccache and pip choose theirs:
//! `$XDG_CACHE_HOME/mlir-cache-key`, else `$HOME/.cache/mlir-cache-key`. A relative
//! `XDG_CACHE_HOME` is ignored, as the XDG Base Directory specification says. Each user gets a
//! cache of their own, so no second user meets a directory the first one created 0700.

use std::ffi::OsString;
use std::path::PathBuf;

/// The cache directory's name under the user's cache home.
pub const CACHE_DIR_NAME: &str = "mlir-cache-key";

/// The default cache directory for the values of `XDG_CACHE_HOME` and `HOME` given; the error
/// says why there is none and how to choose one.
pub fn user_cache_dir(
    xdg_cache_home: Option<OsString>,
    home: Option<OsString>,
) -> Result<PathBuf, String> {
    let absolute =
        |value: Option<OsString>| value.map(PathBuf::from).filter(|path| path.is_absolute());
    if let Some(xdg) = absolute(xdg_cache_home) {
        return Ok(xdg.join(CACHE_DIR_NAME));
    }
    match absolute(home) {
        Some(home) => Ok(home.join(".cache").join(CACHE_DIR_NAME)),
        None => Err(
            "no default cache directory: neither XDG_CACHE_HOME nor HOME is an absolute path; \
             choose one with --cache_dir=DIR in MLIR_CACHE_KEY_FLAGS"
                .to_owned(),
        ),
    }
}

/// [`user_cache_dir`] of this process's environment.
pub(crate) fn from_env() -> Result<PathBuf, String> {
    user_cache_dir(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdg_first_then_home_and_only_absolute_paths() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(
            user_cache_dir(os("/x/cache"), os("/home/u")),
            Ok(PathBuf::from("/x/cache/mlir-cache-key"))
        );
        assert_eq!(
            user_cache_dir(os("relative"), os("/home/u")),
            Ok(PathBuf::from("/home/u/.cache/mlir-cache-key"))
        );
        assert_eq!(
            user_cache_dir(None, os("/home/u")),
            Ok(PathBuf::from("/home/u/.cache/mlir-cache-key"))
        );
        assert!(user_cache_dir(os(""), None).is_err());
        assert!(user_cache_dir(None, os("home")).is_err());
    }
}
