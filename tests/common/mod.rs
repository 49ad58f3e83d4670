//! Test support: a configurable processor, agent construction over every dispatch path, and
//! stream collection.
#![allow(dead_code, clippy::type_complexity)]

use futures::StreamExt;
use processors::agent::AgentInput;
use processors::prelude::*;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// Which dispatch path a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// Tuples of processors, called directly.
    Static,
    /// `DynPipeline`s of `Arc<dyn DynProcessor>`.
    Dynamic,
    /// Tuples declared with `agent!`.
    Macro,
}

/// A shared log of what processors saw.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn push(&self, s: impl Into<String>) {
        self.0.lock().unwrap().push(s.into());
    }
    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

macro_rules! probe {
    ($( $field:ident : $args:ident => $out:ty, $hook:ident, $default:expr; )*) => {
        /// A processor with every hook, each answered by an optional closure (unchanged
        /// without one). Its state is a JSON value, `null` at the start of every request.
        #[derive(Clone)]
        pub struct Probe {
            id: String,
            data_parts: bool,
            history: bool,
            $( $field: Option<Arc<dyn for<'a, 'b> Fn(&'b mut $args<'a, Value>) -> Result<$out, ProcessorError> + Send + Sync>>, )*
        }

        impl Probe {
            pub fn new(id: &str) -> Self {
                Probe { id: id.to_owned(), data_parts: false, history: false, $( $field: None, )* }
            }
            $(
                pub fn $field(
                    mut self,
                    f: impl for<'a, 'b> Fn(&'b mut $args<'a, Value>) -> Result<$out, ProcessorError> + Send + Sync + 'static,
                ) -> Self {
                    self.$field = Some(Arc::new(f));
                    self
                }
            )*
        }

        impl Processor for Probe {
            type State = Value;
            const HOOKS: Hooks = Hooks::INPUT
                .with(Hooks::INPUT_STEP)
                .with(Hooks::LLM_REQUEST)
                .with(Hooks::LLM_RESPONSE)
                .with(Hooks::OUTPUT_STREAM)
                .with(Hooks::OUTPUT_STEP)
                .with(Hooks::TOOL_CALL)
                .with(Hooks::TOOL_RESULT)
                .with(Hooks::OUTPUT_RESULT)
                .with(Hooks::API_ERROR);
            fn id(&self) -> &str {
                &self.id
            }
            fn process_data_parts(&self) -> bool {
                self.data_parts
            }
            fn keeps_stream_history(&self) -> bool {
                self.history
            }
            $(
                async fn $hook(&self, mut args: $args<'_, Value>) -> Result<$out, ProcessorError> {
                    match &self.$field {
                        Some(f) => f(&mut args),
                        None => Ok($default),
                    }
                }
            )*
        }
    };
}

probe! {
    input: InputArgs => InputOutcome, process_input, InputOutcome::Unchanged;
    input_step: InputStepArgs => StepOverrides, process_input_step, StepOverrides::default();
    llm_request: LlmRequestArgs => LlmRequestAction, process_llm_request, LlmRequestAction::Continue;
    llm_response: LlmResponseArgs => (), process_llm_response, ();
    stream: OutputStreamArgs => StreamAction, process_output_stream, StreamAction::Pass;
    output_step: OutputStepArgs => OutputOutcome, process_output_step, OutputOutcome::Unchanged;
    tool_call: ToolCallArgs => ToolCallAction, process_tool_call, ToolCallAction::Continue;
    tool_result: ToolResultArgs => ToolResultAction, process_tool_result, ToolResultAction::Keep;
    output_result: OutputResultArgs => OutputOutcome, process_output_result, OutputOutcome::Unchanged;
    api_error: ApiErrorArgs => ApiErrorAction, process_api_error, ApiErrorAction::Unhandled;
}

impl InputProcessor for Probe {}
impl OutputProcessor for Probe {}
impl ErrorProcessor for Probe {}

impl Probe {
    /// Lets `data-*` chunks reach the stream hook.
    pub fn data_parts(mut self) -> Self {
        self.data_parts = true;
        self
    }
    /// Keeps the stream history.
    pub fn history(mut self) -> Self {
        self.history = true;
        self
    }
}

