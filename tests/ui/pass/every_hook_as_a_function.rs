//! One processor function per hook, asking for the parameters each hook provides.

use processors::model::ModelRequest;
use processors::prelude::*;
use serde_json::Value;

#[processor(input)]
async fn on_input(
    messages: Vec<Message>,
    system: SystemMessages,
    list: &mut MessageList,
    cx: &RequestContext,
    retries: RetryCount,
    abort: Abort,
) -> Result<InputOutcome, ProcessorError> {
    let _ = (system, list.len(), cx, retries, abort);
    Ok(messages.into())
}

#[processor(input_step)]
fn on_input_step(step: StepNumber, steps: &[StepResult], config: &processors::processor::StepConfig) -> StepOverrides {
    let _ = (step, steps, config);
    StepOverrides::new()
}

#[processor(llm_request)]
fn on_llm_request(request: &ModelRequest, model: &dyn LanguageModel, state: &mut u32) -> LlmRequestAction {
    let _ = (request, model);
    *state += 1;
    LlmRequestAction::Continue
}

#[processor(llm_response)]
fn on_llm_response(response: &LlmResponse, from_cache: FromCache) {
    let _ = (response, from_cache);
}

#[processor(output_stream, process_data_parts, stream_history)]
async fn on_output_stream(chunk: &Chunk, history: &[Chunk], mut writer: DataWriter<'_>) -> Option<Chunk> {
    if history.is_empty() {
        writer.write("first", Value::Null);
    }
    Some(chunk.clone())
}

#[processor(output_step)]
fn on_output_step(text: &str, reason: FinishReason, calls: &[ToolCall]) {
    let _ = (text, reason, calls);
}

#[processor(tool_call)]
fn on_tool_call(
    call: &ToolCall,
    tool: Option<&dyn Tool>,
    step: StepNumber,
    list: &MessageList,
    cx: &mut RequestContext,
    retries: RetryCount,
    abort: Abort,
) -> Result<ToolCallAction, ProcessorError> {
    let _ = (tool, step, list.len(), cx, retries);
    match call.tool_name.as_str() {
        "drop_table" => Err(abort.reason("no").into()),
        "rm" => Ok(ToolCallAction::Refuse("not here".to_owned())),
        _ => Ok(ToolCallAction::Continue),
    }
}

#[processor(tool_result)]
fn on_tool_result(call: &ToolCall, result: &Value, failed: IsError) -> Option<Value> {
    let _ = (call, failed);
    Some(result.clone())
}

#[processor(output_result)]
fn on_output_result(summary: &RunSummary, messages: Vec<Message>) -> Vec<Message> {
    let _ = summary;
    messages
}

#[processor(api_error, name = FixRequests)]
fn api_error(error: &ApiError, list: &mut MessageList) -> ApiErrorAction {
    let _ = list;
    if error.status == Some(400) { ApiErrorAction::Retry } else { ApiErrorAction::Unhandled }
}

fn input_side<P: InputProcessor>() {}
fn output_side<P: OutputProcessor>() {}
fn error_side<P: ErrorProcessor>() {}

fn main() {
    input_side::<OnInput>();
    input_side::<OnInputStep>();
    input_side::<OnLlmRequest>();
    output_side::<OnLlmResponse>();
    output_side::<OnOutputStream>();
    output_side::<OnOutputStep>();
    output_side::<OnToolCall>();
    output_side::<OnToolResult>();
    output_side::<OnOutputResult>();
    error_side::<Ignore>();
    error_side::<FixRequests>();
    assert_eq!(OnOutputStream::ID, "on-output-stream");
    assert!(OnOutputStream.process_data_parts());
}

#[processor(api_error, name = Ignore)]
fn renamed(error: &ApiError) -> ApiErrorAction {
    let _ = error;
    ApiErrorAction::Unhandled
}
