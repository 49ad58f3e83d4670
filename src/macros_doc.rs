//! The macros, documented where users find them.

/// Turns a function, or an `impl` block of hook methods, into a processor.
///
/// # On a function
///
/// Name the hook the function implements. The macro generates a unit struct named after the
/// function in UpperCamelCase (`count_chars` → `CountChars`) that implements [`Processor`]
/// and the marker trait of its side ([`InputProcessor`], [`OutputProcessor`] or
/// [`ErrorProcessor`]). The function may be `async` or not.
///
/// ```
/// use processors::prelude::*;
///
/// /// Upper-cases streamed text.
/// #[processor(output_stream)]
/// fn shout(chunk: &Chunk) -> StreamAction {
///     match chunk.text_delta() {
///         Some(t) => chunk.clone().map_text(|_| t.to_uppercase()).into(),
///         None => StreamAction::Pass,
///     }
/// }
///
/// assert_eq!(Shout::ID, "shout");
/// assert!(<Shout as Processor>::HOOKS.contains(Hook::OutputStream));
/// ```
///
/// The hooks: `input`, `input_step`, `llm_request`, `llm_response`, `output_stream`,
/// `output_step`, `tool_result`, `output_result`, `api_error`.
///
/// A function whose name makes no struct name (`_2nd_pass` would give `2ndPass`, `self_`
/// the keyword `Self`) is an error that asks for one with `name = ...` (below).
///
/// # Parameters
///
/// A hook asks for what it needs, by type: `&Chunk`, `&[Chunk]` (the stream history),
/// `&mut MessageList` or `&MessageList`, `Vec<Message>`, [`SystemMessages`], [`StepNumber`],
/// [`RetryCount`], `&RequestContext`, [`DataWriter`], [`Abort`], `&[StepResult]`, and more
/// (each hook's extractor trait lists them). A parameter named `state` of type `&mut T` is the
/// processor's per-request state, `T: Default + Send + 'static` (owned data: `Vec<String>`,
/// not `Vec<&str>`). A type the hook does not provide is a compile error that names the hook
/// and lists what it provides; so is `impl Trait`, as a parameter has the one type the hook
/// gives. A `tool_result` hook reads the result as `&Value` (the prelude's JSON value).
///
/// ```
/// use processors::prelude::*;
///
/// /// Blocks an answer once it passes 200 characters.
/// #[processor(output_stream)]
/// async fn length_guard(chunk: &Chunk, state: &mut usize, abort: Abort) -> Result<StreamAction, ProcessorError> {
///     *state += chunk.text_delta().map_or(0, str::len);
///     if *state > 200 {
///         return Err(abort.reason("answer too long").into());
///     }
///     Ok(StreamAction::Pass)
/// }
/// ```
///
/// # Return types
///
/// A hook returns its outcome (`StreamAction`, `InputOutcome`, `StepOverrides`,
/// `OutputOutcome`, …), something that converts into it (`()` for "unchanged",
/// `Vec<Message>`, `Chunk`, `Option<Chunk>`), or a `Result` of either with an error that
/// converts into [`ProcessorError`].
///
/// # `id = "..."`
///
/// The processor's id (default: the function's name in kebab-case). It names the processor in
/// errors, trip wires and traces, and keys its state. Lowercase letters, digits, `-`, `_`, `.`.
///
/// ```
/// use processors::prelude::*;
///
/// #[processor(input, id = "trim-input")]
/// fn trim(messages: Vec<Message>) -> Vec<Message> {
///     messages
///         .into_iter()
///         .map(|mut m| {
///             let t = m.text().trim().to_owned();
///             m.set_text(t);
///             m
///         })
///         .collect()
/// }
/// assert_eq!(Trim::ID, "trim-input");
/// ```
///
/// # `name = ...`
///
/// The generated struct's name.
///
/// ```
/// use processors::prelude::*;
///
/// #[processor(output_step, name = NoEmptyAnswers)]
/// fn check(text: &str, abort: Abort) -> Result<(), ProcessorError> {
///     if text.trim().is_empty() {
///         return Err(abort.reason("say something").retry(true).into());
///     }
///     Ok(())
/// }
/// let _ = NoEmptyAnswers;
/// ```
///
/// # `state = ...`
///
/// Declares the state type; without it, a `state: &mut T` parameter declares it (and `()`
/// is used when there is none).
///
/// ```
/// use processors::prelude::*;
///
/// #[processor(output_result, state = Vec<String>)]
/// fn report(state: &mut Vec<String>) {
///     state.clear();
/// }
/// ```
///
/// # `process_data_parts`
///
/// Lets `data-*` chunks reach the `output_stream` hook (they skip it by default).
///
/// ```
/// use processors::prelude::*;
///
/// #[processor(output_stream, process_data_parts)]
/// fn drop_previews(chunk: &Chunk) -> StreamAction {
///     match &chunk.kind {
///         ChunkKind::Data { name, .. } if name == "preview" => StreamAction::Drop,
///         _ => StreamAction::Pass,
///     }
/// }
/// ```
///
/// # `#[config]` parameters
///
/// A function whose parameters are marked `#[config]` makes a processor with configuration:
/// the generated struct has one field per such parameter, in order, with the function's
/// visibility, and a `const fn new` that takes them. Every call of the hook gets the fields: a
/// parameter `&T` reads the field of type `T` (`&str` reads a `String` field, `&[T]` a
/// `Vec<T>` one), and a parameter `T` gets a copy (`T: Copy`). Configuration is read-only and
/// owned (`&[String]`, not `&[&str]`), as the processor outlives any borrow. The function
/// stays an ordinary function, with all its parameters.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::prelude::*;
///
/// /// Cuts streamed text after `limit` characters and appends `marker`.
/// #[processor(output_stream)]
/// fn max_len(chunk: &Chunk, state: &mut usize, #[config] limit: usize, #[config] marker: &str) -> StreamAction {
///     let Some(text) = chunk.text_delta() else { return StreamAction::Pass };
///     if *state >= limit {
///         return StreamAction::Drop;
///     }
///     let kept: String = text.chars().take(limit - *state).collect();
///     *state += text.chars().count();
///     let cut = *state > limit;
///     chunk.clone().map_text(|_| if cut { format!("{kept}{marker}") } else { kept }).into()
/// }
///
/// let agent = agent! {
///     model: ScriptedModel::new([Turn::text("hello world")]),
///     output: [MaxLen::new(3, "…".to_owned())],
/// };
/// assert_eq!(agent.generate("hi").await.unwrap().text, "hel…");
/// assert_eq!(MaxLen::new(3, String::new()).limit, 3);
/// # });
/// ```
///
/// The struct derives nothing (its fields may not allow it); implement `Debug` or `Clone` on it
/// as on any of your types, or share one value through an `Arc` (see [`agent!`](crate::agent!)).
/// A `#[config]` parameter's doc comment documents its field.
///
/// # `options`
///
/// With `options`, the struct derives `serde::Deserialize` (unknown fields refused): its
/// fields are its options in files, with no second struct to write. Register it by name
/// (`Registry::register::<T>(name)`); an `Option` field may be left out.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::config::{Loader, Registry};
/// use processors::prelude::*;
///
/// /// Ends the run when the input holds one of the words.
/// #[processor(input, options)]
/// fn blocklist(
///     messages: Vec<Message>,
///     /// The words, lowercase.
///     #[config] words: &[String],
/// ) -> Result<(), ProcessorError> {
///     let text: String = messages.iter().map(|m| m.text().to_lowercase()).collect();
///     match words.iter().find(|w| text.contains(w.as_str())) {
///         Some(w) => Err(ProcessorError::abort(format!("`{w}` is not allowed"))),
///         None => Ok(()),
///     }
/// }
///
/// let file = r#"
/// model = { scripted = ["ok"] }
/// input = [{ processor = "blocklist", words = ["refund"] }]
/// "#;
/// let loader = Loader::new().registry(Registry::new().register::<Blocklist>("blocklist"));
/// let agent = loader.agent_str("agent.toml", file).unwrap();
/// let result = agent.generate("A refund, please").await.unwrap();
/// assert_eq!(result.tripwire.unwrap().reason, "`refund` is not allowed");
/// # });
/// ```
///
/// # `stream_history`
///
/// Keeps the chunks this processor received, for a `&[Chunk]` parameter. Asking for
/// `&[Chunk]` (or an alias of it) is enough on its own; the option is for a parameter whose
/// type names the impl block's generic parameters, which the compiler cannot inspect here.
///
/// ```
/// use processors::prelude::*;
///
/// #[processor(output_stream, stream_history)]
/// fn sentences(chunk: &Chunk, history: &[Chunk]) -> StreamAction {
///     match chunk.text_delta() {
///         Some(t) if t.ends_with('.') => {
///             let all: String = history.iter().filter_map(Chunk::text_delta).collect();
///             chunk.clone().map_text(|_| all).into()
///         }
///         Some(_) => StreamAction::Drop,
///         None => StreamAction::Pass,
///     }
/// }
/// ```
///
/// # `crate = path`
///
/// The crate generated code takes its paths from (default: `::processors`). A crate that
/// depends on `processors-runtime` and `processors-macros` directly, rather than on this
/// facade, names the runtime:
///
/// ```
/// use processors_macros::processor;
/// use processors_runtime::prelude::*;
///
/// #[processor(output_stream, crate = processors_runtime)]
/// fn shout(chunk: &Chunk) -> StreamAction {
///     match chunk.text_delta() {
///         Some(t) => chunk.clone().map_text(|_| t.to_uppercase()).into(),
///         None => StreamAction::Pass,
///     }
/// }
/// assert_eq!(Shout::ID, "shout");
/// ```
///
/// It applies to impl blocks alike: `#[processor(crate = processors_runtime)]`.
///
/// A crate that renames its dependency on the facade (in `Cargo.toml`,
/// `pipelines = { package = "processors", version = "..." }`) gives the new name to both
/// macros:
///
/// ```
/// # extern crate processors as pipelines;
/// use pipelines::prelude::{Chunk, StreamAction};
///
/// #[pipelines::processor(output_stream, crate = pipelines)]
/// fn pass(chunk: &Chunk) -> StreamAction {
///     let _ = chunk;
///     StreamAction::Pass
/// }
/// # fn main() {
/// let _agent = pipelines::agent! {
///     crate: pipelines,
///     model: pipelines::prelude::ScriptedModel::new([]),
///     output: [Pass],
/// };
/// # }
/// ```
///
/// # On an impl block
///
/// Methods named after hooks (`process_input`, `process_output_stream`, …) become the hooks;
/// other methods stay ordinary methods. The id defaults to the type's name in kebab-case, an
/// acronym staying one word (`PIIRedactor` → `pii-redactor`).
///
/// ```
/// use processors::prelude::*;
///
/// pub struct BannedWords {
///     words: Vec<String>,
/// }
///
/// #[processor(id = "banned-words")]
/// impl BannedWords {
///     fn hit(&self, text: &str) -> bool {
///         self.words.iter().any(|w| text.contains(w.as_str()))
///     }
///
///     async fn process_input(&self, messages: Vec<Message>, abort: Abort) -> Result<(), ProcessorError> {
///         match messages.iter().any(|m| self.hit(&m.text())) {
///             true => Err(abort.reason("banned word in the question").into()),
///             false => Ok(()),
///         }
///     }
///
///     fn process_output_step(&self, text: &str, abort: Abort) -> Result<(), ProcessorError> {
///         match self.hit(text) {
///             true => Err(abort.reason("banned word in the answer").retry(true).into()),
///             false => Ok(()),
///         }
///     }
/// }
/// fn is_both<P: InputProcessor + OutputProcessor>() {}
/// is_both::<BannedWords>();
/// ```
///
/// A processor is `'static`: the agent keeps it as long as it lives, so an impl block with a
/// lifetime (`impl<'a> Filter<'a>`) is an error that says so; hold owned data or `&'static`
/// references.
///
/// # A per-value id: `fn id`
///
/// In an impl block, `fn id(&self) -> &str` is the processor's id, so two values of one type
/// can have their own ids (and their own state) in one list. The id is then not known at
/// compile time: there is no `ID` constant, and `agent!` cannot compare it with the others.
/// `id = "..."` and `fn id` together are an error.
///
/// ```
/// use processors::prelude::*;
///
/// /// Counts the chunks it sees, under the id it is given.
/// pub struct Counter {
///     id: String,
/// }
///
/// #[processor]
/// impl Counter {
///     fn id(&self) -> &str {
///         &self.id
///     }
///
///     fn process_output_stream(&self, state: &mut usize) {
///         *state += 1;
///     }
/// }
///
/// let _agent = agent! {
///     model: ScriptedModel::new([]),
///     output: [Counter { id: "answers".into() }, Counter { id: "all".into() }],
/// };
/// ```
///
/// [`Processor`]: crate::Processor
/// [`InputProcessor`]: crate::processor::InputProcessor
/// [`OutputProcessor`]: crate::processor::OutputProcessor
/// [`ErrorProcessor`]: crate::processor::ErrorProcessor
/// [`SystemMessages`]: crate::processor::extract::SystemMessages
/// [`StepNumber`]: crate::processor::extract::StepNumber
/// [`RetryCount`]: crate::processor::extract::RetryCount
/// [`DataWriter`]: crate::processor::DataWriter
/// [`Abort`]: crate::Abort
/// [`ProcessorError`]: crate::ProcessorError
pub use processors_macros::processor;