/// Builds an agent over the given path, with the instructions "You are a test.".
#[macro_export]
macro_rules! build_agent {
    ($path:expr, model: $m:expr
        $(, tools: [$($t:expr),* $(,)?])?
        $(, memory: $mem:expr)?
        $(, max_processor_retries: $r:literal)?
        $(, max_steps: $s:literal)?
        $(, on_violation: $v:expr)?
        $(, input: [$($i:expr),* $(,)?])?
        $(, output: [$($o:expr),* $(,)?])?
        $(, error: [$($e:expr),* $(,)?])? $(,)?) => {{
        let a: std::sync::Arc<dyn AnyAgent> = match $path {
            $crate::common::Path::Static => std::sync::Arc::new(
                Agent::builder()
                    .instructions("You are a test.")
                    .model($m.clone())
                    $($(.tool($t))*)?
                    $(.memory($mem))?
                    $(.max_processor_retries($r))?
                    $(.max_steps($s))?
                    $(.on_violation($v))?
                    .input_pipeline(( $($($i,)*)? ))
                    .output_pipeline(( $($($o,)*)? ))
                    .error_pipeline(( $($($e,)*)? ))
                    .build()
                    .expect("a valid agent"),
            ),
            $crate::common::Path::Dynamic => std::sync::Arc::new(
                Agent::builder()
                    .instructions("You are a test.")
                    .model($m.clone())
                    $($(.tool($t))*)?
                    $(.memory($mem))?
                    $(.max_processor_retries($r))?
                    $(.max_steps($s))?
                    $(.on_violation($v))?
                    .input_pipeline(DynPipeline::new() $($(.with($i))*)?)
                    .output_pipeline(DynPipeline::new() $($(.with($o))*)?)
                    .error_pipeline(DynPipeline::new() $($(.with($e))*)?)
                    .build()
                    .expect("a valid agent"),
            ),
            $crate::common::Path::Macro => std::sync::Arc::new(agent! {
                instructions: "You are a test.",
                model: $m.clone(),
                $(tools: [$($t),*],)?
                $(memory: $mem,)?
                $(max_processor_retries: $r,)?
                $(max_steps: $s,)?
                $(on_violation: $v,)?
                $(input: [$($i),*],)?
                $(output: [$($o),*],)?
                $(error: [$($e),*],)?
            }),
        };
        a
    }};
}

/// Runs a test body once per path: tuples through the builder, `DynPipeline`s, and `agent!`.
#[macro_export]
macro_rules! on_every_path {
    ($name:ident, |$path:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[tokio::test]
            async fn static_path() {
                let $path = $crate::common::Path::Static;
                $body
            }
            #[tokio::test]
            async fn dynamic_path() {
                let $path = $crate::common::Path::Dynamic;
                $body
            }
            #[tokio::test]
            async fn agent_macro() {
                let $path = $crate::common::Path::Macro;
                $body
            }
        }
    };
}

/// A model whose every call streams what `make` makes: for streams that wait, or panic, where
/// a test needs them to.
#[derive(Clone)]
pub struct StreamModel(Arc<dyn Fn() -> processors::model::ModelStream + Send + Sync>);

impl StreamModel {
    pub fn new(make: impl Fn() -> processors::model::ModelStream + Send + Sync + 'static) -> Self {
        StreamModel(Arc::new(make))
    }
}

impl LanguageModel for StreamModel {
    fn provider(&self) -> &str {
        "test"
    }
    fn model_id(&self) -> &str {
        "stream"
    }
    fn stream(
        &self,
        _: processors::model::ModelRequest,
    ) -> futures::future::BoxFuture<'_, Result<processors::model::ModelStream, ApiError>> {
        let stream = (self.0)();
        Box::pin(async move { Ok(stream) })
    }
}

/// Streams a run to the end: every chunk, and the result.
pub async fn collect(
    agent: &dyn AnyAgent,
    input: impl Into<AgentInput>,
    options: GenerateOptions,
) -> (Vec<Chunk>, Result<GenerateResult, AgentError>) {
    let mut stream = agent.stream_with(input.into(), options);
    let mut chunks = Vec::new();
    while let Some(c) = stream.next().await {
        chunks.push(c);
    }
    (chunks, stream.finish().await)
}

/// Runs to the end and returns the result, failing the test on an error.
pub async fn generate(agent: &dyn AnyAgent, input: impl Into<AgentInput>) -> GenerateResult {
    agent
        .generate_with(input.into(), GenerateOptions::default())
        .await
        .expect("the run succeeds")
}

/// The text deltas of a chunk list.
pub fn deltas(chunks: &[Chunk]) -> Vec<String> {
    chunks
        .iter()
        .filter_map(|c| c.text_delta().map(str::to_owned))
        .collect()
}

/// The `type` of each chunk.
pub fn types(chunks: &[Chunk]) -> Vec<String> {
    chunks
        .iter()
        .map(|c| c.kind.type_name().into_owned())
        .collect()
}

/// The texts of a prompt's messages of one role.
pub fn texts_of(prompt: &[Message], role: Role) -> Vec<String> {
    prompt
        .iter()
        .filter(|m| m.role == role)
        .map(Message::text)
        .collect()
}

/// A tool that answers `{"ok": true, "echo": args}`.
pub fn echo_tool(name: &str) -> Arc<dyn Tool> {
    tool(
        name,
        "Echoes its arguments",
        serde_json::json!({"type": "object"}),
        |args| async move { Ok(serde_json::json!({"ok": true, "echo": args})) },
    )
}

/// A text-delta chunk's text, upper-cased (other chunks pass).
pub fn upper(args: &mut OutputStreamArgs<'_, Value>) -> Result<StreamAction, ProcessorError> {
    Ok(match args.chunk.text_delta() {
        Some(t) => args.chunk.clone().map_text(|_| t.to_uppercase()).into(),
        None => StreamAction::Pass,
    })
}
