//! Built-in processors: guards, limits, transforms and context modifiers, each written with
//! `#[processor]`, so each can be listed in `agent!` and is placed by the compiler. Most need
//! no model call; the [`detector`]s ask a judging model.
//!
//! | built-in | hooks | what it does |
//! |---|---|---|
//! | [`RegexFilter`] | input, output stream, output result | blocks, redacts or flags personal data, credentials, links and custom patterns, also when split across streamed deltas |
//! | [`Anonymizer`] | LLM request, tool call, output stream, output result | replaces personal data and credentials with typed placeholders (`[EMAIL_1]`) in every model call's prompt and restores them in the answer, streamed too, and in tools' arguments |
//! | [`UnicodeNormalizer`] | input | normalises the input's text: NFKC or NFC, control and invisible characters, emoji, whitespace |
//! | [`SystemPromptScrubber`] | output stream, output result | blocks, redacts or flags answers that repeat the system prompt verbatim, also across deltas |
//! | [`BatchParts`] | output stream | merges text deltas into fewer, larger ones (by count, size or wait), keeping the order of every chunk |
//! | [`TokenLimiter`] | input, input step, LLM request, output stream, output result | keeps prompts within a context window (real o200k/cl100k tokenizers) and cuts or stops answers at a limit |
//! | [`ToolCallFilter`] | LLM request | takes tool calls and results (all, or named tools) out of what the model sees, never out of history |
//! | [`LoopDetection`] | input step, output step | ends or steers a run that repeats a tool call or an answer |
//! | [`EnsureFinalResponse`] | input step | on the last allowed step, forbids tools and asks for an answer |
//! | [`CostGuard`] | input step, output step | a budget in tokens or money, per run or shared by resource or thread; warns, then stops |
//! | [`ToolSearch`] | input step | offers `search_tools`/`load_tool` instead of every tool's schema |
//! | [`SystemPromptInjector`] | input | adds instructions, fixed or from the request's context |
//! | [`HistoryWindow`] | LLM request | sends only the last turns or a token budget of the conversation, pair-safe |
//! | [`EnvironmentContext`] | input | tells the model its working directory, git branch, date and OS |
//! | [`AtFileExpansion`] | input | expands `@path` references into file contents, under a root only |
//! | [`Moderation`] | input, output stream, output step, output result | asks a judge whether content is harmful; blocks, flags, drops it or has the answer retried |
//! | [`PromptInjectionDetector`] | input | asks a judge for injection and jailbreak attempts; blocks, flags, drops or neutralises them |
//! | [`PiiDetector`] | input, output stream, output result | asks a judge for personal data; redacts (also across deltas), blocks, flags or drops it |
//! | [`PromptLeakDetector`] | output stream, output step, output result | asks a judge whether the answer discloses the system prompt, paraphrased, summarised or translated; blocks, flags, drops, redacts it or has the answer retried |
//! | [`LanguageDetector`] | input | asks a judge for the input's language; records, translates, blocks or flags it |
//! | [`Classifier`] | input | asks a judge which of your classes the request is in, for the processors after it |
//! | [`ModelSelection`] | input step | picks each step's model by the request's class |
//! | [`ResponseCache`] | LLM request, LLM response, output result | answers a model call made before from a cache (in memory, bounded, with expiry), skipping the model; scoped per resource |
//! | [`StructuredOutput`] | output step | makes the answer JSON of a Rust type: retries with the schema as feedback, or converts it with a model call; the typed value on the result |
//! | [`PrefillErrorHandler`] | API error | continues a conversation that ends with an assistant message when the provider refuses to ("assistant message prefill"), once per step |
//! | [`ProviderHistoryCompat`] | LLM request, API error | rewrites history a provider refuses (orphan tool results, calls without results, empty assistant messages, unsigned reasoning, invalid tool-call ids, your own rules): in each call's prompt, or in the list after a refusal that names it |
//! | [`ContextLengthHandler`] | API error | on a prompt over the context window, drops the oldest turns (pair-safe, never the newest user message) and retries |
//! | [`StreamErrorRetry`] | API error | calls the model again when its stream failed mid-answer, bounded, with an optional backoff |
//! | [`ToolValidation`] | tool call | checks a call's arguments against its tool's JSON Schema and your rules (denied values, paths under a root, allowed hosts); a refusal tells the model what to correct |
//! | [`ToolParameters`] | tool call | fills defaults, caps numbers and pins values from the request's context in calls' arguments |
//! | [`ToolApproval`] | tool call | asks a person to approve calls (by tool, or by a predicate on the arguments); the run pauses until it is resumed |
//! | [`ToolResultLimiter`] | tool result | caps the tokens the model reads of a tool's result, with a note; history keeps it whole |
//! | [`ToolInjection`] | input step | offers more tools on a step, by the request's context or the step |
//!
//! The [`recovery`] processors go in `error` (`ProviderHistoryCompat` in `input`, where it
//! also rewrites prompts).
//!
//! A guard stack, input and output:
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::regex_filter::Preset;
//! use processors::builtins::{BatchParts, RegexFilter, SystemPromptScrubber, UnicodeNormalizer};
//! use processors::agent;
//! use processors::prelude::*;
//!
//! let filter = RegexFilter::builder().preset(Preset::Pii).preset(Preset::Secrets).build()?;
//! let agent = agent! {
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
//! use processors::builtins::UnicodeNormalizer;
//! use processors::agent;
//! use processors::prelude::*;
//!
//! // An input processor in `output`.
//! let agent = agent! {
//!     model: ScriptedModel::new([]),
//!     output: [UnicodeNormalizer::new()],
//! };
//! ```
//!
//! ```compile_fail,E0277
//! use processors::builtins::BatchParts;
//! use processors::prelude::*;
//!
//! // An output processor in `input`.
//! let agent = Agent::builder().model(ScriptedModel::new([])).input(BatchParts::new());
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod stream_text;
mod timer;

