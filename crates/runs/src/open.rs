//! Opening the cache with its run records: the registry is created (or repaired) beside the
//! index, and eviction learns what run records pin. Every caller that may evict (exec, `cache
//! gc`, the Python extension) opens its store here.

use std::sync::Arc;

use mck_store::{Settings, Store, Tiered};
use tracing::warn;

use crate::error::Result;
use crate::pins::RunPins;
use crate::registry::Registry;

/// `store` with [`RunPins`]; its registry is opened (created, repaired) first. A registry that
/// cannot be used blocks addressed work only (eviction then waits): a warning, not an error.
pub fn with_pins(store: Store) -> Store {
    if let Err(e) = Registry::open(&store) {
        warn!("{e}; addresses and run records are unavailable, unaddressed work goes on");
    }
    let pins = Arc::new(RunPins::new(store.layout()));
    store.with_pins(pins)
}

/// [`Store::open`] with the run records' pins.
pub fn open_store(settings: &Settings) -> Result<Store> {
    Ok(with_pins(Store::open(settings)?))
}

/// The store of `settings` with the run records' pins and its remote tier behind it
/// (`mck_remote::tiered`); `None` when caching is off (`--no_cache`, which turns the remote off
/// too). The one opener of a tiered cache for a compile.
pub fn open_tiered(settings: &Settings) -> Result<Option<Tiered>> {
    Ok(Store::open_configured(settings)?.map(|store| mck_remote::tiered(with_pins(store))))
}
