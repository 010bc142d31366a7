//! The one kind of MLIR context every path uses.
//!
//! Every upstream dialect is registered, as in `mlir-opt`, so the CLI, the
//! library and the pass plugin read the same program into the same IR (and so
//! emit the same bytes); dialects MLIR 22 lacks (stablehlo, sdy, mhlo, tt, …)
//! are allowed unregistered and parse in generic form.

use melior::Context;
use melior::dialect::DialectRegistry;
use melior::utility::register_all_dialects;

/// Creates a single-threaded context with all upstream dialects registered and
/// unregistered dialects allowed.
pub fn new_context() -> Context {
    let registry = DialectRegistry::new();
    register_all_dialects(&registry);
    // Threading would only add a thread pool: our passes are module-level.
    let context = Context::new_with_registry(&registry, false);
    context.set_allow_unregistered_dialects(true);
    context
}
