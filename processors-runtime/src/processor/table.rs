//! The nine hooks, declared once: what each receives, what it returns, and which parameter
//! types a `#[processor]` function of the hook may ask for.
//!
//! [`for_each_hook!`] hands the whole table to a generator macro. The argument structs
//! (`args.rs`), the parts and extractor traits of `#[processor]` functions (`extract.rs`) and
//! the type-erased calls of [`DynProcessor`](super::DynProcessor) (`dynamic.rs`) are generated
//! from it, so a field or a hook is added in one place.

/// Calls `$gen! { 'a; <hook>* }` with every hook's declaration.
///
/// A hook's declaration: its variant of [`Hook`](super::Hook), its method and the type-erased
/// method, the argument, parts and extractor types, the outcome, the argument fields (each with
/// its doc), the diagnostic for a parameter the hook does not provide, and the parameter types
/// it provides with how each is taken out of the parts.
macro_rules! for_each_hook {
    ($gen:ident) => {
        $gen! { 'a;
            Input {
                method: process_input, dyn_method: dyn_process_input,
                args: InputArgs, parts: InputParts, extractor: FromInput,
                outcome: InputOutcome,
                doc: "Arguments of `process_input`.",
                fields {
                    /// The new input messages of this run (a copy; return it changed to change the list).
                    messages: Vec<Message>,
                    /// The untagged system messages (the agent's instructions).
                    system_messages: Vec<Message>,
                    /// The run's message list, for direct edits.
                    message_list: &'a mut MessageList,
                    /// The request's context: read what the caller set, and set typed values
                    /// for the processors after this one.
                    request_context: &'a mut RequestContext,
                    /// Consecutive processor retries so far (0 for `process_input`).
                    retry_count: u32,
                }
                message: "`{Self}` is not a parameter that `process_input` provides",
                note: "`process_input` provides: `Vec<Message>` (the new input), `SystemMessages`, `&mut MessageList` or `&MessageList`, `&RequestContext` or `&mut RequestContext`, `RetryCount`, `Abort`, and `state: &mut YourState`",
                provide {
                    Vec<Message> => |p| p.messages.take();
                    SystemMessages => |p| p.system_messages.take().map(SystemMessages);
                    &'a mut MessageList => |p| p.message_list.take();
                    &'a MessageList => |p| p.message_list.take().map(|m| &*m);
                    &'a RequestContext => |p| p.request_context.take().map(|c| &*c);
                    &'a mut RequestContext => |p| p.request_context.take();
                    RetryCount => |p| p.retry_count.map(RetryCount);
                    Abort => |_p| Some(Abort::new());
                }
            }
            InputStep {
                method: process_input_step, dyn_method: dyn_process_input_step,
                args: InputStepArgs, parts: InputStepParts, extractor: FromInputStep,
                outcome: StepOverrides,
                doc: "Arguments of `process_input_step`.",
                fields {
                    /// The step about to run, from 0.
                    step_number: u32,
                    /// The steps finished so far.
                    steps: &'a [StepResult],
                    /// Every non-system message of the conversation (a copy).
                    messages: Vec<Message>,
                    /// The system messages the step will send (untagged, then tagged).
                    system_messages: Vec<Message>,
                    /// The step's settings as the earlier processors left them.
                    config: &'a StepConfig,
                    /// The run's message list, for direct edits.
                    message_list: &'a mut MessageList,
                    /// The request's context: read what the caller set, and set typed values
                    /// for the processors after this one.
                    request_context: &'a mut RequestContext,
                    /// Consecutive processor retries so far.
                    retry_count: u32,
                }
                message: "`{Self}` is not a parameter that `process_input_step` provides",
                note: "`process_input_step` provides: `StepNumber`, `&[StepResult]`, `Vec<Message>`, `SystemMessages`, `&StepConfig`, `&mut MessageList` or `&MessageList`, `&RequestContext` or `&mut RequestContext`, `RetryCount`, `Abort`, and `state: &mut YourState`",
                provide {
                    StepNumber => |p| p.step_number.map(StepNumber);
                    &'a [StepResult] => |p| p.steps;
                    Vec<Message> => |p| p.messages.take();
                    SystemMessages => |p| p.system_messages.take().map(SystemMessages);
                    &'a StepConfig => |p| p.config;
                    &'a mut MessageList => |p| p.message_list.take();
                    &'a MessageList => |p| p.message_list.take().map(|m| &*m);
                    &'a RequestContext => |p| p.request_context.take().map(|c| &*c);
                    &'a mut RequestContext => |p| p.request_context.take();
                    RetryCount => |p| p.retry_count.map(RetryCount);
                    Abort => |_p| Some(Abort::new());
                }
            }
            LlmRequest {
                method: process_llm_request, dyn_method: dyn_process_llm_request,
                args: LlmRequestArgs, parts: LlmRequestParts, extractor: FromLlmRequest,
                outcome: LlmRequestAction,
                doc: "Arguments of `process_llm_request`.",
                fields {
                    /// The step, from 0.
                    step_number: u32,
                    /// The request about to be sent (possibly rewritten by earlier processors).
                    request: &'a ModelRequest,
                    /// The model it goes to.
                    model: &'a dyn LanguageModel,
                    /// The request's context: read what the caller set, and set typed values
                    /// for the processors after this one.
                    request_context: &'a mut RequestContext,
                }
                message: "`{Self}` is not a parameter that `process_llm_request` provides",
                note: "`process_llm_request` provides: `StepNumber`, `&ModelRequest`, `&dyn LanguageModel`, `&RequestContext` or `&mut RequestContext`, `Abort`, and `state: &mut YourState`",
                provide {
                    StepNumber => |p| p.step_number.map(StepNumber);
                    &'a ModelRequest => |p| p.request;
                    &'a dyn LanguageModel => |p| p.model;
                    &'a RequestContext => |p| p.request_context.take().map(|c| &*c);
                    &'a mut RequestContext => |p| p.request_context.take();
                    Abort => |_p| Some(Abort::new());
                }
            }
            LlmResponse {
                method: process_llm_response, dyn_method: dyn_process_llm_response,
                args: LlmResponseArgs, parts: LlmResponseParts, extractor: FromLlmResponse,
                outcome: (),
                doc: "Arguments of `process_llm_response`.",
                fields {
                    /// The step, from 0.
                    step_number: u32,
                    /// The request that was sent (or answered from cache).
                    request: &'a ModelRequest,
                    /// The model chunks of the step, as the model produced them.
                    response: &'a LlmResponse,
                    /// The chunks of the step as they reached the client, after the stream
                    /// processors (model chunks again: the step's finish as `finish`). A
                    /// response cache stores these, so that a replay, which skips the stream
                    /// processors, streams what they let through.
                    delivered: &'a LlmResponse,
                    /// Whether the response was replayed by a `process_llm_request` processor.
                    from_cache: bool,
                    /// The request's context: read what the caller set, and set typed values
                    /// for the processors after this one.
                    request_context: &'a mut RequestContext,
                }
                message: "`{Self}` is not a parameter that `process_llm_response` provides",
                note: "`process_llm_response` provides: `StepNumber`, `&ModelRequest`, `&LlmResponse` (as the model produced it), `Delivered` (as it reached the client), `FromCache`, `&RequestContext` or `&mut RequestContext`, and `state: &mut YourState`",
                provide {
                    StepNumber => |p| p.step_number.map(StepNumber);
                    &'a ModelRequest => |p| p.request;
                    &'a LlmResponse => |p| p.response;
                    Delivered<'a> => |p| p.delivered.map(Delivered);
                    FromCache => |p| p.from_cache.map(FromCache);
                    &'a RequestContext => |p| p.request_context.take().map(|c| &*c);
                    &'a mut RequestContext => |p| p.request_context.take();
                }
            }
            OutputStream {
                method: process_output_stream, dyn_method: dyn_process_output_stream,
                args: OutputStreamArgs, parts: OutputStreamParts, extractor: FromOutputStream,
                outcome: StreamAction,
                doc: "Arguments of `process_output_stream`.",
                fields {
                    /// The chunk.
                    chunk: &'a Chunk,
                    /// The chunks this processor received before, when it keeps a stream history.
                    stream_history: &'a [Chunk],
                    /// The run's message list (read-only while streaming).
                    message_list: &'a MessageList,
                    /// The request's context: read what the caller set, and set typed values
                    /// for the processors after this one.
                    request_context: &'a mut RequestContext,
                    /// Consecutive processor retries so far.
                    retry_count: u32,
                    /// Emits `data-*` chunks after this one.
                    writer: DataWriter<'a>,
                }
                message: "`{Self}` is not a parameter that `process_output_stream` provides",
                note: "`process_output_stream` provides: `&Chunk`, `&[Chunk]` (the stream history), `&MessageList`, `&RequestContext` or `&mut RequestContext`, `RetryCount`, `DataWriter`, `Abort`, and `state: &mut YourState`",
                provide {
                    &'a Chunk => |p| p.chunk;
                    &'a [Chunk] => |p| p.stream_history;
                    &'a MessageList => |p| p.message_list;
                    &'a RequestContext => |p| p.request_context.take().map(|c| &*c);
                    &'a mut RequestContext => |p| p.request_context.take();
                    RetryCount => |p| p.retry_count.map(RetryCount);
                    DataWriter<'a> => |p| p.writer.take();
                    Abort => |_p| Some(Abort::new());
                }
            }
            OutputStep {
                method: process_output_step, dyn_method: dyn_process_output_step,
                args: OutputStepArgs, parts: OutputStepParts, extractor: FromOutputStep,
                outcome: OutputOutcome,
                doc: "Arguments of `process_output_step`.",
                fields {
                    /// The step, from 0.
                    step_number: u32,
                    /// The messages this step added (a copy; return it changed to change the list).
                    messages: Vec<Message>,
                    /// The step's text, as streamed.
                    text: &'a str,
                    /// Why the model stopped.
                    finish_reason: FinishReason,
                    /// The step's token usage.
                    usage: Usage,
                    /// The run's token usage so far, this step included.
                    run_usage: Usage,
                    /// The tool calls the model asked for.
                    tool_calls: &'a [ToolCall],
                    /// The steps finished before this one.
                    steps: &'a [StepResult],
                    /// The system messages the step was sent.
                    system_messages: Vec<Message>,
                    /// The run's message list.
                    message_list: &'a mut MessageList,
                    /// The request's context: read what the caller set, and set typed values
                    /// for the processors after this one.
                    request_context: &'a mut RequestContext,
                    /// Consecutive processor retries so far.
                    retry_count: u32,
                }
                message: "`{Self}` is not a parameter that `process_output_step` provides",
                note: "`process_output_step` provides: `StepNumber`, `Vec<Message>` (the step's messages), `&str` (its text), `FinishReason`, `Usage` (the step's), `RunUsage`, `&[ToolCall]`, `&[StepResult]`, `SystemMessages`, `&mut MessageList` or `&MessageList`, `&RequestContext` or `&mut RequestContext`, `RetryCount`, `Abort`, and `state: &mut YourState`",
                provide {
                    StepNumber => |p| p.step_number.map(StepNumber);
                    Vec<Message> => |p| p.messages.take();
                    &'a str => |p| p.text;
                    FinishReason => |p| p.finish_reason;
                    Usage => |p| p.usage;
                    RunUsage => |p| p.run_usage.map(RunUsage);
                    &'a [ToolCall] => |p| p.tool_calls;
                    &'a [StepResult] => |p| p.steps;
                    SystemMessages => |p| p.system_messages.take().map(SystemMessages);
                    &'a mut MessageList => |p| p.message_list.take();
                    &'a MessageList => |p| p.message_list.take().map(|m| &*m);
                    &'a RequestContext => |p| p.request_context.take().map(|c| &*c);
                    &'a mut RequestContext => |p| p.request_context.take();
                    RetryCount => |p| p.retry_count.map(RetryCount);
                    Abort => |_p| Some(Abort::new());
                }
            }
            ToolResult {
                method: process_tool_result, dyn_method: dyn_process_tool_result,
                args: ToolResultArgs, parts: ToolResultParts, extractor: FromToolResult,
                outcome: Option<Value>,
                doc: "Arguments of `process_tool_result`.",
                fields {
                    /// The call.
                    tool_call: &'a ToolCall,
                    /// The tool's result (as earlier processors left it).
                    result: &'a Value,
                    /// The request's context: read what the caller set, and set typed values
                    /// for the processors after this one.
                    request_context: &'a mut RequestContext,
                }
                message: "`{Self}` is not a parameter that `process_tool_result` provides",
                note: "`process_tool_result` provides: `&ToolCall`, `&Value` (the result), `&RequestContext` or `&mut RequestContext`, `Abort`, and `state: &mut YourState`",
                provide {
                    &'a ToolCall => |p| p.tool_call;
                    &'a Value => |p| p.result;
                    &'a RequestContext => |p| p.request_context.take().map(|c| &*c);
                    &'a mut RequestContext => |p| p.request_context.take();
                    Abort => |_p| Some(Abort::new());
                }
            }
            OutputResult {
                method: process_output_result, dyn_method: dyn_process_output_result,
                args: OutputResultArgs, parts: OutputResultParts, extractor: FromOutputResult,
                outcome: OutputOutcome,
                doc: "Arguments of `process_output_result`.",
                fields {
                    /// The response messages of the run (a copy; return it changed to change the list).
                    messages: Vec<Message>,
                    /// Text, usage, finish reason and steps of the run.
                    result: &'a RunSummary,
                    /// The run's message list.
                    message_list: &'a mut MessageList,
                    /// The request's context: read what the caller set, and set typed values
                    /// for the processors after this one.
                    request_context: &'a mut RequestContext,
                    /// Consecutive processor retries so far.
                    retry_count: u32,
                }
                message: "`{Self}` is not a parameter that `process_output_result` provides",
                note: "`process_output_result` provides: `Vec<Message>` (the response), `&RunSummary`, `&mut MessageList` or `&MessageList`, `&RequestContext` or `&mut RequestContext`, `RetryCount`, `Abort`, and `state: &mut YourState`",
                provide {
                    Vec<Message> => |p| p.messages.take();
                    &'a RunSummary => |p| p.result;
                    &'a mut MessageList => |p| p.message_list.take();
                    &'a MessageList => |p| p.message_list.take().map(|m| &*m);
                    &'a RequestContext => |p| p.request_context.take().map(|c| &*c);
                    &'a mut RequestContext => |p| p.request_context.take();
                    RetryCount => |p| p.retry_count.map(RetryCount);
                    Abort => |_p| Some(Abort::new());
                }
            }
            ApiError {
                method: process_api_error, dyn_method: dyn_process_api_error,
                args: ApiErrorArgs, parts: ApiErrorParts, extractor: FromApiError,
                outcome: ApiErrorAction,
                doc: "Arguments of `process_api_error`.",
                fields {
                    /// The provider's error.
                    error: &'a ApiError,
                    /// The step, from 0.
                    step_number: u32,
                    /// The steps finished so far.
                    steps: &'a [StepResult],
                    /// The run's message list: mutate it, then ask for a retry.
                    message_list: &'a mut MessageList,
                    /// The request's context: read what the caller set, and set typed values
                    /// for the processors after this one.
                    request_context: &'a mut RequestContext,
                    /// API-error retries of this step so far.
                    retry_count: u32,
                }
                message: "`{Self}` is not a parameter that `process_api_error` provides",
                note: "`process_api_error` provides: `&ApiError`, `StepNumber`, `&[StepResult]`, `&mut MessageList` or `&MessageList`, `&RequestContext` or `&mut RequestContext`, `RetryCount`, `Abort`, and `state: &mut YourState`",
                provide {
                    &'a ApiError => |p| p.error;
                    StepNumber => |p| p.step_number.map(StepNumber);
                    &'a [StepResult] => |p| p.steps;
                    &'a mut MessageList => |p| p.message_list.take();
                    &'a MessageList => |p| p.message_list.take().map(|m| &*m);
                    &'a RequestContext => |p| p.request_context.take().map(|c| &*c);
                    &'a mut RequestContext => |p| p.request_context.take();
                    RetryCount => |p| p.retry_count.map(RetryCount);
                    Abort => |_p| Some(Abort::new());
                }
            }
        }
    };
}

pub(crate) use for_each_hook;