// The families, by the stage each runs at (`order`); the shared core (`config`, `redact`,
// `tokenizer`, `order`, and the private `timer` and `stream_text`) beside them.
pub mod commands;
pub mod compression;
pub mod context;
pub mod detector;
pub mod eval;
pub mod files;
pub mod guards;
pub mod limits;
pub mod memory;
pub mod recovery;
pub mod response_cache;
pub mod shape;
pub mod storage;
pub mod tools;

pub mod config;
pub mod order;
pub mod redact;
pub mod tokenizer;

// Each built-in's module at the crate's root too, where it has always been.
pub use commands::{shell_injection, slash_commands};
pub use compression::chat_compression;
pub use context::{directory_context, editor_context, environment, system_prompt};
pub use files::at_file;
pub use guards::{anonymizer, regex_filter, system_prompt_scrubber, unicode_normalizer};
pub use limits::{cost_guard, ensure_final_response, loop_detection, token_limiter};
pub use memory::{
    chat_recording, history_window, memory_import, memory_input_filter, semantic_recall,
    working_memory,
};
pub use shape::batch_parts;
pub use tools::{tool_call_filter, tool_search};

pub use anonymizer::Anonymizer;
pub use at_file::{AtFileExpansion, OnRefusal};
pub use batch_parts::BatchParts;
pub use chat_compression::{ChatCompression, ConversationCompactor};
pub use chat_recording::ChatRecording;
pub use config::{ConfigError, Sites};
pub use cost_guard::CostGuard;
pub use detector::{
    Classifier, Judge, LanguageDetector, ModelSelection, Moderation, PiiDetector,
    PromptInjectionDetector, PromptLeakDetector, StructuredOutput,
};
pub use directory_context::DirectoryContext;
pub use editor_context::EditorContext;
pub use ensure_final_response::EnsureFinalResponse;
pub use environment::EnvironmentContext;
pub use history_window::HistoryWindow;
pub use loop_detection::LoopDetection;
pub use memory_import::MemoryImport;
pub use memory_input_filter::MemoryInputFilter;
pub use recovery::{
    ContextLengthHandler, PrefillErrorHandler, ProviderHistoryCompat, StreamErrorRetry,
    TrailingAssistantGuard, UnsupportedFileHandler, UnsupportedSettingHandler,
};
pub use redact::Redaction;
pub use regex_filter::RegexFilter;
pub use response_cache::ResponseCache;
pub use semantic_recall::SemanticRecall;
pub use slash_commands::SlashCommands;
pub use system_prompt::SystemPromptInjector;
pub use system_prompt_scrubber::SystemPromptScrubber;
pub use token_limiter::TokenLimiter;
pub use tokenizer::Tokenizer;
pub use tool_call_filter::ToolCallFilter;
pub use tool_search::ToolSearch;
pub use tools::{ToolApproval, ToolInjection, ToolParameters, ToolResultLimiter, ToolValidation};
pub use unicode_normalizer::UnicodeNormalizer;
pub use working_memory::WorkingMemory;
