//! The built-ins' options as a file writes them, and the factories that build each built-in
//! through its own builder (so a file-loaded built-in is validated as one built in code).
//! Grouped as the built-ins crate groups them; `docs/config.md` lists every name and option.

mod cache;
mod context;
mod detectors;
mod guards;
mod limits;
mod recovery;
mod tools;

use crate::registry::{Refusal, Registry};
use processors_builtins::Tokenizer;
use processors_builtins::config::Sites;
use serde::Deserialize;

/// The registry of the built-ins: `Registry::new()` here, beside what it registers, so that the
/// registry's own module knows none of them.
impl Registry {
    /// Every built-in processor, by its name in `docs/config.md`.
    ///
    /// ```
    /// use processors_config::Registry;
    /// let registry = Registry::new();
    /// assert!(registry.names().any(|n| n == "regex-filter"));
    /// ```
    pub fn new() -> Self {
        register(Registry::empty())
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

/// Registers every built-in.
fn register(registry: Registry) -> Registry {
    let registry = guards::register(registry);
    let registry = limits::register(registry);
    let registry = context::register(registry);
    let registry = recovery::register(registry);
    let registry = tools::register(registry);
    let registry = cache::register(registry);
    detectors::register(registry)
}

/// The options of a built-in that has none (`{ processor = "…" }` alone).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoOptions {}

/// A site: `input`, `stream` or `result`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Site {
    Input,
    Stream,
    Result,
}

/// The sites a list names.
pub(crate) fn sites(names: &[Site]) -> Sites {
    names.iter().fold(Sites::NONE, |all, site| {
        all | match site {
            Site::Input => Sites::INPUT,
            Site::Stream => Sites::STREAM,
            Site::Result => Sites::RESULT,
        }
    })
}

/// A tokenizer: `by-model`, `o200k`, `cl100k` or `estimate`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum TokenizerName {
    ByModel,
    O200k,
    Cl100k,
    Estimate,
}

/// The tokenizer a file names, if this build has it.
pub(crate) fn tokenizer(name: Option<TokenizerName>) -> Result<Option<Tokenizer>, Refusal> {
    let Some(name) = name else {
        return Ok(None);
    };
    Ok(Some(match name {
        TokenizerName::ByModel => Tokenizer::ByModel,
        TokenizerName::Estimate => Tokenizer::Estimate,
        #[cfg(feature = "tiktoken")]
        TokenizerName::O200k => Tokenizer::O200k,
        #[cfg(feature = "tiktoken")]
        TokenizerName::Cl100k => Tokenizer::Cl100k,
        #[cfg(not(feature = "tiktoken"))]
        TokenizerName::O200k | TokenizerName::Cl100k => {
            return Err(Refusal::Option(
                "tokenizer",
                "the `o200k` and `cl100k` tokenizers need the `tiktoken` feature of `processors` (on by default); turn it on, or use `estimate`".to_owned(),
            ));
        }
    }))
}

/// Applies `f` to `builder` when the option is set.
pub(crate) fn set<B, T>(builder: B, option: Option<T>, f: impl FnOnce(B, T) -> B) -> B {
    match option {
        Some(value) => f(builder, value),
        None => builder,
    }
}