/// Declares an agent whose processor lists are statically dispatched, checking its
/// configuration at compile time.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::prelude::*;
///
/// #[processor(output_stream)]
/// fn shout(chunk: &Chunk) -> StreamAction {
///     match chunk.text_delta() {
///         Some(t) => chunk.clone().map_text(|_| t.to_uppercase()).into(),
///         None => StreamAction::Pass,
///     }
/// }
///
/// #[processor(output_step)]
/// fn not_empty(text: &str, abort: Abort) -> Result<(), ProcessorError> {
///     if text.is_empty() {
///         return Err(abort.reason("say something").retry(true).into());
///     }
///     Ok(())
/// }
///
/// let store = InMemoryStore::new();
/// let agent = agent! {
///     name: "support",
///     instructions: "You are a helpful assistant.",
///     model: ScriptedModel::new([Turn::text("hello")]),
///     memory: Memory::new(store),
///     output: [Shout, NotEmpty, memory],
///     max_processor_retries: 2,
///     max_steps: 3,
/// };
/// assert_eq!(agent.generate("hi").await.unwrap().text, "HELLO");
/// # });
/// ```
///
/// # Keys
///
/// - `name`: the agent's name.
/// - `instructions`: its system instructions.
/// - `model` (required): any value implementing `LanguageModel`.
/// - `tools: [...]`: tools (`Arc<dyn Tool>`).
/// - `memory`: a `Memory`; it loads history before the input processors and saves after the
///   output processors, or where the word `memory` stands in a list.
/// - `input: [...]`, `output: [...]`, `error: [...]`: processors, in order; or
///   `ordered[...]`, in the built-ins' default order (below).
/// - `max_processor_retries`: how many retries processors may ask for in a row.
/// - `max_steps`: the step limit of a run.
/// - `on_violation`: a callback for every abort and warning a processor raises.
/// - `crate`: where generated code finds the runtime (see below).
///
/// # Entries
///
/// An entry of `input`, `output` or `error` is any expression whose value is a processor of
/// that list: a unit struct (`Shout`), a struct literal (`Filter { words }`, generic or not), a
/// constructor call, an enum variant, a constant, a variable, or the word `memory`. The
/// compiler infers each entry's type; nothing is read off its spelling. A configured processor
/// shared between agents is an entry too, as `Arc<P>` or `&'static P`:
///
/// ```
/// use processors::prelude::*;
/// use std::sync::Arc;
///
/// /// Drops streamed text that contains one of its words.
/// pub struct Banned {
///     words: Vec<String>,
/// }
///
/// #[processor]
/// impl Banned {
///     fn process_output_stream(&self, chunk: &Chunk) -> StreamAction {
///         match chunk.text_delta() {
///             Some(t) if self.words.iter().any(|w| t.contains(w.as_str())) => StreamAction::Drop,
///             _ => StreamAction::Pass,
///         }
///     }
/// }
///
/// let banned = Arc::new(Banned { words: vec!["secret".into()] });
/// let support = agent! { model: ScriptedModel::new([]), output: [Arc::clone(&banned)] };
/// let sales = agent! { model: ScriptedModel::new([]), output: [banned] };
/// ```
///
/// # Ordered lists
///
/// `input: ordered[...]` (or `output:`, `error:`) puts the built-ins in their default order
/// ([`builtins::order`](crate::builtins::order): normalise, commands, history, context, files,
/// compress, guards, limits, provider, shape, keep), whatever order they are written in, and
/// each processor of your own where you say: `p before X` just before the built-in `X`,
/// `p after X` just after it. A processor of your own without a place, an `X` that is not a
/// built-in, and an `X` that is not in the list are compile errors at the entry or at `X`; the
/// list is built at run time (`DynPipeline`). `memory` cannot be placed in one: it runs where
/// it does unless placed. An `X` written twice in the list cannot be told apart (the compiler
/// asks for type annotations): write that list plainly.
///
/// ```
/// use processors::builtins::regex_filter::Preset;
/// use processors::builtins::{RegexFilter, TokenLimiter, UnicodeNormalizer};
/// use processors::prelude::*;
///
/// struct NoPasswords;
///
/// #[processor]
/// impl NoPasswords {
///     fn process_input(&self, messages: Vec<Message>) -> Result<Vec<Message>, ProcessorError> {
///         match messages.iter().any(|m| m.text().contains("password")) {
///             true => Err(ProcessorError::abort("do not send passwords")),
///             false => Ok(messages),
///         }
///     }
/// }
///
/// let model = ScriptedModel::new([Turn::text("ok")]);
/// let agent = agent! {
///     model: model.clone(),
///     input: ordered[
///         TokenLimiter::new(8_000).unwrap(),
///         RegexFilter::builder().preset(Preset::Secrets).build().unwrap(),
///         UnicodeNormalizer::new(),
///         NoPasswords before RegexFilter,
///     ],
/// };
/// let result = futures::executor::block_on(agent.generate("my password is hunter2")).unwrap();
/// assert_eq!(result.tripwire.unwrap().processor_id, "no-passwords");
/// ```
///
/// # `max_processor_retries` and `max_steps`
///
/// Each takes an integer literal or a `const` item (a path), checked at compile time: `0` is
/// refused for `max_steps` (no step would run) and for `max_processor_retries` when there are
/// error processors (they could never retry). A value known only at run time goes through
/// the builder (`Agent::builder().max_steps(n)`).
///
/// ```
/// use processors::prelude::*;
///
/// #[processor(output_step)]
/// fn not_empty(text: &str, abort: Abort) -> Result<(), ProcessorError> {
///     match text.is_empty() {
///         true => Err(abort.reason("say something").retry(true).into()),
///         false => Ok(()),
///     }
/// }
///
/// const RETRIES: u32 = 2;
/// mod limits {
///     pub const STEPS: u32 = 4;
/// }
///
/// let _agent = agent! {
///     model: ScriptedModel::new([]),
///     output: [NotEmpty],
///     max_processor_retries: RETRIES,
///     max_steps: limits::STEPS,
/// };
/// ```
///
/// # `crate: path`
///
/// The crate generated code takes its paths from (default: `::processors`), in any position
/// among the keys. A crate that depends on `processors-runtime` and `processors-macros`
/// directly, rather than on this facade, names the runtime:
///
/// ```
/// # futures::executor::block_on(async {
/// use processors_macros::agent;
/// use processors_runtime::prelude::*;
///
/// let agent = agent! {
///     model: ScriptedModel::new([Turn::text("hello")]),
///     crate: processors_runtime,
/// };
/// assert_eq!(agent.generate("hi").await.unwrap().text, "hello");
/// # });
/// ```
///
/// A renamed dependency on the facade gives its new name here, as for `#[processor]` (see its
/// `crate = path` section).
///
/// # Compile-time rules
///
/// Unknown, duplicate and missing keys; a processor in a list it has no hook for (the error
/// says which lists it belongs in, from its hooks); a function where the type
/// `#[processor]` generated for it belongs; `memory` (the word or a `Memory` value) in a list
/// without a `memory:` key, twice in a list, or followed by other processors in `output`;
/// `max_processor_retries` or `max_steps` that is not a non-negative integer literal or a
/// `const`, `max_steps` of 0, `max_processor_retries` set while no processor can ask for a
/// retry, or `0` with error processors; two processors with one id in a list (both are
/// pointed at, and the id named); in an ordered list, a processor of your own without a
/// place, a place that is not `before` or `after`, an anchor that is not a built-in of the
/// list, and `memory`.
///
/// The rules that need the entries' types are checked by the compiler after type checking,
/// in every build (`cargo check` included); each error points at the entry it is about. The
/// macro's own mistakes and processors in the wrong list are reported together, in one
/// build; the checks on types follow once those are fixed.
pub use processors_macros::agent;

