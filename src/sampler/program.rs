//! The sampler program: `nuts.stan`, compiled once by bat's own front end
//! with its body-less declarations as external functions.

use language::mir;
use std::sync::OnceLock;

/// Source of the sampler program (Stan's NUTS with adaptation).
pub const NUTS_SOURCE: &str = include_str!("nuts.stan");

/// The function running one chain.
pub const CHAIN_FUNCTION: &str = "sample_chain_rng";

/// The compiled sampler program. An error means bat's own sampler source
/// does not compile (a bug in bat), reported with the diagnostics.
pub fn nuts_program() -> Result<&'static mir::Program, String> {
    static PROGRAM: OnceLock<Result<mir::Program, String>> = OnceLock::new();
    PROGRAM
        .get_or_init(|| {
            let (program, diagnostics) = language::compile_with_externals(NUTS_SOURCE, "nuts");
            program.ok_or_else(|| {
                let lines = language::LineIndex::new(NUTS_SOURCE);
                let messages: Vec<String> = diagnostics
                    .iter()
                    .filter(|d| d.is_error())
                    .map(|d| {
                        let (line, col) =
                            lines.line_col(NUTS_SOURCE, d.primary.span.start as usize);
                        format!("nuts.stan:{line}:{col}: {}", d.message)
                    })
                    .collect();
                format!(
                    "internal error: the sampler program does not compile:\n{}",
                    messages.join("\n")
                )
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}
