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
/// # Parameters
///
/// A hook asks for what it needs, by type: `&Chunk`, `&[Chunk]` (the stream history),
/// `&mut MessageList` or `&MessageList`, `Vec<Message>`, [`SystemMessages`], [`StepNumber`],
/// [`RetryCount`], `&RequestContext`, [`DataWriter`], [`Abort`], `&[StepResult]`, and more
/// (each hook's extractor trait lists them). A parameter named `state` of type `&mut T` is the
/// processor's per-request state, `T: Default + Send`. A type the hook does not provide is a
/// compile error that names the hook and lists what it provides.
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
/// # `stream_history`
///
/// Keeps the chunks this processor received, for a `&[Chunk]` parameter.
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
/// - `input: [...]`, `output: [...]`, `error: [...]`: processors, in order.
/// - `max_processor_retries`: how many retries processors may ask for in a row (an integer
///   literal).
/// - `max_steps`: the step limit of a run.
/// - `on_violation`: a callback for every abort and warning a processor raises.
/// - `crate`: where generated code finds the runtime (see below).
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
/// # Compile-time rules
///
/// Unknown, duplicate and missing keys; a processor in a list it has no hook for (with a hint
/// to the right list); `memory` in a list without a `memory:` key, twice in a list, or
/// followed by other processors in `output`; `max_processor_retries` that is not a
/// non-negative integer literal, set while no processor can ask for a retry, or `0` with
/// error processors; two processors with one id in a list. Every mistake of an invocation is
/// reported in one build.
pub use processors_macros::agent;
