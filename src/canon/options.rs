//! Canonicalization options (CLI flags, pass options and library fields alike).

/// What to do with kernels embedded in custom calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelMode {
    /// Strip their debug info losslessly (default).
    #[default]
    Strip,
    /// Leave their bytes as they are.
    Keep,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Keep debug info: skip strip-debuginfo and kernel stripping (JAX's
    /// `jax_compilation_cache_include_metadata_in_key`).
    pub keep_locations: bool,
    /// Replace the process address in `CustomSPMDPartitioning` custom calls by
    /// `"REMOVED"` (JAX's `IgnoreCallbacks.CUSTOM_PARTITIONING`).
    pub ignore_custom_partitioning: bool,
    pub kernels: KernelMode,
    /// Rename private `func.func` symbols to `private_<n>` in order of first
    /// reference from the public ones, so that traces whose private functions
    /// got other numeric suffixes (JAX issue 38828) share a key. Opt-in: the
    /// result is no longer JAX's canonical module.
    #[serde(default)]
    pub canonical_symbols: bool,
}
