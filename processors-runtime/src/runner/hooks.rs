//! One function per hook: runs the processors of a list that have the hook, in list order, and
//! applies what each returns to the run.

use super::{Chain, Halt, HookError, Scope, call, call_now, ids};
use crate::chunk::{FinishReason, Usage};
use crate::message::{MessageList, MessageSource, Role, Text, ToolCall, concat_texts};
use crate::model::{ApiError, LanguageModel, ModelRequest};
use crate::processor::{
    ApiErrorAction, ApiErrorArgs, Hook, InputArgs, InputOutcome, InputStepArgs, LlmRequestAction,
    LlmRequestArgs, LlmResponse, LlmResponseArgs, OutputOutcome, OutputResultArgs, OutputStepArgs,
    StepConfig, StepOverrides, ToolResultArgs,
};
use crate::step::RunSummary;
use serde_json::Value;

/// The messages `copy` gives, for a processor that reads them (see
/// [`Processor::READS_MESSAGES`](crate::processor::Processor::READS_MESSAGES)); nothing for
/// one that does not.
#[inline(always)]
fn copy_if<T: Default>(reads: bool, copy: impl FnOnce() -> T) -> T {
    if reads { copy() } else { T::default() }
}

/// Calls hook `$hook` of the processor of entry `$e` with `$args`: without a future when the
/// processor says the hook never waits (`dyn_sync_hooks`, asked when the list was bound),
/// else with its future in the run's slot.
macro_rules! run_hook {
    ($e:expr, $hook:ident, $s:expr, $args:expr, $now:ident, $in:ident) => {
        match $e.sync {
            true => call_now($e.id, Hook::$hook, &$s.report, || $e.p.$now($args)),
            false => {
                call(
                    $e.id,
                    Hook::$hook,
                    &$s.report,
                    $e.p.$in($args, &mut $s.hooks),
                )
                .await
            }
        }
    };
}

/// `process_input`: each processor sees the input as the ones before it left it; returned
/// messages are reconciled with the input, a returned system set replaces the untagged one.
pub(crate) async fn input(chain: &Chain<'_>, s: &mut Scope) -> Result<(), Halt> {
    for e in chain.with(Hook::Input) {
        let (slot, id) = (e.slot, e.id);
        let args = InputArgs {
            messages: copy_if(e.reads, || s.list.input().cloned().collect()),
            system_messages: copy_if(e.reads, || s.list.system_messages().to_vec()),
            message_list: &mut s.list,
            state: s.states.get_mut(slot),
            request_context: &mut s.cx,
            retry_count: 0,
            report: &s.report,
        };
        let ran = run_hook!(
            e,
            Input,
            s,
            args,
            dyn_process_input_now,
            dyn_process_input_in
        );
        match ran? {
            None | Some(InputOutcome::Unchanged) => {}
            Some(outcome) => apply_input(&mut s.list, outcome, id)?,
        }
    }
    Ok(())
}

/// Applies what a `process_input` returned to the list: messages reconciled with the input,
/// a system set replacing the untagged one.
pub(crate) fn apply_input(
    list: &mut MessageList,
    outcome: InputOutcome,
    id: &str,
) -> Result<(), HookError> {
    let applied = match outcome {
        InputOutcome::Unchanged => Ok(()),
        InputOutcome::Messages(ms) => {
            let view = ids(list.input());
            list.reconcile(&view, ms, MessageSource::Input)
        }
        // The system set first: system-role messages inside `messages` then add to it.
        InputOutcome::MessagesAndSystem { messages, system } => {
            let view = ids(list.input());
            list.reconcile_system(system)
                .and_then(|()| list.reconcile(&view, messages, MessageSource::Input))
        }
    };
    applied.map_err(|e| HookError::invalid(id, Hook::Input, e))
}

/// `process_input_step`: overrides chain, each processor seeing the settings the ones before
/// it chose; only what a result names changes.
pub(crate) async fn input_step(
    chain: &Chain<'_>,
    s: &mut Scope,
    step_number: u32,
    config: &mut StepConfig,
) -> Result<(), Halt> {
    for e in chain.with(Hook::InputStep) {
        let (slot, id) = (e.slot, e.id);
        let args = InputStepArgs {
            step_number,
            steps: &s.steps,
            messages: copy_if(e.reads, || s.list.all().cloned().collect()),
            system_messages: copy_if(e.reads, || s.list.all_system_messages().cloned().collect()),
            config: &*config,
            message_list: &mut s.list,
            state: s.states.get_mut(slot),
            request_context: &mut s.cx,
            retry_count: s.retry_count,
            report: &s.report,
        };
        let ran = run_hook!(
            e,
            InputStep,
            s,
            args,
            dyn_process_input_step_now,
            dyn_process_input_step_in
        );
        if let Some(overrides) = ran? {
            apply_overrides(&mut s.list, config, overrides, id)?;
        }
    }
    Ok(())
}

