//! # processors
//!
//! Processor pipelines for LLM agents, checked at compile time.
//!
//! A **processor** is a small unit that plugs into an agent's loop at fixed points: before the
//! model sees the conversation, before each model call, on every streamed chunk, after each
//! model step, before each tool call and after its result, once at the end, and when the
//! provider rejects a request. Processors normalise and guard input, redact streamed output,
//! retry bad answers with feedback, recover from provider errors, enforce budgets, cache
//! responses and keep memory.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::prelude::*;
//!
//! /// Upper-cases streamed text.
//! #[processor(output_stream)]
//! fn shout(chunk: &Chunk) -> StreamAction {
//!     chunk.clone().map_text(|t| t.to_uppercase()).into()
//! }
//!
//! let agent = agent! {
//!     model: ScriptedModel::new([Turn::text("hello")]),
//!     output: [Shout],
//! };
//! assert_eq!(agent.generate("hi").await.unwrap().text, "HELLO");
//! # });
//! ```
//!
//! Every example on this page runs offline on [`ScriptedModel`](model::ScriptedModel), a model
//! that plays scripted turns and records the requests it gets; [`providers`] has the HTTP
//! models (OpenAI-compatible servers and Anthropic). Paths such as `docs/semantics.md` or
//! `tests/ui/fail/…` name files of the repository (the crate's `repository` link).
//!
//! # What a processor is
//!
//! A processor is a value of a type implementing [`Processor`]: an id (it names the processor in
//! errors, trip wires and traces, and keys its state), the set of hooks it implements
//! ([`Processor::HOOKS`]), a per-request state type, and one async method per hook. An agent
//! holds three ordered lists of processors:
//!
//! - `input`: processors with an input hook (`process_input`, `process_input_step`,
//!   `process_llm_request`);
//! - `output`: processors with an output hook (`process_llm_response`, `process_output_stream`,
//!   `process_output_step`, `process_tool_call`, `process_tool_result`,
//!   `process_output_result`);
//! - `error`: processors with `process_api_error`.
//!
//! A processor goes only in the lists of the hooks it has; the marker traits
//! [`InputProcessor`](processor::InputProcessor), [`OutputProcessor`](processor::OutputProcessor)
//! and [`ErrorProcessor`](processor::ErrorProcessor) say which, and the compiler refuses the
//! others. Within a list processors run strictly in order, one at a time; each sees what the
//! ones before it left.
//!
//! # The ten hooks
//!
//! | hook | runs | receives | may return |
//! |---|---|---|---|
//! | `process_input` | once, before the loop, on the new input (system messages apart) | [`InputArgs`](processor::InputArgs) | unchanged, messages, or messages and system messages |
//! | `process_input_step` | before every model call, tool continuations included; results chain | [`InputStepArgs`](processor::InputStepArgs) | overrides for this step: model, tools, tool choice, active tools, messages, system messages, provider options, settings |
//! | `process_llm_request` | on the provider request, before the call | [`LlmRequestArgs`](processor::LlmRequestArgs) | continue, a prompt for this call only, or a full response (a cache hit: the model is not called) |
//! | `process_llm_response` | after a step's chunks are collected, or replayed from a cache | [`LlmResponseArgs`](processor::LlmResponseArgs) | nothing (side effects: cache writes) |
//! | `process_output_stream` | on every streamed chunk | [`OutputStreamArgs`](processor::OutputStreamArgs) | pass, replace, drop (or hold back), or several chunks for one |
//! | `process_output_step` | after each model response, before tools run | [`OutputStepArgs`](processor::OutputStepArgs) | changed step messages, or an abort that asks for a retry |
//! | `process_tool_call` | on each of a step's tool calls, after the step's `process_output_step` and before any of its tools runs | [`ToolCallArgs`](processor::ToolCallArgs) | a [`ToolCallAction`](processor::ToolCallAction): continue, rewritten arguments, a result in the tool's place, a refusal the model reads as the tool's error, or a request for a person's approval; an abort (with `retry`, the step again) |
//! | `process_tool_result` | after each call, run or failed (`is_error`), before its result enters history | [`ToolResultArgs`](processor::ToolResultArgs) | a [`ToolResultAction`](processor::ToolResultAction): keep, a changed result, a copy for the model alone (history keeps the whole result), or both |
//! | `process_output_result` | once at the end; sees text, usage, finish reason and steps | [`OutputResultArgs`](processor::OutputResultArgs) | changed response messages |
//! | `process_api_error` | when the provider rejects a request (a 4xx such as 400 or 422) or the stream fails | [`ApiErrorArgs`](processor::ApiErrorArgs) | retry (after fixing the message list), or unhandled |
//!
//! Each arguments type has a runnable example of its hook. Any hook may also fail with an
//! [`Abort`] (`Err(abort.reason("…").retry(true).metadata(…).into())`): the chain stops, and
//! unless the step is retried the run ends with a [`TripWire`]. `abort.warn()` reports a warning
//! and lets the data through. The exact rules the runner follows, and the behaviours the tests
//! check, are in `docs/semantics.md`; what the built-in processors do, in `docs/builtins.md`.
//!
//! A `process_tool_call` processor may ask a person to approve a call
//! ([`ToolCallAction::approval`](processor::ToolCallAction::approval)): the run pauses before
//! any tool of its step runs, is kept in the agent's memory store, and
//! [`Agent::resume`] continues it once, with an [`Approval`](agent::Approval), in this process
//! or another.
//!
//! # Writing a processor with `#[processor]`
//!
//! [`#[processor(hook)]`](macro@processor) on a function generates a unit struct named after it
//! (`no_digits` → `NoDigits`) that implements [`Processor`] and the marker trait of its list. The
//! function asks for what it needs by type: `&Chunk`, `&str` (a step's text),
//! `Vec<Message>`, `&mut MessageList`, [`StepNumber`](processor::extract::StepNumber),
//! [`RetryCount`](processor::extract::RetryCount), `&mut RequestContext`, [`Abort`], and
//! `state: &mut T` for its per-request state. Asking for something the hook does not provide is
//! a compile error that lists what it does provide. `#[config]` parameters become fields of the
//! struct, given to `new`.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::prelude::*;
//!
//! /// Drops digits from streamed text, counting the deltas it changed.
//! #[processor(output_stream)]
//! fn no_digits(chunk: &Chunk, state: &mut usize) -> StreamAction {
//!     match chunk.text_delta() {
//!         Some(t) if t.chars().any(|c| c.is_ascii_digit()) => {
//!             *state += 1;
//!             chunk.clone().map_text(|t| t.replace(|c: char| c.is_ascii_digit(), "#")).into()
//!         }
//!         _ => StreamAction::Pass,
//!     }
//! }
//!
//! /// Blocks a question that mentions one of its words.
//! #[processor(input)]
//! fn deny_words(
//!     messages: Vec<Message>,
//!     abort: Abort,
//!     #[config] words: &[String],
//! ) -> Result<(), ProcessorError> {
//!     let hit = |m: &Message| words.iter().any(|w| m.text().contains(w.as_str()));
//!     match messages.iter().any(hit) {
//!         true => Err(abort.reason("off-topic question").into()),
//!         false => Ok(()),
//!     }
//! }
//!
//! let agent = agent! {
//!     model: ScriptedModel::cycle([Turn::deltas(["Call ", "555-0100"])]),
//!     input: [DenyWords::new(vec!["lottery".into()])],
//!     output: [NoDigits],
//! };
//! assert_eq!(agent.generate("Who do I call?").await.unwrap().text, "Call ###-####");
//! let blocked = agent.generate("lottery numbers?").await.unwrap();
//! assert_eq!(blocked.tripwire.unwrap().reason, "off-topic question");
//! # });
//! ```
//!
//! On an `impl` block, `#[processor]` turns the methods named after hooks (`process_input`,
//! `process_output_step`, …) into the hooks of one processor, which reads its configuration
//! from `&self`. A processor can also be written by hand (see [`Processor`]), or as a closure
//! over its hook's arguments ([`output_stream_fn`](processor::output_stream_fn) and the other
//! `*_fn` functions), for lists built at run time.
//!
//! # Declaring an agent with `agent!`
//!
//! [`agent!`] builds an agent whose lists are tuples: each hook call is a direct, inlinable call,
//! with no boxing or virtual call per chunk. Entries are any expressions (a unit struct, a
//! constructor, a variable, an `Arc<P>` shared between agents, or the word `memory`).
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::prelude::*;
//! use serde_json::json;
//!
//! /// Trims the question.
//! #[processor(input)]
//! fn trim(messages: Vec<Message>) -> Vec<Message> {
//!     messages
//!         .into_iter()
//!         .map(|mut m| {
//!             let t = m.text().trim().to_owned();
//!             m.set_text(t);
//!             m
//!         })
//!         .collect()
//! }
//!
//! /// Rejects a step with neither text nor tool calls.
//! #[processor(output_step)]
//! fn not_empty(text: &str, calls: &[ToolCall], abort: Abort) -> Result<(), ProcessorError> {
//!     match text.trim().is_empty() && calls.is_empty() {
//!         true => Err(abort.reason("say something").retry(true).into()),
//!         false => Ok(()),
//!     }
//! }
//!
//! let clock = tool("clock", "The time", json!({ "type": "object" }), |_| async {
//!     Ok(json!("12:00"))
//! });
//! let model = ScriptedModel::new([
//!     Turn::empty().tool_call("call-1", "clock", json!({})),
//!     Turn::text("It is noon."),
//! ]);
//! let agent = agent! {
//!     name: "support",
//!     instructions: "You are a helpful assistant.",
//!     model: model.clone(),
//!     tools: [clock],
//!     memory: Memory::new(InMemoryStore::new()),
//!     input: [memory, Trim],
//!     output: [NotEmpty, memory],
//!     max_processor_retries: 2,
//!     max_steps: 4,
//! };
//! let result = agent.generate("  What time is it?  ").await.unwrap();
//! assert_eq!(result.text, "It is noon.");
//! assert_eq!(result.tool_results[0].result, json!("12:00"));
//! assert_eq!(model.requests()[0].prompt[1].text(), "What time is it?");
//! # });
//! ```
//!
//! For lists known only at run time, [`Agent::builder`] takes processors one by one
//! (`.input(p)`, `.output(p)`, `.error(p)`, each checked by its marker trait) or a
//! [`DynPipeline`](processor::DynPipeline), and a call can replace a list with
//! [`GenerateOptions`]. `build()` checks every list and refuses a misplaced processor.
//!
//! # What `agent!` checks at compile time
//!
//! Each rule has a compile-fail case under `tests/ui/fail/` in the repository, with the exact
//! message beside it (the `.stderr` file of the same name); `tests/ui.rs` runs them. Errors point
//! at the offending token.
//!
//! | rule | case (`tests/ui/fail/…`) |
//! |---|---|
//! | keys are known; a misspelt one gets a suggestion | `agent_unknown_key.rs` |
//! | no key is given twice | `agent_duplicate_key.rs` |
//! | `model` is given, and is a [`LanguageModel`](model::LanguageModel) | `agent_missing_model.rs`, `agent_model_not_a_model.rs` |
//! | lists are in brackets, at most 16 entries each | `agent_list_without_brackets.rs`, `agent_list_longer_than_sixteen.rs` |
//! | a processor goes only in a list it has a hook for; the error says where it belongs | `agent_output_processor_in_input.rs`, `agent_input_processor_in_output.rs`, `agent_error_processor_in_output.rs`, `agent_input_and_error_processor_in_output.rs`, `agent_stream_processor_in_error.rs`, `agent_tool_call_processor_in_input.rs` |
//! | the same for built-ins, for workflows (from the processors of their steps) and for the builder | `agent_builtin_output_processor_in_input.rs`, `agent_builtin_input_processor_in_output.rs`, `agent_workflow_in_a_list_of_no_step.rs`, `builder_output_processor_in_input.rs` |
//! | a `#[processor]` function is not an entry: its generated type is | `agent_function_instead_of_its_type.rs` |
//! | `memory:` is a [`Memory`](memory::Memory) (or a pointer to one) | `agent_memory_key_not_memory.rs` |
//! | memory in a list needs the `memory:` key | `agent_memory_without_memory_key.rs`, `agent_memory_value_without_memory_key.rs`, `agent_shared_memory_without_memory_key.rs` |
//! | memory appears once per list, never in `error`, and last in `output` | `agent_memory_twice_in_a_list.rs`, `agent_memory_in_error_list.rs`, `agent_processor_after_memory_in_output.rs`, `agent_memory_value_before_other_output_processors.rs` |
//! | `max_steps` is an integer literal or a `u32` `const`, not 0 | `agent_zero_max_steps.rs`, `agent_max_steps_constant_zero.rs`, `agent_max_steps_constant_of_another_type.rs` |
//! | `max_processor_retries` is a non-negative integer literal or a `const` | `agent_retries_an_expression.rs`, `agent_retries_a_variable.rs`, `agent_retries_negative.rs` |
//! | `max_processor_retries` is set only when a processor can ask for a retry | `agent_retries_without_any_processor.rs`, `agent_retries_without_a_retrying_processor.rs` |
//! | without `max_processor_retries`, a processor that asks for a retry as written (`.retry(true)` in a step or tool-call hook) gets a warning at its entry: that retry would end the run (the warning is the `deprecated` lint's, the one way a macro warns on stable Rust; `#[allow(deprecated)]` silences it where each call sets the limit) | `agent_retry_without_limit_warns.rs` |
//! | `max_processor_retries` is not 0 when there are error processors | `agent_zero_retries_with_error_processors.rs`, `agent_retries_constant_zero_with_error_processors.rs` |
//! | no two processors of a list share an id (they would share state) | `agent_same_processor_twice.rs`, `agent_two_processors_with_one_id.rs`, `agent_two_processors_with_one_id_built_by_functions.rs`, `agent_two_processors_with_one_id_printed_as_written.rs` |
//! | `crate:` is a path | `agent_crate_not_a_path.rs` |
//! | several mistakes are reported in one build | `agent_several_mistakes_at_once.rs`, `agent_parse_and_check_mistakes_at_once.rs`, `agent_wrong_list_and_macro_mistakes_at_once.rs` |
//! | after a mistake, the code that uses the agent reports nothing more, and stays reachable | `agent_mistake_leaves_the_code_after_it_reachable.rs` |
//!
//! `agent!` compiles in generic code as anywhere else: in a generic function or method, a
//! closure, an `async` block (`tests/ui/pass/agent_in_generic_code.rs`). The checks of what
//! only the types know (hooks, ids, whether a processor can ask for a retry) are made by
//! `cargo check` for the types `#[processor]` writes, the crate's own processors and pointers,
//! shadows and workflows of them. For a processor whose type is a type parameter of the
//! function around `agent!` (or an `impl OutputProcessor` a function returns), or one
//! implemented by hand, they are made when the code is built,
//! for each instantiation, with the same messages
//! (`agent_in_generic_code_checked_when_instantiated.rs`,
//! `agent_processors_by_hand_checked_when_built.rs`).
//!
//! A misplaced processor's error is followed by two lines of the compiler's own: "the trait
//! `OutputProcessor` is implemented for `Trim`" and "required for `Trim` to implement
//! `OutputProcessor`", pointing at its `#[processor]`. They name the impl that carries the
//! message, whose bound never holds: `Trim` is not an output processor, and the first line of
//! the error says where it belongs. (Stable Rust has no way to leave them out: without that
//! impl the error could not say where the processor belongs.)
//!
//! `#[processor]` checks its input the same way (cases `tests/ui/fail/processor_*.rs`), among
//! them:
//!
//! | rule | case (`tests/ui/fail/…`) |
//! |---|---|
//! | the hook is named, and known | `processor_missing_hook.rs`, `processor_unknown_hook.rs`, `processor_impl_unknown_hook_method.rs` |
//! | a parameter is one the hook provides | `processor_unprovided_param_in_input.rs`, `processor_unprovided_param_in_stream.rs` |
//! | the return type is one the hook accepts | `processor_wrong_return_type.rs`, `processor_return_type_of_another_hook.rs` |
//! | state and configuration are owned (`'static`) | `processor_state_that_borrows.rs`, `processor_config_that_borrows.rs`, `processor_with_a_lifetime.rs` |
//! | the id is valid | `processor_bad_id.rs`, `processor_name_that_makes_no_valid_id.rs` |
//! | an async hook's future is `Send` | `processor_async_hook_not_send.rs` |
//! | the type is `Send + Sync + 'static` (one value serves concurrent runs): one error per missing bound, at the type | `processor_not_sync.rs`, `processor_generic_without_bounds.rs` |
//!
//! # Streaming
//!
//! [`Agent::stream`] runs the agent as a stream of [`Chunk`]s (`start`, `step-start`,
//! `text-delta`, `tool-call`, `step-finish`, `finish`, …); every chunk goes through the output
//! processors' `process_output_stream` in order, and what reaches the client is what the run
//! keeps (and what memory saves). A stream processor returns a
//! [`StreamAction`](processor::StreamAction): pass the chunk, replace it, drop it (a processor
//! that holds text back drops it and emits it later), or emit several chunks for one. An abort
//! on the stream ends it with exactly one `tripwire` chunk.
//!
//! An attempt that is tried again (a step an output-step processor rejects with a retry, or a
//! stream cut mid-answer and retried by an error processor) has already streamed its text;
//! its `step-finish` says `retry`. A client that builds what it shows with
//! [`AnswerText`](agent::AnswerText) has that text taken back, so the answer shows once.
//!
//! ```
//! # futures::executor::block_on(async {
//! use futures::StreamExt;
//! use processors::prelude::*;
//!
//! /// Stops the answer once it mentions a password.
//! #[processor(output_stream)]
//! fn no_passwords(chunk: &Chunk, abort: Abort) -> Result<StreamAction, ProcessorError> {
//!     match chunk.text_delta() {
//!         Some(t) if t.contains("password") => Err(abort.reason("password in the answer").into()),
//!         _ => Ok(StreamAction::Pass),
//!     }
//! }
//!
//! let agent = agent! {
//!     model: ScriptedModel::new([Turn::deltas(["Sure. ", "The password is hunter2"])]),
//!     output: [NoPasswords],
//! };
//! let mut stream = agent.stream("what is the password?");
//! let mut text = String::new();
//! let mut last = None;
//! while let Some(chunk) = stream.next().await {
//!     if let Some(t) = chunk.text_delta() {
//!         text.push_str(t);
//!     }
//!     last = Some(chunk.kind);
//! }
//! assert_eq!(text, "Sure. ");
//! assert!(matches!(last, Some(ChunkKind::Tripwire(ref t)) if t.processor_id == "no-passwords"));
//! # });
//! ```
//!
//! # Retries with feedback
//!
//! An abort with `retry(true)` from `process_output_step` (or `process_input_step`, or
//! `process_tool_call`) rejects the step: with `max_processor_retries` set, the step runs
//! again, the rejected answer left out of the prompt and the reason added as a feedback system
//! message. The rejected attempt is recorded as a step with finish reason `retry`, and streamed
//! as a `step-finish` with reason `retry`, so a client that showed its text knows it was
//! rejected. When retries run out, the run ends with the trip wire; without
//! `max_processor_retries`, a retry request is an abort (and a warning in the result).
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::prelude::*;
//!
//! /// Answers must not apologise.
//! #[processor(output_step)]
//! fn no_apologies(text: &str, abort: Abort) -> Result<(), ProcessorError> {
//!     match text.contains("Sorry") {
//!         true => Err(abort.reason("answer without apologising").retry(true).into()),
//!         false => Ok(()),
//!     }
//! }
//!
//! let model = ScriptedModel::new([Turn::text("Sorry, it is 4."), Turn::text("It is 4.")]);
//! let agent = agent! {
//!     model: model.clone(),
//!     output: [NoApologies],
//!     max_processor_retries: 2,
//! };
//! let result = agent.generate("2 + 2?").await.unwrap();
//! assert_eq!(result.text, "It is 4.");
//! assert_eq!(result.steps[0].finish_reason, FinishReason::Retry);
//! let feedback = model.requests()[1].prompt[0].text();
//! assert!(feedback.contains("answer without apologising"), "{feedback}");
//! # });
//! ```
//!
//! # Error processors
//!
//! When the provider rejects a request, or its stream fails, the run asks `process_api_error`
//! of the input, output and error processors in turn; the first that returns
//! [`ApiErrorAction::Retry`](processor::ApiErrorAction::Retry) (having fixed the message list)
//! has the model called again, up to `max_processor_retries` times (3 when unset). Unrecovered,
//! the run fails with [`AgentError::Api`].
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::prelude::*;
//!
//! /// On "prompt too long", keeps only the newest input message and tries again.
//! #[processor(api_error)]
//! fn keep_newest(error: &ApiError, list: &mut MessageList) -> ApiErrorAction {
//!     if error.status != Some(400) || !error.message.contains("too long") {
//!         return ApiErrorAction::Unhandled;
//!     }
//!     let ids: Vec<String> = list.input().map(|m| m.id.clone()).collect();
//!     if let Some((_, older)) = ids.split_last() {
//!         list.remove(&older.iter().map(String::as_str).collect::<Vec<_>>());
//!     }
//!     ApiErrorAction::Retry
//! }
//!
//! let model = ScriptedModel::new([
//!     Turn::error(ApiError::new(400, "prompt too long")),
//!     Turn::text("Paris."),
//! ]);
//! let agent = agent! { model: model.clone(), error: [KeepNewest] };
//! let input = vec![Message::user("(a long document)"), Message::user("Capital of France?")];
//! assert_eq!(agent.generate(input).await.unwrap().text, "Paris.");
//! assert_eq!(model.requests()[1].prompt.len(), 1);
//! # });
//! ```
//!
//! # Memory
//!
//! [`Memory`](memory::Memory) is a processor over a [`MemoryStore`](memory::MemoryStore): it
//! loads a thread's recent messages before the input processors and saves the turn after the
//! output processors (unless the word `memory` places it in a list), so what is saved is what they produced (redacted text is what is saved),
//! and a run that ends in a trip wire saves nothing. The thread and its owner come from the
//! request's [`RequestContext`]; without them memory does nothing.
//! [`InMemoryStore`](memory::InMemoryStore) keeps them in the process;
//! `Memory::sqlite("agent.db")` keeps them in a SQLite file across restarts
//! ([`builtins::storage::SqliteStore`]); with the feature `postgres`, `PostgresStore` shares
//! them between processes; any other database is a store of your own.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::prelude::*;
//!
//! let model = ScriptedModel::new([Turn::text("Hello, Ada."), Turn::text("You are Ada.")]);
//! let agent = agent! {
//!     model: model.clone(),
//!     memory: Memory::new(InMemoryStore::new()),
//! };
//! let ada = || {
//!     GenerateOptions::new().request_context(RequestContext::new().with_thread("t-1", "ada"))
//! };
//! agent.generate_with("I am Ada.", ada()).await.unwrap();
//! agent.generate_with("Who am I?", ada()).await.unwrap();
//! let prompt: Vec<String> = model.requests()[1].prompt.iter().map(Message::text).collect();
//! assert_eq!(prompt, ["I am Ada.", "Hello, Ada.", "Who am I?"]);
//! # });
//! ```
//!
//! The request context also carries typed values from one processor to the next within a
//! request (`&mut RequestContext` in a hook, [`RequestContext::insert`] and
//! [`RequestContext::get`]).
//!
//! # Workflows
//!
//! Processors compose as a [`Workflow`](workflow::Workflow), itself one processor: a sequence
//! (`then`), parallel branches on copies of the input (`parallel`), a condition (`branch`) and
//! `map` over messages. A workflow runs every hook of its processors; its type knows its steps,
//! so `agent!` places it by their hooks.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::prelude::*;
//!
//! #[processor(output_stream)]
//! fn shout(chunk: &Chunk) -> StreamAction {
//!     chunk.clone().map_text(|t| t.to_uppercase()).into()
//! }
//!
//! #[processor(output_stream)]
//! fn exclaim(chunk: &Chunk) -> StreamAction {
//!     chunk.clone().map_text(|t| t.replace('.', "!")).into()
//! }
//!
//! let loud = Workflow::new("loud").then(Shout).then(Exclaim);
//! let agent = agent! { model: ScriptedModel::new([Turn::text("hello.")]), output: [loud] };
//! assert_eq!(agent.generate("hi").await.unwrap().text, "HELLO!");
//! # });
//! ```
//!
//! # Testing a processor
//!
//! [`testing::Harness`] calls one hook of one processor without an agent, through the
//! dispatcher and stream chain an agent runs, and reports what it did: the outcome, the trip
//! wire of an abort, the warnings and the message list after it (a panic is an error value
//! that names the processor). The module has an example for each hook.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::prelude::*;
//! use processors::testing::Harness;
//!
//! /// Ends the run before the model is called when the question holds a password.
//! #[processor(input)]
//! fn no_passwords(messages: Vec<Message>, abort: Abort) -> Result<(), ProcessorError> {
//!     match messages.iter().any(|m| m.text().contains("password")) {
//!         true => Err(abort.reason("do not send passwords").into()),
//!         false => Ok(()),
//!     }
//! }
//!
//! let mut h = Harness::new(NoPasswords);
//! let blocked = h.input("my password is hunter2").await.unwrap();
//! assert_eq!(blocked.tripwire.unwrap().reason, "do not send passwords");
//! assert!(Harness::new(NoPasswords).input("hi").await.unwrap().tripwire.is_none());
//! # });
//! ```
//!
//! # Built-in processors
//!
//! [`builtins`] has processors for the common guards, limits and transforms (`RegexFilter`,
//! `UnicodeNormalizer`, `SystemPromptScrubber`, `BatchParts`, `TokenLimiter`, `ToolCallFilter`,
//! `LoopDetection`, `EnsureFinalResponse`, `CostGuard`, `ToolSearch`, `SystemPromptInjector`,
//! `HistoryWindow`, `EnvironmentContext`, `AtFileExpansion`) and detectors that ask a judging
//! model (`Moderation`, `PromptInjectionDetector`, `PiiDetector`, `LanguageDetector`,
//! `Classifier`, `ModelSelection`, `StructuredOutput`). Each is listed in `agent!` like any
//! processor, and placed by the compiler.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::regex_filter::Preset;
//! use processors::builtins::{RegexFilter, UnicodeNormalizer};
//! use processors::prelude::*;
//!
//! let filter = RegexFilter::builder().preset(Preset::Pii).build()?;
//! let agent = agent! {
//!     model: ScriptedModel::new([Turn::deltas(["Write to ", "ops@acme.example", " any time."])]),
//!     input: [UnicodeNormalizer::new(), filter.clone()],
//!     output: [filter],
//! };
//! assert_eq!(agent.generate("Who can help?").await?.text, "Write to [EMAIL] any time.");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Real models
//!
//! [`providers::resolve`] makes a model from an id such as `"openai/gpt-4o-mini"` and the key in
//! the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`; local servers such as Ollama need
//! none). Calls run on Tokio.
//!
//! ```no_run
//! use processors::prelude::*;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = Agent::builder()
//!     .instructions("You are terse.")
//!     .shared_model(processors::providers::resolve("openai/gpt-4o-mini")?)
//!     .build()?;
//! println!("{}", agent.generate("Say hello.").await?.text);
//! # Ok(())
//! # }
//! ```
//!
//! Runs report to [`tracing`](https://docs.rs/tracing) (spans per run, step, model call and hook
//! call, with OpenTelemetry's GenAI attribute names); [`trace::Recorder`] keeps one run's
//! timeline as JSON or a page, and the `otel` feature exports the spans over OTLP/HTTP.
//!
//! # Coming from Mastra
//!
//! The hooks and their behaviour follow Mastra's processors; what differs is that lists are
//! typed and placement, ids and limits are checked by the compiler.
//!
//! | Mastra | processors |
//! |---|---|
//! | `new Agent({ inputProcessors, outputProcessors, errorProcessors })` | `agent! { input: [...], output: [...], error: [...] }`, or `Agent::builder().input(p).output(p).error(p)` |
//! | `inputProcessors: ({ requestContext }) => [...]` | [`AgentBuilder::input_from`](agent::AgentBuilder::input_from) (and `output_from`, `error_from`) |
//! | `maxProcessorRetries`, `maxSteps` | `max_processor_retries:`, `max_steps:` |
//! | the `Processor` interface, `id` | the [`Processor`] trait, [`Processor::id`]; `#[processor(id = "...")]` |
//! | `processInput` | `process_input` (`#[processor(input)]`) |
//! | `processInputStep` | `process_input_step` |
//! | `processLLMRequest`, `processLLMResponse` | `process_llm_request`, `process_llm_response` |
//! | `processOutputStream` | `process_output_stream` |
//! | `processOutputStep` | `process_output_step` |
//! | `processToolResult` | `process_tool_result`, which also sees failed calls and can set a copy for the model alone ([`ToolResultAction`](processor::ToolResultAction)) |
//! | (no processor hook before a tool call) | `process_tool_call`, before each tool call: rewrite, answer, refuse, abort, or ask for approval ([`ToolCallAction`](processor::ToolCallAction)) |
//! | `processOutputResult` | `process_output_result` |
//! | `processAPIError` returning `{ retry: true }` | `process_api_error` returning `ApiErrorAction::Retry` |
//! | `abort(reason, { retry, metadata })`, the `TripWire` it throws | `Err(abort.reason(..).retry(true).metadata(..).into())`; the run's [`TripWire`] in `GenerateResult::tripwire` |
//! | the `tripwire` chunk | [`ChunkKind::Tripwire`] |
//! | `part`, `streamParts` | `&Chunk`, `&[Chunk]` (the stream history) |
//! | returning `null` from `processOutputStream` | `StreamAction::Drop` |
//! | `state` (one object per processor and request) | `state: &mut T`, typed, one per processor id and request |
//! | `retryCount`, `stepNumber`, `steps` | [`RetryCount`](processor::extract::RetryCount), [`StepNumber`](processor::extract::StepNumber), `&[StepResult]` |
//! | `messages`, `systemMessages`, `messageList` | `Vec<Message>`, [`SystemMessages`](processor::extract::SystemMessages), `&mut MessageList` |
//! | `requestContext` | `&RequestContext` / `&mut RequestContext` |
//! | `writer.custom({ type: 'data-…' })`, `processDataParts` | [`DataWriter::write`](processor::DataWriter::write), `#[processor(output_stream, process_data_parts)]` |
//! | `onViolation` | the agent's `on_violation:` callback, for every processor's aborts and warnings |
//! | `prepareStep` | [`GenerateOptions::prepare_step`] |
//! | processor workflows (`createWorkflow(...).then(...).parallel(...).branch(...)`) | [`Workflow::new(id).then(..).parallel(..).branch(..).map(..)`](workflow::Workflow) |
//! | `Memory` with `lastMessages`, the call's `memory: { thread, resource }` | `Memory::new(store).last_messages(Some(n))`, `RequestContext::new().with_thread(thread, resource)` |
//! | `LibSQLStore`, `PostgresStore` | `Memory::sqlite(path)`, `builtins::storage::PostgresStore` (feature `postgres`) |
//! | `ResponseCache` with `InMemoryServerCache` or `RedisCache`, `ResponseCache.context({ key, scope, bust })` | [`builtins::ResponseCache`] in `input` and `output`, over `InMemoryCache` or `RedisCache` (feature `redis`); a `CacheControl` in the request context |
//! | `SystemPromptScrubber` with a model | `SystemPromptScrubber` (verbatim, no model) and `builtins::detector::PromptLeakDetector` (judged) |
//! | `agent.generate()`, `agent.stream()` | [`Agent::generate`], [`Agent::stream`] |
//! | a model id `"openai/gpt-4o-mini"` | [`providers::resolve("openai/gpt-4o-mini")`](providers::resolve) |
//! | `ModerationProcessor`, `PIIDetector`, `PromptInjectionDetector`, `LanguageDetector`, `UnicodeNormalizer`, `TokenLimiterProcessor`, `BatchPartsProcessor`, `StructuredOutputProcessor`, … | the same names in [`builtins`] (`Moderation`, `PiiDetector`, `TokenLimiter`, `BatchParts`, `StructuredOutput`, …) |
//!
//! Beyond Mastra: a retry can also be asked from `process_input_step` and `process_tool_call`;
//! `process_tool_call` decides each tool call before it runs; `process_tool_result` sees failed
//! calls and can give the model a copy of a result apart from the one kept; a processor in a
//! list it has no hook for, two processors with one id, misplaced memory and limits that cannot
//! apply are compile errors; judges time out and run concurrently. `docs/semantics.md` and
//! `docs/builtins.md` mark each such behaviour.
//!
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "otel")]
pub mod otel;

