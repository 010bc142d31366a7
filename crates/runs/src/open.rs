//! The one way to open the cache: from [`Settings`], this host's store with the run records'
//! pins (an existing registry is repaired first, and eviction spares what run records
//! reference) and the chain of remote tiers behind it (`mck_remote::Tiered`). The command line,
//! exec/wrap and the Python extension all open here.

use std::sync::Arc;

use mck_remote::Tiered;
use mck_settings::{RegistrySettings, Settings};
use mck_store::Store;
use tracing::warn;

use crate::error::Result;
use crate::pins::RunPins;
use crate::registry::Registry;

/// What the cache is opened for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A compile (`exec`, `wrap`, the Python package): nothing when caching is off
    /// (`--no_cache`, which turns the remote tiers off too).
    Compile,
    /// Inspecting or managing it (`cache …`, `runs …`, `why`): opened even when caching is off.
    Manage,
}

/// The cache `settings` describe (see the module doc); `None` only for [`Purpose::Compile`]
/// with caching off. A registry that cannot be used blocks addressed work only (eviction then
/// waits): a warning, not an error. The read-only setting (or a cache directory that is not
/// writable) opens the store read-only.
pub fn open_cache(settings: &Settings, purpose: Purpose) -> Result<Option<Tiered>> {
    if purpose == Purpose::Compile && !settings.store.enabled {
        return Ok(None);
    }
    let store = with_pins(Store::open(&settings.store)?, &settings.registry);
    Ok(Some(Tiered::open(store, &settings.remote)))
}

/// `store` with [`RunPins`]; a local registry that exists is opened (repaired) first, and one
/// that does not is created by the first addressed work (the pins of none are none: a new
/// cache, or one only JAX uses, saves creating it). A shared one is connected to when
/// addressed work or a command needs it, not for every compile.
pub fn with_pins(store: Store, registry: &RegistrySettings) -> Store {
    if registry.shared.is_none()
        && std::fs::symlink_metadata(store.layout().registry_path()).is_ok()
        && let Err(e) = Registry::open(&store, registry)
    {
        warn!("{e}; addresses and run records are unavailable, unaddressed work goes on");
    }
    let pins = Arc::new(RunPins::new(store.layout(), registry));
    store.with_pins(pins)
}