/// Applies one processor's step overrides: only what it names changes.
pub(crate) fn apply_overrides(
    list: &mut MessageList,
    config: &mut StepConfig,
    o: StepOverrides,
    id: &str,
) -> Result<(), HookError> {
    let invalid = |reason: String| HookError::invalid(id, Hook::InputStep, reason);
    if let Some(m) = o.model {
        config.model = m;
    }
    if let Some(t) = o.tools {
        config.tools = t;
    }
    if let Some(c) = o.tool_choice {
        config.tool_choice = c;
    }
    if let Some(p) = o.provider_options {
        config.provider_options = p;
    }
    if let Some(s) = o.model_settings {
        config.model_settings = s;
    }
    if let Some(active) = o.active_tools {
        if let Some(unknown) = active
            .iter()
            .find(|n| !config.tools.iter().any(|t| t.name() == n.as_str()))
        {
            return Err(invalid(format!(
                "active_tools names `{unknown}`, which is not among the step's tools"
            )));
        }
        config.active_tools = Some(active);
    }
    if let Some(system) = o.system_messages {
        list.reconcile_system(system)
            .map_err(|e| invalid(e.to_string()))?;
    }
    if let Some(ms) = o.messages {
        let view = ids(list.all());
        list.reconcile(&view, ms, MessageSource::Context)
            .map_err(|e| invalid(e.to_string()))?;
    }
    Ok(())
}

/// `process_llm_request`: a returned prompt replaces the request's for this call only; the
/// first returned response answers the call (later processors still run).
pub(crate) async fn llm_request(
    chain: &Chain<'_>,
    s: &mut Scope,
    step_number: u32,
    request: &mut ModelRequest,
    model: &dyn LanguageModel,
) -> Result<Option<LlmResponse>, Halt> {
    let mut answer = None;
    for e in chain.with(Hook::LlmRequest) {
        let slot = e.slot;
        let args = LlmRequestArgs {
            step_number,
            request: &*request,
            model,
            state: s.states.get_mut(slot),
            request_context: &mut s.cx,
            report: &s.report,
        };
        let ran = run_hook!(
            e,
            LlmRequest,
            s,
            args,
            dyn_process_llm_request_now,
            dyn_process_llm_request_in
        );
        match ran?.unwrap_or_default() {
            LlmRequestAction::Continue => {}
            LlmRequestAction::Prompt(prompt) => request.prompt = prompt,
            LlmRequestAction::Respond(response) => {
                answer.get_or_insert(response);
            }
        }
    }
    Ok(answer)
}

/// What `process_llm_response` sees of a step.
pub(crate) struct Response<'a> {
    pub(crate) step_number: u32,
    pub(crate) request: &'a ModelRequest,
    pub(crate) response: &'a LlmResponse,
    pub(crate) delivered: &'a LlmResponse,
    pub(crate) from_cache: bool,
}

/// `process_llm_response`: side effects only.
pub(crate) async fn llm_response(
    chain: &Chain<'_>,
    s: &mut Scope,
    r: Response<'_>,
) -> Result<(), Halt> {
    for e in chain.with(Hook::LlmResponse) {
        let slot = e.slot;
        let args = LlmResponseArgs {
            step_number: r.step_number,
            request: r.request,
            response: r.response,
            delivered: r.delivered,
            from_cache: r.from_cache,
            state: s.states.get_mut(slot),
            request_context: &mut s.cx,
            report: &s.report,
        };
        let ran = run_hook!(
            e,
            LlmResponse,
            s,
            args,
            dyn_process_llm_response_now,
            dyn_process_llm_response_in
        );
        ran?;
    }
    Ok(())
}

/// What `process_output_step` sees of a step.
pub(crate) struct Step<'a> {
    pub(crate) step_number: u32,
    pub(crate) text: &'a str,
    pub(crate) finish_reason: FinishReason,
    pub(crate) usage: Usage,
    pub(crate) run_usage: Usage,
    pub(crate) tool_calls: &'a [ToolCall],
}