/// Turns an `async fn` into a tool the model can call, with typed arguments.
///
/// The function's doc comment is the tool's description, its name the tool's name, and its
/// parameters the tool's arguments: each parameter is an argument of that name, its type gives
/// the argument's JSON Schema (through `schemars`), and its doc comment the argument's
/// description. The macro keeps the function as written and adds a unit struct named after it
/// in UpperCamelCase with `Tool` after (`weather` → `WeatherTool`), which implements
/// [`Tool`](crate::tool::Tool) and goes in `agent!`'s `tools:` or the builder's
/// [`tool`](crate::agent::AgentBuilder::tool).
///
/// - The arguments are read before the call. An argument of the wrong type, a missing one or
///   one the tool does not take goes back to the model as the tool's error, naming it
///   (``argument `days` of `forecast`: invalid type: string "three", expected u8``), and the
///   function is not called. An `Option` parameter may be left out.
/// - A parameter of type [`ToolContext`](crate::tool::ToolContext) gets the call's context
///   (its id, the request context, the run's messages, a writer for `data-*` chunks); it is
///   not an argument.
/// - The function returns anything `Serialize`, or a `Result` of it whose error converts into
///   a [`BoxError`](crate::BoxError) (a `String`, a `&str`, any `std::error::Error + Send +
///   Sync`): an `Err` is the tool's error, shown to the model.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::prelude::*;
/// use processors::tool::ToolContext;
///
/// /// The forecast for a city, by day.
/// #[tool]
/// async fn forecast(
///     /// The city, as its people write it.
///     city: String,
///     /// How many days, from today; 1 when left out.
///     days: Option<u8>,
///     cx: ToolContext<'_>,
/// ) -> Result<Vec<String>, String> {
///     if city.is_empty() {
///         return Err("name a city".into());
///     }
///     let days = days.unwrap_or(1);
///     Ok((0..days).map(|d| format!("{city}, day {d} ({}): sunny", cx.tool_call_id)).collect())
/// }
///
/// let model = ScriptedModel::new([
///     Turn::empty().tool_call("call-1", ForecastTool::NAME, json!({ "city": "Lyon", "days": 2 })),
///     Turn::text("Sunny for two days."),
/// ]);
/// let agent = agent! {
///     model: model.clone(),
///     tools: [ForecastTool],
/// };
/// let result = agent.generate("Weather in Lyon?").await.unwrap();
/// assert_eq!(
///     result.tool_results[0].result,
///     json!(["Lyon, day 0 (call-1): sunny", "Lyon, day 1 (call-1): sunny"])
/// );
///
/// // What the model was told.
/// let spec = &model.requests()[0].tools[0];
/// assert_eq!(spec.name, "forecast");
/// assert_eq!(spec.description, "The forecast for a city, by day.");
/// assert_eq!(spec.parameters["required"], json!(["city"]));
/// assert_eq!(
///     spec.parameters["properties"]["city"]["description"],
///     "The city, as its people write it."
/// );
/// # });
/// ```
///
/// # One type for all the arguments
///
/// Mark one parameter `#[args]` to read the whole arguments object into its type, which
/// derives `serde::Deserialize` and `schemars::JsonSchema` (with both crates in your
/// dependencies); its fields' doc comments describe them to the model, and serde's attributes
/// (`rename`, `default`, …) apply.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::prelude::*;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Refund {
///     /// The order to refund.
///     order_id: String,
///     /// In cents.
///     amount: u64,
/// }
///
/// /// Refunds part or all of an order.
/// #[tool(name = "refund_order")]
/// async fn refund(#[args] refund: Refund) -> serde_json::Value {
///     json!({ "refunded": refund.amount, "order": refund.order_id })
/// }
///
/// let model = ScriptedModel::new([
///     Turn::empty().tool_call("c1", "refund_order", json!({ "order_id": "A7", "amount": "ten" })),
///     Turn::text("That amount is not valid."),
/// ]);
/// let agent = Agent::builder().model(model).tool(RefundTool).build().unwrap();
/// let result = agent.generate("Refund ten cents on A7").await.unwrap();
/// // The model's mistake went back to it; the function did not run.
/// assert!(result.tool_results[0].is_error);
/// let error = result.tool_results[0].result.to_string();
/// assert!(error.contains("argument `amount` of `refund_order`: invalid type: string"), "{error}");
/// # });
/// ```
///
/// # Options
///
/// - `name = "…"`: the name the model calls it by (1 to 64 ASCII letters, digits, `_`, `-`);
///   the function's name by default. The generated type's `NAME` holds it.
/// - `description = "…"`: the description, in place of the doc comment.
/// - `crate = path`: the crate that provides the runtime, for a crate that depends on
///   `processors_runtime` rather than `processors`.
///
/// # Compile errors
///
/// A function that is not `async`, is generic, is a method, has no doc comment (and no
/// `description`), takes a borrowed parameter (`&str`), takes a parameter without a name, or a
/// parameter type that has no `Deserialize` or no `JsonSchema`, or returns a type that has no
/// `Serialize`, does not compile, with the error on the offending token.
pub use processors_macros::tool;
