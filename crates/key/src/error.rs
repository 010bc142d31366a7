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
    /// The accelerator input is not the form the recipe hashes.
    #[error("recipe {recipe} hashes the topology as {wanted:?}, but {given} was given")]
    AcceleratorForm {
        recipe: &'static str,
        given: String,
        wanted: super::AcceleratorHash,
    },
    /// The canonical module could not be written.
    #[error(transparent)]
    Computation(super::inputs::SourceError),
}
