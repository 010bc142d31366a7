//! The MLIR-free half of the `mlir-cache-key` command line: the whole command line's
//! definition (`command_line`), errors and exit codes, inputs, cache settings, logging, the
//! known compilers' argument shapes, `exec` and `wrap` up to a direct-mode hit, the commands
//! that manage a cache (`manage`), `why` of stored keys, completions and the man page (`help`),
//! running the compiler past an unusable cache (`bypass`), and the hand-over between the two
//! binaries (`handover`). The front binary (`front`) is built from it alone and so starts
//! without MLIR; the MLIR binary (the root crate's CLI) uses the same pieces for everything
//! else.

pub mod address_args;
pub mod bypass;
pub mod command_line;
pub mod compilers;
pub mod error;
pub mod exec;
pub mod flags;
pub mod front;
pub mod handover;
pub mod help;
pub mod inode_cache;
pub mod input;
pub mod key_args;
pub mod logging;
pub mod manage;
pub mod raw_digest;
pub mod settings;
pub mod why;
pub mod wrap;
