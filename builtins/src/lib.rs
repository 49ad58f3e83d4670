//! Built-in processors: guards and transforms that need no model call, each written with
//! `#[processor]`, so each can be listed in `agent!` and is placed by the compiler.
//!
//! | built-in | hooks | what it does |
//! |---|---|---|
//! | [`RegexFilter`] | input, output stream, output result | blocks, redacts or flags personal data, credentials, links and custom patterns, also when split across streamed deltas |
//! | [`UnicodeNormalizer`] | input | normalises the input's text: NFKC or NFC, control and invisible characters, emoji, whitespace |
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod stream_text;

pub mod regex_filter;
pub mod unicode_normalizer;

pub use regex_filter::RegexFilter;
pub use unicode_normalizer::UnicodeNormalizer;
