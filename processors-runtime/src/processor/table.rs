//! The ten hooks, declared once: what each receives, what it returns, which parameter types a
//! `#[processor]` function of the hook may ask for, and what the runner dispatches it on.
//!
//! [`for_each_hook!`] hands the whole table to a generator macro. The argument structs
//! (`args.rs`), the parts and extractor traits of `#[processor]` functions (`extract.rs`), the
//! pointer processors' hooks (`shared.rs`), the erased call of each hook (`dynamic.rs`) and the
//! dispatcher's binding of each hook to its context (`runner::dispatch`) are generated from it,
//! so a field or a hook is added in one place. `docs/architecture.md` says how to add a hook.

/// Calls `$gen! { 'a; <hook>* }` with every hook's declaration.
///
/// A hook's declaration: its variant of [`Hook`](super::Hook), its method, its erased call (on
/// the crate's `Erased` trait, behind every `DynProcessor`), the argument, parts and extractor
/// types, the outcome, the context the runner dispatches it on (`runner::dispatch`), the
/// argument type's doc and its runnable example (a doctest on the generated type), the argument
/// fields (each with its doc), the diagnostic for a parameter the hook does not provide, and the
/// parameter types it provides with how each is taken out of the parts. Tokens in parentheses
/// after the generator's name are passed before the table (`for_each_hook!(gen(x;))` calls
/// `gen! { x; 'a; … }`).
macro_rules! for_each_hook {
    ($gen:ident $(($($pre:tt)*))?) => {
        $gen! { $($($pre)*)? 'a;
            Input {
                method: process_input, dyn_method: dyn_process_input,
                args: InputArgs, parts: InputParts, extractor: FromInput,
                outcome: InputOutcome,
                context: InputCx,
                doc: "Arguments of `process_input`.",
                example: r##"
Trims the new input before the model sees it:

```
# futures::executor::block_on(async {
use processors_runtime::prelude::*;

let trim = input_fn("trim", |a: &mut InputArgs<'_, ()>| {
    a.messages
        .iter()
        .map(|m| {
            let mut m = m.clone();
            m.set_text(m.text().trim().to_owned());
            m
        })
        .collect::<Vec<_>>()
});
let model = ScriptedModel::new([Turn::text("ok")]);
let agent = Agent::builder().model(model.clone()).input(trim).build().unwrap();
agent.generate("  hello  ").await.unwrap();
assert_eq!(model.requests()[0].prompt.last().unwrap().text(), "hello");
# });
```
"##,
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
                context: InputStepCx,
                doc: "Arguments of `process_input_step`.",
                example: r##"
Tells the model which step it is on, for that step only:

```
# futures::executor::block_on(async {
use processors_runtime::prelude::*;

let step_note = input_step_fn("step-note", |a: &mut InputStepArgs<'_, ()>| {
    let note = Message::system(format!("This is step {}.", a.step_number));
    StepOverrides::new().system_messages(vec![note])
});
let model = ScriptedModel::new([Turn::text("ok")]);
let agent = Agent::builder().model(model.clone()).input(step_note).build().unwrap();
agent.generate("hi").await.unwrap();
assert_eq!(model.requests()[0].prompt[0].text(), "This is step 0.");
# });
```
"##,
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
                context: LlmRequestCx,
                doc: "Arguments of `process_llm_request`.",
                example: r##"
Answers a known question without calling the model (a cache hit):

```
# futures::executor::block_on(async {
use processors_runtime::prelude::*;
use std::sync::Arc;

let canned = llm_request_fn("canned", |a: &mut LlmRequestArgs<'_, ()>| {
    match a.request.prompt.last().map(Message::text).as_deref() {
        Some("ping") => {
            let id: Arc<str> = Arc::from("text-0");
            LlmRequestAction::Respond(LlmResponse {
                chunks: vec![
                    ChunkKind::TextStart { id: id.clone() },
                    ChunkKind::TextDelta { id: id.clone(), text: "pong".into() },
                    ChunkKind::TextEnd { id },
                    ChunkKind::Finish { finish_reason: FinishReason::Stop, usage: Usage::default() },
                ],
            })
        }
        _ => LlmRequestAction::Continue,
    }
});
let model = ScriptedModel::new([]);
let agent = Agent::builder().model(model.clone()).input(canned).build().unwrap();
assert_eq!(agent.generate("ping").await.unwrap().text, "pong");
assert_eq!(model.calls(), 0);
# });
```
"##,
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
                context: LlmResponseCx,
                doc: "Arguments of `process_llm_response`.",
                example: r##"
Records what the model answered, as a response cache would:

```
# futures::executor::block_on(async {
use processors_runtime::prelude::*;
use std::sync::{Arc, Mutex};

let seen = Arc::new(Mutex::new(String::new()));
let record = {
    let seen = seen.clone();
    llm_response_fn("record", move |a: &mut LlmResponseArgs<'_, ()>| {
        for chunk in &a.response.chunks {
            if let ChunkKind::TextDelta { text, .. } = chunk {
                seen.lock().unwrap().push_str(text);
            }
        }
        assert!(!a.from_cache);
    })
};
let agent = Agent::builder()
    .model(ScriptedModel::new([Turn::deltas(["Hel", "lo"])]))
    .output(record)
    .build()
    .unwrap();
agent.generate("hi").await.unwrap();
assert_eq!(*seen.lock().unwrap(), "Hello");
# });
```
"##,
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
                context: StreamCx,
                doc: "Arguments of `process_output_stream`.",
                example: r##"
Masks a word as it streams, counting the masked deltas in its state:

```
# futures::executor::block_on(async {
use processors_runtime::prelude::*;

let mask = output_stream_fn("mask", |a: &mut OutputStreamArgs<'_, usize>| {
    match a.chunk.text_delta() {
        Some(t) if t.contains("darn") => {
            *a.state += 1;
            a.chunk.clone().map_text(|t| t.replace("darn", "****")).into()
        }
        _ => StreamAction::Pass,
    }
});
let agent = Agent::builder()
    .model(ScriptedModel::new([Turn::deltas(["Oh ", "darn", " it"])]))
    .output(mask)
    .build()
    .unwrap();
assert_eq!(agent.generate("hi").await.unwrap().text, "Oh **** it");
# });
```
"##,
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
                context: OutputStepCx,
                doc: "Arguments of `process_output_step`.",
                example: r##"
Rejects a one-word answer; the model tries again with the reason as feedback:

```
# futures::executor::block_on(async {
use processors_runtime::prelude::*;

let no_one_word = output_step_fn("no-one-word", |a: &mut OutputStepArgs<'_, ()>| {
    if !a.text.trim().contains(' ') {
        return Err(a.abort().reason("answer in a sentence").retry(true).into());
    }
    Ok::<_, ProcessorError>(())
});
let model = ScriptedModel::new([Turn::text("Yes"), Turn::text("Yes, it is.")]);
let agent = Agent::builder()
    .model(model.clone())
    .output(no_one_word)
    .max_processor_retries(1)
    .build()
    .unwrap();
let result = agent.generate("Is it open?").await.unwrap();
assert_eq!(result.text, "Yes, it is.");
assert_eq!(result.steps[0].tripwire.as_ref().unwrap().reason, "answer in a sentence");
assert_eq!(model.calls(), 2);
# });
```
"##,
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
            ToolCall {
                method: process_tool_call, dyn_method: dyn_process_tool_call,
                args: ToolCallArgs, parts: ToolCallParts, extractor: FromToolCall,
                outcome: ToolCallAction,
                context: ToolCallCx,
                doc: "Arguments of `process_tool_call`.",
                example: r##"
Caps a search's `limit` and refuses to delete anything; the model reads the refusal as the
tool's error and goes on:

```
# futures::executor::block_on(async {
use processors_runtime::prelude::*;
use serde_json::json;

let search = tool("search", "Searches", json!({ "type": "object" }), |args| async move {
    Ok(json!({ "limit": args["limit"] }))
});
let delete = tool("delete", "Deletes", json!({ "type": "object" }), |_| async {
    Ok(json!("deleted"))
});
let guard = tool_call_fn("guard", |a: &mut ToolCallArgs<'_, ()>| {
    match a.tool_call.tool_name.as_str() {
        "delete" => ToolCallAction::Refuse("deleting is not allowed".into()),
        "search" if a.tool_call.args["limit"].as_u64() > Some(100) => {
            let mut args = a.tool_call.args.clone();
            args["limit"] = json!(100);
            ToolCallAction::Rewrite(args)
        }
        _ => ToolCallAction::Continue,
    }
});
let model = ScriptedModel::new([
    Turn::empty()
        .tool_call("call-1", "search", json!({ "limit": 5000 }))
        .tool_call("call-2", "delete", json!({})),
    Turn::text("Done."),
]);
let agent = Agent::builder()
    .model(model)
    .tool(search)
    .tool(delete)
    .output(guard)
    .build()
    .unwrap();
let result = agent.generate("Find and delete").await.unwrap();
assert_eq!(result.tool_calls[0].args, json!({ "limit": 100 }));
assert_eq!(result.tool_results[0].result, json!({ "limit": 100 }));
assert!(result.tool_results[1].is_error);
assert_eq!(result.tool_results[1].result, json!("deleting is not allowed"));
# });
```
"##,
                fields {
                    /// The call, as the processors before this one left it.
                    tool_call: &'a ToolCall,
                    /// The tool the call names, when the step offers one by that name (its
                    /// description and its JSON Schema are there to check the call against).
                    tool: Option<&'a dyn Tool>,
                    /// The step, from 0.
                    step_number: u32,
                    /// The steps finished before this one.
                    steps: &'a [StepResult],
                    /// The run's message list (read-only: the step's answer, with its calls, is
                    /// its last message).
                    message_list: &'a MessageList,
                    /// The request's context: read what the caller set, and set typed values
                    /// for the processors after this one.
                    request_context: &'a mut RequestContext,
                    /// Consecutive processor retries so far.
                    retry_count: u32,
                }
                message: "`{Self}` is not a parameter that `process_tool_call` provides",
                note: "`process_tool_call` provides: `&ToolCall`, `Option<&dyn Tool>`, `StepNumber`, `&[StepResult]`, `&MessageList`, `&RequestContext` or `&mut RequestContext`, `RetryCount`, `Abort`, and `state: &mut YourState`",
                provide {
                    &'a ToolCall => |p| p.tool_call;
                    Option<&'a dyn Tool> => |p| p.tool;
                    StepNumber => |p| p.step_number.map(StepNumber);
                    &'a [StepResult] => |p| p.steps;
                    &'a MessageList => |p| p.message_list;
                    &'a RequestContext => |p| p.request_context.take().map(|c| &*c);
                    &'a mut RequestContext => |p| p.request_context.take();
                    RetryCount => |p| p.retry_count.map(RetryCount);
                    Abort => |_p| Some(Abort::new());
                }
            }
            ToolResult {
                method: process_tool_result, dyn_method: dyn_process_tool_result,
                args: ToolResultArgs, parts: ToolResultParts, extractor: FromToolResult,
                outcome: ToolResultAction,
                context: ToolResultCx,
                doc: "Arguments of `process_tool_result`.",
                example: r##"
Takes a field out of a tool's result before the model sees it:

```
# futures::executor::block_on(async {
use processors_runtime::prelude::*;
use serde_json::json;

let account = tool("account", "The user's account", json!({ "type": "object" }), |_| async {
    Ok(json!({ "plan": "pro", "api_key": "sk-123" }))
});
let strip = tool_result_fn("strip-keys", |a: &mut ToolResultArgs<'_, ()>| {
    let mut result = a.result.clone();
    result.as_object_mut()?.remove("api_key");
    Some(result)
});
let model = ScriptedModel::new([
    Turn::empty().tool_call("call-1", "account", json!({})),
    Turn::text("You are on the pro plan."),
]);
let agent = Agent::builder().model(model).tool(account).output(strip).build().unwrap();
let result = agent.generate("Which plan am I on?").await.unwrap();
assert_eq!(result.tool_results[0].result, json!({ "plan": "pro" }));
# });
```
"##,
                fields {
                    /// The call, as it ran.
                    tool_call: &'a ToolCall,
                    /// The tool's result as earlier processors left it (the error's message
                    /// when `is_error`).
                    result: &'a Value,
                    /// What the model reads instead of `result`, when an earlier processor
                    /// set a copy for it ([`ToolResultAction::ForModel`]).
                    model_output: Option<&'a Value>,
                    /// Whether the call failed: the tool returned an error or panicked, no
                    /// tool has its name, or a `process_tool_call` processor refused it.
                    is_error: bool,
                    /// The request's context: read what the caller set, and set typed values
                    /// for the processors after this one.
                    request_context: &'a mut RequestContext,
                }
                message: "`{Self}` is not a parameter that `process_tool_result` provides",
                note: "`process_tool_result` provides: `&ToolCall`, `&Value` (the result), `ModelOutput` (the model's copy, when set), `IsError`, `&RequestContext` or `&mut RequestContext`, `Abort`, and `state: &mut YourState`",
                provide {
                    &'a ToolCall => |p| p.tool_call;
                    &'a Value => |p| p.result;
                    ModelOutput<'a> => |p| p.model_output.map(ModelOutput);
                    IsError => |p| p.is_error.map(IsError);
                    &'a RequestContext => |p| p.request_context.take().map(|c| &*c);
                    &'a mut RequestContext => |p| p.request_context.take();
                    Abort => |_p| Some(Abort::new());
                }
            }
            OutputResult {
                method: process_output_result, dyn_method: dyn_process_output_result,
                args: OutputResultArgs, parts: OutputResultParts, extractor: FromOutputResult,
                outcome: OutputOutcome,
                context: OutputResultCx,
                doc: "Arguments of `process_output_result`.",
                example: r##"
Signs the final answer, once, after every step:

```
# futures::executor::block_on(async {
use processors_runtime::prelude::*;

let sign = output_result_fn("sign", |a: &mut OutputResultArgs<'_, ()>| {
    let mut messages = a.messages.clone();
    if let Some(last) = messages.iter_mut().rev().find(|m| m.role == Role::Assistant) {
        last.set_text(format!("{} (answered in {} step)", last.text(), a.result.steps.len()));
    }
    messages
});
let agent = Agent::builder()
    .model(ScriptedModel::new([Turn::text("Done.")]))
    .output(sign)
    .build()
    .unwrap();
let result = agent.generate("hi").await.unwrap();
assert_eq!(result.response_messages[0].text(), "Done. (answered in 1 step)");
# });
```
"##,
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
                context: ApiErrorCx,
                doc: "Arguments of `process_api_error`.",
                example: r##"
Recovers from a provider that finds the prompt too long: the processor fixes the list
and asks for the call again.

```
# futures::executor::block_on(async {
use processors_runtime::prelude::*;

let shorten = api_error_fn("shorten", |a: &mut ApiErrorArgs<'_, ()>| {
    if a.error.status != Some(400) {
        return ApiErrorAction::Unhandled;
    }
    a.message_list.add_system(Message::system("Be brief."), Some("shorten"));
    ApiErrorAction::Retry
});
let model = ScriptedModel::new([
    Turn::error(ApiError::new(400, "prompt too long")),
    Turn::text("Short answer."),
]);
let agent = Agent::builder().model(model.clone()).error(shorten).build().unwrap();
assert_eq!(agent.generate("hi").await.unwrap().text, "Short answer.");
assert_eq!(model.calls(), 2);
# });
```
"##,
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
