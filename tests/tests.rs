//! The integration tests of `mlir-cache-key`, linked into one binary instead of one per file
//! (each linked libMLIR and every dependency on its own). Each file under `tests/` is a module
//! here, so a test is found at the same path as before (`tests/cli_remote.rs`); one file's tests:
//! `cargo test -p mlir-cache-key --test tests cli_remote::`. The helpers the files share are
//! declared once, here.
//!
//! One process runs them all, in parallel threads: a test must not change what the process
//! shares (environment variables, the current directory, a global subscriber); it gives a child
//! `Command` its environment and directory instead.

// Helpers (`crate::common`, …). `redis_or_skip!` comes from `redis`: declared first, so that
// every module below sees the macro.
#[macro_use]
#[path = "remote/redis.rs"]
mod redis;

#[path = "remote/cluster.rs"]
mod cluster;
mod common;
#[path = "remote/garage.rs"]
mod garage;
#[path = "remote/gcs.rs"]
mod gcs;
#[macro_use]
#[path = "remote/postgres.rs"]
mod postgres;
mod kernel_helpers;
#[path = "remote/team.rs"]
mod team;

// The tests, one module per file.
mod canon_in_place;
mod canon_kernels;
mod canon_library;
mod canon_symbols;
mod canon_text_locations;
mod canonical_golden;
mod cli_addresses;
mod cli_big_hit;
mod cli_bypass;
mod cli_canon;
mod cli_config;
mod cli_direct;
mod cli_exec;
mod cli_help;
mod cli_hlo;
mod cli_import;
mod cli_inode_cache;
mod cli_json;
mod cli_key;
mod cli_netns;
mod cli_no_fsync;
mod cli_registry_postgres;
mod cli_remote;
mod cli_remote_chain;
mod cli_remote_cluster;
mod cli_remote_tls;
mod cli_remote_trust;
mod cli_report;
mod cli_s3;
mod cli_show;
mod cli_stats;
mod cli_store_safety;
mod cli_untrusted_input;
mod cli_verify_hits;
mod cli_verify_hits_remote;
mod cli_why_kernel;
mod cli_workflow;
mod cli_wrap;
mod front_binary;
mod fuzz_key;
mod kernel_counts;
mod plugin;
