//! Key errors: each names the input at fault.

use super::compile_options::OptionsError;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{source_name} is not valid UTF-8")]
    NotUtf8 { source_name: String },
    #[error("compile options {input}: {source}")]
    CompileOptions {
        input: String,
        #[source]
        source: OptionsError,
    },
    /// The canonical module could not be written.
    #[error(transparent)]
    Computation(super::inputs::SourceError),
}
