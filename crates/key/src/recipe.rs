//! Which JAX release's `cache_key.get` a key reproduces: a [`JaxRecipe`] per group of releases
//! whose recipes are identical, from 0.8.0 to 0.12.0.1 (facts in docs/jax-releases.md).
//!
//! The recipe covers everything the key library hashes differently between releases (the
//! backend entry, the accelerator entry, the flag exclusion list, the reset debug options) and
//! what the canonicalizer must do before the computation is hashed (callback removal, Mosaic
//! kernels), so one value chosen by version drives both.

use super::compile_options::{EXCLUDED_XLA_FLAGS, RESET_DEBUG_OPTIONS};
use serde::{Deserialize, Serialize};
use std::fmt;

/// How entry 6, `accelerator_config`, hashes the devices' topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AcceleratorHash {
    /// `topology.serialize()`: the serialized topology description (≤ 0.9).
    Serialized,
    /// `topology.fingerprint()` as 8 big-endian bytes (≥ 0.10).
    Fingerprint,
}

/// How `cache_key.get` is told which callbacks to leave out of the computation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallbackArgument {
    /// `ignore_callbacks: IgnoreCallbacks` = NO / ALL (every `stablehlo.custom_call` whose
    /// target ends in "callback", and custom partitioning) / CUSTOM_PARTITIONING (≤ 0.10).
    IgnoreCallbacks,
    /// `ignore_custom_partitioning: bool` (≥ 0.11).
    IgnoreCustomPartitioning,
}

/// What Mosaic (`tpu_custom_call`) kernels go through before the computation is hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MosaicKernels {
    /// Hashed as lowered (≤ 0.10).
    Kept,
    /// The kernel body's debug info stripped (0.11).
    BodyStripped,
    /// `custom_call_config.debug_locations` removed, else the body stripped (≥ 0.12).
    DebugLocationsRemoved,
}

/// One release group's key recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JaxRecipe {
    /// The recipe's name, `jax-<first release>`; stored in key records.
    pub name: &'static str,
    /// The JAX (and jaxlib) releases that use it.
    pub releases: &'static [&'static str],
    /// Entry 3 also hashes `backend.runtime_type` (0.8.0 and 0.8.1 only).
    pub hashes_runtime_type: bool,
    pub accelerator: AcceleratorHash,
    pub callbacks: CallbackArgument,
    pub mosaic: MosaicKernels,
    /// Entry 4 and `env_option_overrides`: flags kept out of the key.
    pub excluded_xla_flags: &'static [&'static str],
    /// Entry 5: DebugOptions fields reset before hashing.
    pub reset_debug_options: &'static [&'static str],
}

// JAX appended to both lists over time, so each release's list is a prefix of the newest.
const FLAGS_BEFORE_0_11: &[&str] = EXCLUDED_XLA_FLAGS.split_at(24).0;
const FLAGS_0_11_0: &[&str] = EXCLUDED_XLA_FLAGS.split_at(25).0;
const RESETS_BEFORE_0_11: &[&str] = RESET_DEBUG_OPTIONS.split_at(19).0;

// Each recipe is the one before it with what the release changed.
const JAX_0_8_0: JaxRecipe = JaxRecipe {
    name: "jax-0.8.0",
    releases: &["0.8.0", "0.8.1"],
    hashes_runtime_type: true,
    accelerator: AcceleratorHash::Serialized,
    callbacks: CallbackArgument::IgnoreCallbacks,
    mosaic: MosaicKernels::Kept,
    excluded_xla_flags: FLAGS_BEFORE_0_11,
    reset_debug_options: RESETS_BEFORE_0_11,
};
const JAX_0_8_2: JaxRecipe = JaxRecipe {
    name: "jax-0.8.2",
    releases: &["0.8.2", "0.8.3", "0.9.0", "0.9.0.1", "0.9.1", "0.9.2"],
    hashes_runtime_type: false,
    ..JAX_0_8_0
};
const JAX_0_10_0: JaxRecipe = JaxRecipe {
    name: "jax-0.10.0",
    releases: &["0.10.0", "0.10.1", "0.10.2"],
    accelerator: AcceleratorHash::Fingerprint,
    ..JAX_0_8_2
};
const JAX_0_11_0: JaxRecipe = JaxRecipe {
    name: "jax-0.11.0",
    releases: &["0.11.0"],
    callbacks: CallbackArgument::IgnoreCustomPartitioning,
    mosaic: MosaicKernels::BodyStripped,
    excluded_xla_flags: FLAGS_0_11_0,
    reset_debug_options: &RESET_DEBUG_OPTIONS,
    ..JAX_0_10_0
};
const JAX_0_11_1: JaxRecipe = JaxRecipe {
    name: "jax-0.11.1",
    releases: &["0.11.1", "0.11.2"],
    excluded_xla_flags: &EXCLUDED_XLA_FLAGS,
    ..JAX_0_11_0
};
const JAX_0_12_0: JaxRecipe = JaxRecipe {
    name: "jax-0.12.0",
    releases: &["0.12.0", "0.12.0.1"],
    mosaic: MosaicKernels::DebugLocationsRemoved,
    ..JAX_0_11_1
};

/// Every known recipe, oldest first.
pub const RECIPES: [JaxRecipe; 6] = [
    JAX_0_8_0, JAX_0_8_2, JAX_0_10_0, JAX_0_11_0, JAX_0_11_1, JAX_0_12_0,
];