// Inlined, so that `cargo doc -p processors` documents them under `processors::` (the paths a
// user writes) and the links to them resolve in its pages.
#[doc(inline)]
pub use processors_builtins as builtins;
/// How often a guard is right, on a labelled corpus: [`builtins::eval`].
#[doc(no_inline)]
pub use processors_builtins::eval;
#[doc(inline)]
pub use processors_config as config;
#[doc(inline)]
pub use processors_providers as providers;
pub use processors_runtime::*;

mod macros_doc;

#[doc(inline)]
pub use macros_doc::{agent, processor, tool};

/// The names most programs need: `use processors::prelude::*;`.
pub mod prelude {
    pub use crate::macros_doc::tool;
    pub use crate::{agent, processor};
    /// `Memory::sqlite("agent.db")`.
    #[cfg(feature = "sqlite")]
    pub use processors_builtins::storage::SqliteMemory as _;
    /// `Agent::from_config("agent.toml")`.
    pub use processors_config::FromConfig as _;
    pub use processors_runtime::model::ModelRequest;
    pub use processors_runtime::prelude::*;
    pub use processors_runtime::processor::extract::{
        Delivered, FromCache, IsError, ModelOutput, RetryCount, RunUsage, StepNumber,
        SystemMessages,
    };
    pub use processors_runtime::processor::{DataWriter, StepConfig};
    // A paused run's approvals, and what a `#[tool]` function asks for by type.
    pub use processors_runtime::agent::{Approval, ApprovalRequest, Decision};
    pub use processors_runtime::tool::ToolContext;
    // The built-ins a first agent reaches for (every one is in `processors::builtins`).
    pub use processors_builtins::regex_filter::Preset;
    pub use processors_builtins::{
        Anonymizer, BatchParts, CostGuard, EnsureFinalResponse, Judge, Moderation, PiiDetector,
        PrefillErrorHandler, PromptInjectionDetector, PromptLeakDetector, ProviderHistoryCompat,
        RegexFilter, StreamErrorRetry, SystemPromptScrubber, TokenLimiter, ToolApproval,
        ToolValidation, UnicodeNormalizer,
    };
    /// A JSON value (`serde_json::Value`): what tools return, and what a `tool_result` hook
    /// reads and may replace. An alias rather than a re-export, so the variants' names
    /// (`String`, …) do not come along and make the compiler spell out `std::string::String`
    /// in its messages.
    pub type Value = serde_json::Value;
}

/// Paths used by the code the macros generate. Not a stable API.
#[doc(hidden)]
pub use processors_runtime::__private;
