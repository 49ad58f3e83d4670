//! The built-ins' integration tests, in one binary: one module a built-in or a family, the
//! helpers they share at the root. Apart, in binaries of their own: `stream_allocations`, which
//! counts allocations with a global allocator of its own, and the backends' tests that CI runs by
//! name once their services are up (`onnx`, `memory_conformance`, `postgres_store`,
//! `redis_cache`).

#[path = "../common/mod.rs"]
mod common;
#[path = "../judges/mod.rs"]
mod judges;
#[path = "../loopback/mod.rs"]
mod loopback;
#[path = "../services/mod.rs"]
mod services;
#[path = "../support/mod.rs"]
mod support;

mod anonymizer;
mod batch_parts;
mod chat_compression;
mod chat_recording;
mod classifier;
mod cost_guard;
mod detectors_http;
mod directory_context;
mod editor_context;
mod ensure_final_response;
mod eval;
mod language_detector;
mod linear_classifier;
mod loop_detection;
mod macros;
mod memory_import;
mod memory_input_filter;
mod moderation;
mod modifiers;
mod order;
mod pii_detector;
mod placement;
mod prompt_injection;
mod prompt_leak;
mod recovery;
mod regex_filter;
mod response_cache;
mod semantic_recall;
mod slash_commands;
#[cfg(feature = "sqlite")]
mod sqlite_store;
mod structured_output;
mod system_prompt_scrubber;
#[cfg(feature = "tiktoken")]
mod token_limiter;
mod tool_call_filter;
mod tool_search;
#[cfg(feature = "json-schema")]
mod tools;
mod unicode_normalizer;
#[cfg(feature = "sqlite")]
mod working_memory;