/// A version no recipe is known for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no key recipe for JAX {version:?}: known releases are {}",
    JaxRecipe::known_releases().join(", ")
)]
pub struct UnknownJaxVersion {
    pub version: String,
}

impl JaxRecipe {
    /// The newest supported release's recipe: the default, and the recipe of records that
    /// predate recipes (they were all made with it).
    pub fn newest() -> &'static JaxRecipe {
        &RECIPES[RECIPES.len() - 1]
    }

    /// The recipe of JAX release `version` (e.g. "0.10.2"; a jaxlib version names the same
    /// release, as JAX pins its jaxlib).
    pub fn for_version(version: &str) -> Result<&'static JaxRecipe, UnknownJaxVersion> {
        let version = version.trim();
        RECIPES
            .iter()
            .find(|r| r.releases.contains(&version))
            .ok_or_else(|| UnknownJaxVersion {
                version: version.to_string(),
            })
    }

    /// The recipe called `name` (as stored in records).
    pub fn named(name: &str) -> Option<&'static JaxRecipe> {
        RECIPES.iter().find(|r| r.name == name)
    }

    pub fn known_releases() -> Vec<&'static str> {
        RECIPES
            .iter()
            .flat_map(|r| r.releases.iter().copied())
            .collect()
    }

    /// What differs between two recipes, one readable line per difference (empty: the same).
    pub fn differences(&self, other: &JaxRecipe) -> Vec<String> {
        let mut lines = Vec::new();
        let mut compare = |what: &str, a: String, b: String| {
            if a != b {
                lines.push(format!("{what}: {a} → {b}"));
            }
        };
        compare(
            "backend runtime_type hashed",
            self.hashes_runtime_type.to_string(),
            other.hashes_runtime_type.to_string(),
        );
        compare(
            "accelerator_config",
            format!("{:?}", self.accelerator),
            format!("{:?}", other.accelerator),
        );
        compare(
            "callback argument",
            format!("{:?}", self.callbacks),
            format!("{:?}", other.callbacks),
        );
        compare(
            "Mosaic kernels",
            format!("{:?}", self.mosaic),
            format!("{:?}", other.mosaic),
        );
        for (what, a, b) in [
            (
                "excluded XLA flags",
                self.excluded_xla_flags,
                other.excluded_xla_flags,
            ),
            (
                "reset debug options",
                self.reset_debug_options,
                other.reset_debug_options,
            ),
        ] {
            for name in b.iter().filter(|x| !a.contains(x)) {
                lines.push(format!("{what}: {name} added"));
            }
            for name in a.iter().filter(|x| !b.contains(x)) {
                lines.push(format!("{what}: {name} removed"));
            }
        }
        lines
    }
}

impl fmt::Display for JaxRecipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (JAX {})", self.name, self.releases.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_release_has_one_recipe_and_names_are_unique() {
        let releases = JaxRecipe::known_releases();
        let mut unique = releases.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), releases.len());
        assert_eq!(releases.len(), 16, "0.8.0 … 0.12.0.1");
        for r in &RECIPES {
            assert_eq!(JaxRecipe::named(r.name), Some(r));
            assert_eq!(r.name, format!("jax-{}", r.releases[0]));
        }
    }

    #[test]
    fn lists_grew_as_jax_appended() {
        let of = |v| JaxRecipe::for_version(v).unwrap();
        assert_eq!(of("0.10.2").excluded_xla_flags.len(), 24);
        assert_eq!(
            of("0.11.0").excluded_xla_flags.last(),
            Some(&"--xla_gpu_per_fusion_autotune_cache_dir")
        );
        assert_eq!(
            of("0.11.2").excluded_xla_flags.last(),
            Some(&"--xla_tpu_compiler_variant")
        );
        assert_eq!(of("0.9.2").reset_debug_options.len(), 19);
        assert!(
            !of("0.9.2")
                .reset_debug_options
                .contains(&"xla_gpu_per_fusion_autotune_cache_dir")
        );
        assert_eq!(of("0.12.0.1").reset_debug_options.len(), 20);
    }

    #[test]
    fn versions_choose_their_recipe() {
        assert_eq!(JaxRecipe::for_version("0.8.1").unwrap().name, "jax-0.8.0");
        assert_eq!(JaxRecipe::for_version("0.9.2").unwrap().name, "jax-0.8.2");
        assert_eq!(
            JaxRecipe::for_version(" 0.12.0.1 ").unwrap(),
            JaxRecipe::newest()
        );
        let error = JaxRecipe::for_version("0.7.2").unwrap_err().to_string();
        assert!(
            error.contains("\"0.7.2\"") && error.contains("0.12.0.1"),
            "{error}"
        );
    }

    #[test]
    fn differences_name_each_change() {
        let old = JaxRecipe::for_version("0.9.2").unwrap();
        let new = JaxRecipe::newest();
        let lines = old.differences(new);
        assert!(lines.contains(&"accelerator_config: Serialized → Fingerprint".to_string()));
        assert!(
            lines
                .iter()
                .any(|l| l.contains("--xla_tpu_compiler_variant added"))
        );
        assert!(lines.iter().any(|l| l.starts_with("Mosaic kernels")));
        assert!(new.differences(new).is_empty());
    }
}