/// `process_output_step`: returned messages are reconciled with the step's messages, whose
/// ids (`step_ids`) follow.
pub(crate) async fn output_step(
    chain: &Chain<'_>,
    s: &mut Scope,
    step: Step<'_>,
    step_ids: &mut Vec<String>,
) -> Result<(), Halt> {
    for e in chain.with(Hook::OutputStep) {
        let (slot, id) = (e.slot, e.id);
        let args = OutputStepArgs {
            step_number: step.step_number,
            messages: copy_if(e.reads, || {
                step_ids
                    .iter()
                    .filter_map(|i| s.list.get(i).cloned())
                    .collect()
            }),
            text: step.text,
            finish_reason: step.finish_reason,
            usage: step.usage,
            run_usage: step.run_usage,
            tool_calls: step.tool_calls,
            steps: &s.steps,
            system_messages: copy_if(e.reads, || s.list.all_system_messages().cloned().collect()),
            message_list: &mut s.list,
            state: s.states.get_mut(slot),
            request_context: &mut s.cx,
            retry_count: s.retry_count,
            report: &s.report,
        };
        let ran = run_hook!(
            e,
            OutputStep,
            s,
            args,
            dyn_process_output_step_now,
            dyn_process_output_step_in
        );
        if let Some(OutputOutcome::Messages(ms)) = ran? {
            let new_ids = ms
                .iter()
                .filter(|m| m.role != Role::System)
                .map(|m| m.id.clone())
                .collect();
            s.list
                .reconcile(step_ids, ms, MessageSource::Response)
                .map_err(|e| HookError::invalid(id, Hook::OutputStep, e))?;
            *step_ids = new_ids;
        }
    }
    Ok(())
}

/// `process_tool_result`: each processor sees the result as the ones before it left it.
pub(crate) async fn tool_result(
    chain: &Chain<'_>,
    s: &mut Scope,
    tool_call: &ToolCall,
    mut result: Value,
) -> Result<Value, Halt> {
    for e in chain.with(Hook::ToolResult) {
        let slot = e.slot;
        let args = ToolResultArgs {
            tool_call,
            result: &result,
            state: s.states.get_mut(slot),
            request_context: &mut s.cx,
            report: &s.report,
        };
        let ran = run_hook!(
            e,
            ToolResult,
            s,
            args,
            dyn_process_tool_result_now,
            dyn_process_tool_result_in
        );
        if let Some(Some(changed)) = ran? {
            result = changed;
        }
    }
    Ok(result)
}

/// The response text: the text of the response's assistant messages.
pub(crate) fn response_text(list: &MessageList) -> Text {
    concat_texts(
        list.response()
            .filter(|m| m.role == Role::Assistant)
            .flat_map(|m| &m.content.parts),
    )
}

/// `process_output_result`: returned messages are reconciled with the response, and the
/// summary's text follows.
pub(crate) async fn output_result(
    chain: &Chain<'_>,
    s: &mut Scope,
    summary: &mut RunSummary,
) -> Result<(), Halt> {
    for e in chain.with(Hook::OutputResult) {
        let (slot, id) = (e.slot, e.id);
        let args = OutputResultArgs {
            messages: copy_if(e.reads, || s.list.response().cloned().collect()),
            result: &*summary,
            message_list: &mut s.list,
            state: s.states.get_mut(slot),
            request_context: &mut s.cx,
            retry_count: s.retry_count,
            report: &s.report,
        };
        let ran = run_hook!(
            e,
            OutputResult,
            s,
            args,
            dyn_process_output_result_now,
            dyn_process_output_result_in
        );
        if let Some(OutputOutcome::Messages(ms)) = ran? {
            let view = ids(s.list.response());
            s.list
                .reconcile(&view, ms, MessageSource::Response)
                .map_err(|e| HookError::invalid(id, Hook::OutputResult, e))?;
            summary.text = response_text(&s.list);
        }
    }
    Ok(())
}

/// `process_api_error`: the input, output, then error processors are asked in order; the
/// first that asks for a retry wins. Returns its id.
pub(crate) async fn api_error(
    chains: [&Chain<'_>; 3],
    s: &mut Scope,
    error: &ApiError,
    step_number: u32,
    retry_count: u32,
) -> Result<Option<String>, Halt> {
    for e in chains.into_iter().flat_map(|c| c.with(Hook::ApiError)) {
        let slot = e.slot;
        let args = ApiErrorArgs {
            error,
            step_number,
            steps: &s.steps,
            message_list: &mut s.list,
            state: s.states.get_mut(slot),
            request_context: &mut s.cx,
            retry_count,
            report: &s.report,
        };
        let ran = run_hook!(
            e,
            ApiError,
            s,
            args,
            dyn_process_api_error_now,
            dyn_process_api_error_in
        );
        if ran? == Some(ApiErrorAction::Retry) {
            return Ok(Some(e.id.to_owned()));
        }
    }
    Ok(None)
}
