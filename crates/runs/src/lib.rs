//! Addresses and runs beside the cache: readable addresses (`project/module@v1`) that hold a
//! fingerprint, the run registry with its append-only, sealable run records, and run archives
//! (`runs export` / `runs import`). The cache itself (`mck-store`) knows nothing of them; it asks
//! [`RunPins`] which entries run records reference, and never evicts those. No MLIR needed.
//!
//! Files, each with one job:
//! - `address`: parsing, patterns and shapes of addresses, run ids;
//! - `state`: the typed states of a run line;
//! - `registry`: addresses, running marks and run records, decided once against either
//!   database: `v1/registry.sqlite` (`registry/sqlite.rs`; `registry_file`: that file's
//!   protections and repair) or a PostgreSQL schema a team shares (`registry/postgres.rs`,
//!   with its schema, connection, password file and lease renewal beside it);
//! - `pins`: what eviction must spare, read from the registry; `open`: a store that knows it;
//! - `archive`: run archives, verified before anything is written;
//! - `error`: what all of them fail with.

pub mod address;
pub mod archive;
mod error;
mod open;
mod pins;
mod registry;
mod registry_file;
mod state;

pub use address::{Address, AddressError, AddressPattern};
pub use error::{Result, RunsError};
pub use open::{Purpose, open_cache, with_pins};
pub use pins::RunPins;
pub use registry::{
    AddressClaim, AddressEntry, LineError, Registry, RunEntry, RunSummary, RunningEntry,
};
pub use state::{RunState, UnknownState};
