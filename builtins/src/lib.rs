//! Built-in processors: guards and transforms that need no model call, each written with
//! `#[processor]`, so each can be listed in `agent!` and is placed by the compiler.
//!
//! | built-in | hooks | what it does |
//! |---|---|---|
//! | [`RegexFilter`] | input, output stream, output result | blocks, redacts or flags personal data, credentials, links and custom patterns, also when split across streamed deltas |
//! | [`UnicodeNormalizer`] | input | normalises the input's text: NFKC or NFC, control and invisible characters, emoji, whitespace |
//! | [`SystemPromptScrubber`] | output stream, output result | blocks, redacts or flags answers that repeat the system prompt verbatim, also across deltas |
//! | [`BatchParts`] | output stream | merges text deltas into fewer, larger ones (by count, size or wait), keeping the order of every chunk |
//!
//! A guard stack, input and output:
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors_builtins::regex_filter::Preset;
//! use processors_builtins::{BatchParts, RegexFilter, SystemPromptScrubber, UnicodeNormalizer};
//! use processors_macros::agent;
//! use processors_runtime::prelude::*;
//!
//! let filter = RegexFilter::builder().preset(Preset::Pii).preset(Preset::Secrets).build()?;
//! let agent = agent! {
//!     crate: processors_runtime,
//!     instructions: "You are the support assistant of Acme. Escalations go to the night desk.",
//!     model: ScriptedModel::new([Turn::deltas(["Write to ", "ops@acme.example", " any time."])]),
//!     input: [UnicodeNormalizer::new(), filter.clone()],
//!     output: [filter, SystemPromptScrubber::new(), BatchParts::new()],
//! };
//! let result = agent.generate("Ｗｈｏ can help? I am jane@example.com").await?;
//! assert_eq!(result.text, "Write to [EMAIL] any time.");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Placement
//!
//! A built-in goes only in the lists it has hooks for: in `agent!` and `Agent::builder()`
//! the compiler refuses the others, and `build()` checks lists made at run time.
//!
//! ```compile_fail,E0277
//! use processors_builtins::UnicodeNormalizer;
//! use processors_macros::agent;
//! use processors_runtime::prelude::*;
//!
//! // An input processor in `output`.
//! let agent = agent! {
//!     crate: processors_runtime,
//!     model: ScriptedModel::new([]),
//!     output: [UnicodeNormalizer::new()],
//! };
//! ```
//!
//! ```compile_fail,E0277
//! use processors_builtins::BatchParts;
//! use processors_runtime::prelude::*;
//!
//! // An output processor in `input`.
//! let agent = Agent::builder().model(ScriptedModel::new([])).input(BatchParts::new());
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod stream_text;

pub mod batch_parts;
pub mod regex_filter;
pub mod system_prompt_scrubber;
pub mod unicode_normalizer;

pub use batch_parts::BatchParts;
pub use regex_filter::RegexFilter;
pub use system_prompt_scrubber::SystemPromptScrubber;
pub use unicode_normalizer::UnicodeNormalizer;
