//! Built-in processors: guards and transforms that need no model call, each written with
//! `#[processor]`, so each can be listed in `agent!` and is placed by the compiler.
//!
//! | built-in | hooks | what it does |
//! |---|---|---|
//! | [`RegexFilter`] | input, output stream, output result | blocks, redacts or flags personal data, credentials, links and custom patterns, also when split across streamed deltas |
//! | [`UnicodeNormalizer`] | input | normalises the input's text: NFKC or NFC, control and invisible characters, emoji, whitespace |
//! | [`SystemPromptScrubber`] | output stream, output result | blocks, redacts or flags answers that repeat the system prompt verbatim, also across deltas |
//! | [`BatchParts`] | output stream | merges text deltas into fewer, larger ones (by count, size or wait), keeping the order of every chunk |
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
