//! Each hook's context ([`HookCx`]): what it reads, what its processors may change, how a
//! processor's arguments are built from it and how its outcome is applied. The one place
//! where a hook's semantics (`docs/semantics.md`, "Hooks") are written; the agent loop builds a
//! context from its run and hands it to the dispatcher, a workflow builds one from the
//! arguments of the hook that called it.

use super::dispatch::{Dispatch, HookCx, MapFn, Place, WorkflowInput, run};
pub(crate) use super::stream::StreamCx;
use super::{Chain, Halt, HookEntry, HookError, Scope, ids};
use crate::chunk::{ChunkKind, FinishReason, Usage};
use crate::context::RequestContext;
use crate::message::{Message, MessageList, MessageSource, Role, Text, ToolCall, concat_texts};
use crate::model::{ApiError, LanguageModel, ModelRequest};
use crate::processor::ShadowAction;
use crate::processor::report::{Reporter, Verdict, quote};
use crate::processor::table::for_each_hook;
use crate::processor::{
    ApiErrorAction, ApiErrorArgs, Hook, InputArgs, InputOutcome, InputStepArgs, LlmRequestAction,
    LlmRequestArgs, LlmResponse, LlmResponseArgs, OutputOutcome, OutputResultArgs, OutputStepArgs,
    OutputStreamArgs, StepConfig, StepOverrides, StreamAction, ToolCallAction, ToolCallArgs,
    ToolResultAction, ToolResultArgs,
};
use crate::step::{RunSummary, StepResult};
use crate::tool::Tool;
use serde_json::{Value, json};
use std::any::Any;
use std::sync::Arc;

/// Implements [`Dispatch`] for each hook's context, from the hook table.
macro_rules! dispatch_impls {
    ($a:lifetime; $(
        $hook:ident {
            method: $method:ident, dyn_method: $dyn_method:ident,
            args: $args:ident, parts: $parts:ident, extractor: $extractor:ident,
            outcome: $outcome:ty, context: $context:ident,
            $($rest:tt)*
        }
    )*) => { $(
        impl Dispatch for $context<'_> {
            const HOOK: Hook = Hook::$hook;
            type Outcome = $outcome;
            type Args<'a> = $args<'a, dyn Any + Send> where Self: 'a;
            #[inline]
            fn call<'a>(
                p: &'a dyn crate::processor::DynProcessor,
                args: Self::Args<'a>,
                slot: Option<&'a mut crate::processor::future_slot::FutureSlot>,
            ) -> crate::processor::call::Called<'a, $outcome>
            where
                Self: 'a,
            {
                p.$dyn_method(args, slot)
            }
        }
    )* };
}

for_each_hook!(dispatch_impls);

/// The messages `copy` gives, for a processor that reads them (see
/// [`Processor::READS_MESSAGES`](crate::processor::Processor::READS_MESSAGES)); nothing for
/// one that does not.
#[inline(always)]
fn copy_if<T: Default>(reads: bool, copy: impl FnOnce() -> T) -> T {
    if reads { copy() } else { T::default() }
}

/// A context's [`HookCx::fork`] and [`HookCx::adopt`], [`HookCx::lend`] and
/// [`HookCx::take_back`]: its `places` copied for a parallel branch and the selected branch's
/// taken; the request context (`cx`) copied for a branch too, and moved into the copy lent to a
/// processor in shadow (which gets copies of the other places) until it is taken back; what the processors change besides (`state`) copied and
/// taken; what they cannot change (`fixed`) copied. `list` names the place of the message list
/// the hook's processors may edit, or is `none`.
macro_rules! branches {
    ($cx:ident; places: [$($place:ident),*], state: [$($state:ident),*], fixed: [$($fixed:ident),*], list: $list:tt) => {
        fn fork(&self) -> Self {
            Self {
                $($place: self.$place.fork(),)*
                cx: self.cx.fork(),
                $($state: self.$state.clone(),)*
                $($fixed: self.$fixed,)*
            }
        }

        fn adopt(&mut self, branch: Self) {
            $(self.$place.adopt(branch.$place);)*
            self.cx.adopt(branch.cx);
            $(self.$state = branch.$state;)*
        }

        fn lend(&mut self) -> Self {
            Self {
                $($place: self.$place.fork(),)*
                // An empty stand-in until the copy gives it back.
                cx: std::mem::replace(&mut self.cx, Place::copy(RequestContext::default())),
                $($state: self.$state.clone(),)*
                $($fixed: self.$fixed,)*
            }
        }

        branches!(@list $list);
    };
    (@list none) => {
        fn list(&self) -> Option<&MessageList> {
            None
        }

        fn take_back(&mut self, lent: Self) -> Option<MessageList> {
            self.cx = lent.cx;
            None
        }
    };
    (@list $list:ident) => {
        fn list(&self) -> Option<&MessageList> {
            Some(&self.$list)
        }

        fn take_back(&mut self, lent: Self) -> Option<MessageList> {
            self.cx = lent.cx;
            Some(lent.$list.into_inner())
        }
    };
}

/// `process_input`: the new input. Each processor sees it as the ones before it left it;
/// returned messages are reconciled with it, a returned system set replaces the untagged one.
pub(crate) struct InputCx<'r> {
    pub(crate) list: Place<'r, MessageList>,
    pub(crate) cx: Place<'r, RequestContext>,
    pub(crate) retry_count: u32,
    /// Whether a processor returned messages.
    pub(crate) changed: bool,
}

impl HookCx for InputCx<'_> {
    #[inline]
    fn args<'a>(
        &'a mut self,
        state: &'a mut (dyn Any + Send),
        reads: bool,
        report: &'a Reporter,
    ) -> InputArgs<'a, dyn Any + Send> {
        InputArgs {
            messages: copy_if(reads, || self.list.input().cloned().collect()),
            system_messages: copy_if(reads, || self.list.system_messages().to_vec()),
            message_list: &mut self.list,
            state,
            request_context: &mut self.cx,
            retry_count: self.retry_count,
            report,
        }
    }

    #[inline]
    fn apply(&mut self, outcome: InputOutcome, id: &str) -> Result<bool, HookError> {
        self.changed |= !matches!(outcome, InputOutcome::Unchanged);
        let list = &mut *self.list;
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
        applied
            .map(|()| false)
            .map_err(|e| HookError::invalid(id, Hook::Input, e))
    }

    fn with_input<R>(&self, f: impl FnOnce(&WorkflowInput<'_>) -> R) -> R {
        let messages: Vec<Message> = self.list.input().cloned().collect();
        f(&WorkflowInput::Messages(&messages))
    }

    fn map(&mut self, f: &MapFn, id: &str) -> Result<(), HookError> {
        let mapped = f(self.list.input().cloned().collect());
        let view = ids(self.list.input());
        self.changed = true;
        (self.list.reconcile(&view, mapped, MessageSource::Input))
            .map_err(|e| HookError::invalid(id, Hook::Input, e))
    }

    fn judge(&self, outcome: InputOutcome) -> Option<Verdict> {
        let given = || self.list.input().cloned().collect::<Vec<_>>();
        match outcome {
            InputOutcome::Unchanged => None,
            InputOutcome::Messages(m) => Verdict::messages(&given(), m, "the input"),
            InputOutcome::MessagesAndSystem { messages, system }
                if messages == given() && system == self.list.system_messages() =>
            {
                None
            }
            InputOutcome::MessagesAndSystem { messages, system } => Verdict::change(
                "would have changed the input and the system messages",
                json!({ "messages": messages, "systemMessages": system }),
            ),
        }
    }

    branches!(InputCx; places: [list], state: [changed], fixed: [retry_count], list: list);
}

/// Which step settings the processors of a `process_input_step` run named.
#[derive(Clone, Copy, Default)]
pub(crate) struct Named {
    model: bool,
    tools: bool,
    tool_choice: bool,
    active_tools: bool,
    provider_options: bool,
    model_settings: bool,
}

/// `process_input_step`: the conversation and the step's settings. Overrides chain, each
/// processor seeing the settings the ones before it chose; only what a result names changes.
pub(crate) struct InputStepCx<'r> {
    pub(crate) step_number: u32,
    pub(crate) steps: &'r [StepResult],
    pub(crate) config: Place<'r, StepConfig>,
    pub(crate) list: Place<'r, MessageList>,
    pub(crate) cx: Place<'r, RequestContext>,
    pub(crate) retry_count: u32,
    /// The settings the processors named so far.
    pub(crate) named: Named,
}

impl InputStepCx<'_> {
    /// The settings the processors named, as overrides (messages and system messages were
    /// applied to the list): what a workflow returns to the list around it.
    pub(crate) fn named_overrides(self) -> StepOverrides {
        let (c, n) = (self.config.into_inner(), self.named);
        let mut o = StepOverrides::new();
        o.model = n.model.then_some(c.model);
        o.tools = n.tools.then_some(c.tools);
        o.tool_choice = n.tool_choice.then_some(c.tool_choice);
        o.active_tools = if n.active_tools { c.active_tools } else { None };
        o.provider_options = n.provider_options.then_some(c.provider_options);
        o.model_settings = n.model_settings.then_some(c.model_settings);
        o
    }
}

impl HookCx for InputStepCx<'_> {
    #[inline]
    fn args<'a>(
        &'a mut self,
        state: &'a mut (dyn Any + Send),
        reads: bool,
        report: &'a Reporter,
    ) -> InputStepArgs<'a, dyn Any + Send> {
        InputStepArgs {
            step_number: self.step_number,
            steps: self.steps,
            messages: copy_if(reads, || self.list.all().cloned().collect()),
            system_messages: copy_if(reads, || self.list.all_system_messages().cloned().collect()),
            config: &self.config,
            message_list: &mut self.list,
            state,
            request_context: &mut self.cx,
            retry_count: self.retry_count,
            report,
        }
    }

    #[inline]
    fn apply(&mut self, o: StepOverrides, id: &str) -> Result<bool, HookError> {
        let invalid = |reason: String| HookError::invalid(id, Hook::InputStep, reason);
        let (config, n) = (&mut *self.config, &mut self.named);
        if let Some(active) = &o.active_tools
            && let Some(unknown) = active.iter().find(|name| {
                let tools = o.tools.as_ref().unwrap_or(&config.tools);
                !tools.iter().any(|t| t.name() == name.as_str())
            })
        {
            return Err(invalid(format!(
                "active_tools names `{unknown}`, which is not among the step's tools"
            )));
        }
        n.model |= o.model.is_some();
        n.tools |= o.tools.is_some();
        n.tool_choice |= o.tool_choice.is_some();
        n.active_tools |= o.active_tools.is_some();
        n.provider_options |= o.provider_options.is_some();
        n.model_settings |= o.model_settings.is_some();
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
            config.active_tools = Some(active);
        }
        if let Some(system) = o.system_messages {
            self.list
                .reconcile_system(system)
                .map_err(|e| invalid(e.to_string()))?;
        }
        if let Some(ms) = o.messages {
            let view = ids(self.list.all());
            self.list
                .reconcile(&view, ms, MessageSource::Context)
                .map_err(|e| invalid(e.to_string()))?;
        }
        Ok(false)
    }

    fn with_input<R>(&self, f: impl FnOnce(&WorkflowInput<'_>) -> R) -> R {
        f(&WorkflowInput::Conversation(&self.list))
    }

    fn judge(&self, o: StepOverrides) -> Option<Verdict> {
        let config = &*self.config;
        let same_model = |m: &Arc<dyn LanguageModel>| {
            m.provider() == config.model.provider() && m.model_id() == config.model.model_id()
        };
        let names = |tools: &[Arc<dyn Tool>]| -> Vec<String> {
            tools.iter().map(|t| t.name().to_owned()).collect()
        };
        let given = || self.list.all().cloned().collect::<Vec<_>>();
        let given_system = || self.list.all_system_messages().cloned().collect::<Vec<_>>();
        let set = [
            ("model", o.model.as_ref().is_some_and(|m| !same_model(m))),
            (
                "tools",
                (o.tools.as_ref()).is_some_and(|t| names(t) != names(&config.tools)),
            ),
            (
                "tool_choice",
                (o.tool_choice.as_ref()).is_some_and(|c| *c != config.tool_choice),
            ),
            (
                "active_tools",
                (o.active_tools.as_ref()).is_some_and(|a| Some(a) != config.active_tools.as_ref()),
            ),
            (
                "messages",
                o.messages.as_ref().is_some_and(|m| *m != given()),
            ),
            (
                "system_messages",
                (o.system_messages.as_ref()).is_some_and(|m| *m != given_system()),
            ),
            (
                "provider_options",
                (o.provider_options.as_ref()).is_some_and(|p| *p != config.provider_options),
            ),
            (
                "model_settings",
                (o.model_settings.as_ref()).is_some_and(|m| *m != config.model_settings),
            ),
        ];
        let set: Vec<&str> = set.iter().filter(|(_, s)| *s).map(|(n, _)| *n).collect();
        if set.is_empty() {
            return None;
        }
        Verdict::change(
            format!("would have set the step's {}", set.join(", ")),
            json!({
                "overrides": set,
                "model": o.model.map(|m| m.model_id().to_owned()),
                "messages": o.messages,
                "systemMessages": o.system_messages,
                "activeTools": o.active_tools,
            }),
        )
    }

    branches!(InputStepCx; places: [config, list], state: [named], fixed: [step_number, steps, retry_count], list: list);
}

/// `process_llm_request`: the request about to be sent. A returned prompt replaces the
/// request's for this call only; the first returned response answers the call (later
/// processors still run).
pub(crate) struct LlmRequestCx<'r> {
    pub(crate) step_number: u32,
    pub(crate) request: Place<'r, ModelRequest>,
    pub(crate) model: &'r dyn LanguageModel,
    pub(crate) cx: Place<'r, RequestContext>,
    /// The first response a processor returned.
    pub(crate) answer: Option<LlmResponse>,
    /// Whether a processor returned a prompt.
    pub(crate) prompt_changed: bool,
    /// Whether a processor returned a whole request.
    pub(crate) request_changed: bool,
}

impl LlmRequestCx<'_> {
    /// What the processors chose, as one action: what a workflow returns to the list around
    /// it.
    pub(crate) fn action(self) -> LlmRequestAction {
        match (self.answer, self.request_changed, self.prompt_changed) {
            (Some(response), _, _) => LlmRequestAction::Respond(response),
            (None, true, _) => LlmRequestAction::Request(Box::new(self.request.into_inner())),
            (None, false, true) => LlmRequestAction::Prompt(self.request.into_inner().prompt),
            (None, false, false) => LlmRequestAction::Continue,
        }
    }
}

impl HookCx for LlmRequestCx<'_> {
    #[inline]
    fn args<'a>(
        &'a mut self,
        state: &'a mut (dyn Any + Send),
        _reads: bool,
        report: &'a Reporter,
    ) -> LlmRequestArgs<'a, dyn Any + Send> {
        LlmRequestArgs {
            step_number: self.step_number,
            request: &self.request,
            model: self.model,
            state,
            request_context: &mut self.cx,
            report,
        }
    }

    #[inline]
    fn apply(&mut self, action: LlmRequestAction, _id: &str) -> Result<bool, HookError> {
        match action {
            LlmRequestAction::Continue => {}
            LlmRequestAction::Prompt(prompt) => {
                self.request.prompt = prompt;
                self.prompt_changed = true;
            }
            LlmRequestAction::Request(request) => {
                *self.request = *request;
                self.request_changed = true;
            }
            LlmRequestAction::Respond(response) => {
                self.answer.get_or_insert(response);
            }
        }
        Ok(false)
    }

    fn with_input<R>(&self, f: impl FnOnce(&WorkflowInput<'_>) -> R) -> R {
        f(&WorkflowInput::Request(&self.request))
    }

    fn judge(&self, action: LlmRequestAction) -> Option<Verdict> {
        match action {
            LlmRequestAction::Continue => None,
            LlmRequestAction::Prompt(prompt) if prompt == self.request.prompt => None,
            LlmRequestAction::Request(new) if *new == *self.request => None,
            LlmRequestAction::Request(new) => Verdict::change(
                "would have rewritten the request",
                json!({ "request": new }),
            ),
            LlmRequestAction::Prompt(prompt) => Verdict::change(
                "would have rewritten the prompt",
                json!({ "prompt": prompt }),
            ),
            LlmRequestAction::Respond(response) => {
                let text: String = (response.chunks.iter())
                    .filter_map(|c| match c {
                        ChunkKind::TextDelta { text, .. } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                Verdict::change(
                    format!("would have answered in the model's place: {}", quote(&text)),
                    json!({ "text": text, "chunks": response.chunks.len() }),
                )
            }
        }
    }

    branches!(LlmRequestCx; places: [request], state: [answer, prompt_changed, request_changed], fixed: [step_number, model], list: none);
}

/// `process_llm_response`: the step's request and response; side effects only.
pub(crate) struct LlmResponseCx<'r> {
    pub(crate) step_number: u32,
    pub(crate) request: &'r ModelRequest,
    pub(crate) response: &'r LlmResponse,
    pub(crate) delivered: &'r LlmResponse,
    pub(crate) from_cache: bool,
    pub(crate) cx: Place<'r, RequestContext>,
}

impl HookCx for LlmResponseCx<'_> {
    #[inline]
    fn args<'a>(
        &'a mut self,
        state: &'a mut (dyn Any + Send),
        _reads: bool,
        report: &'a Reporter,
    ) -> LlmResponseArgs<'a, dyn Any + Send> {
        LlmResponseArgs {
            step_number: self.step_number,
            request: self.request,
            response: self.response,
            delivered: self.delivered,
            from_cache: self.from_cache,
            state,
            request_context: &mut self.cx,
            report,
        }
    }

    #[inline]
    fn apply(&mut self, (): (), _id: &str) -> Result<bool, HookError> {
        Ok(false)
    }

    fn with_input<R>(&self, f: impl FnOnce(&WorkflowInput<'_>) -> R) -> R {
        f(&WorkflowInput::Response(self.response))
    }

    fn judge(&self, (): ()) -> Option<Verdict> {
        None
    }

    branches!(LlmResponseCx; places: [], state: [], fixed: [step_number, request, response, delivered, from_cache], list: none);
}

/// `process_output_step`: the step's messages (followed by id) and what the step produced.
/// Returned messages are reconciled with the step's, whose ids follow.
pub(crate) struct OutputStepCx<'r> {
    pub(crate) step_number: u32,
    pub(crate) text: &'r str,
    pub(crate) finish_reason: FinishReason,
    pub(crate) usage: Usage,
    pub(crate) run_usage: Usage,
    pub(crate) tool_calls: &'r [ToolCall],
    pub(crate) steps: &'r [StepResult],
    /// The ids of the step's messages.
    pub(crate) step_ids: Place<'r, Vec<String>>,
    pub(crate) list: Place<'r, MessageList>,
    pub(crate) cx: Place<'r, RequestContext>,
    pub(crate) retry_count: u32,
    /// Whether a processor returned messages.
    pub(crate) changed: bool,
}

impl OutputStepCx<'_> {
    /// The step's messages, as the list has them.
    pub(crate) fn messages(&self) -> Vec<Message> {
        (self.step_ids.iter())
            .filter_map(|i| self.list.get(i).cloned())
            .collect()
    }

    /// Reconciles the step's messages with `ms`, whose ids the step's then are.
    fn replace(&mut self, ms: Vec<Message>) -> Result<(), crate::message::ReconcileError> {
        let new_ids = ms
            .iter()
            .filter(|m| m.role != Role::System)
            .map(|m| m.id.clone())
            .collect();
        self.list
            .reconcile(&self.step_ids, ms, MessageSource::Response)?;
        *self.step_ids = new_ids;
        self.changed = true;
        Ok(())
    }
}

impl HookCx for OutputStepCx<'_> {
    #[inline]
    fn args<'a>(
        &'a mut self,
        state: &'a mut (dyn Any + Send),
        reads: bool,
        report: &'a Reporter,
    ) -> OutputStepArgs<'a, dyn Any + Send> {
        OutputStepArgs {
            step_number: self.step_number,
            messages: copy_if(reads, || self.messages()),
            text: self.text,
            finish_reason: self.finish_reason,
            usage: self.usage,
            run_usage: self.run_usage,
            tool_calls: self.tool_calls,
            steps: self.steps,
            system_messages: copy_if(reads, || self.list.all_system_messages().cloned().collect()),
            message_list: &mut self.list,
            state,
            request_context: &mut self.cx,
            retry_count: self.retry_count,
            report,
        }
    }

    #[inline]
    fn apply(&mut self, outcome: OutputOutcome, id: &str) -> Result<bool, HookError> {
        if let OutputOutcome::Messages(ms) = outcome {
            self.replace(ms)
                .map_err(|e| HookError::invalid(id, Hook::OutputStep, e))?;
        }
        Ok(false)
    }

    fn with_input<R>(&self, f: impl FnOnce(&WorkflowInput<'_>) -> R) -> R {
        f(&WorkflowInput::Messages(&self.messages()))
    }

    fn map(&mut self, f: &MapFn, id: &str) -> Result<(), HookError> {
        let mapped = f(self.messages());
        self.replace(mapped)
            .map_err(|e| HookError::invalid(id, Hook::OutputStep, e))
    }

    fn judge(&self, outcome: OutputOutcome) -> Option<Verdict> {
        match outcome {
            OutputOutcome::Unchanged => None,
            OutputOutcome::Messages(m) => {
                Verdict::messages(&self.messages(), m, "the step's messages")
            }
        }
    }

    branches!(OutputStepCx; places: [step_ids, list], state: [changed], fixed: [step_number, text, finish_reason, usage, run_usage, tool_calls, steps, retry_count], list: list);
}

/// `process_tool_call`: a call the model made, before it runs. Each processor sees the call
/// as the ones before it left it (its arguments rewritten); the first that decides it
/// (answers, refuses, asks for approval) ends the hook's run for the call.
pub(crate) struct ToolCallCx<'r> {
    pub(crate) call: Place<'r, ToolCall>,
    pub(crate) tool: Option<&'r dyn Tool>,
    pub(crate) step_number: u32,
    pub(crate) steps: &'r [StepResult],
    pub(crate) list: &'r MessageList,
    pub(crate) cx: Place<'r, RequestContext>,
    pub(crate) retry_count: u32,
    /// Whether a processor rewrote the arguments.
    pub(crate) rewritten: bool,
    /// The decision, and the processor that made it.
    pub(crate) decided: Option<(ToolCallAction, String)>,
}

impl HookCx for ToolCallCx<'_> {
    #[inline]
    fn args<'a>(
        &'a mut self,
        state: &'a mut (dyn Any + Send),
        _reads: bool,
        report: &'a Reporter,
    ) -> ToolCallArgs<'a, dyn Any + Send> {
        ToolCallArgs {
            tool_call: &self.call,
            tool: self.tool,
            step_number: self.step_number,
            steps: self.steps,
            message_list: self.list,
            state,
            request_context: &mut self.cx,
            retry_count: self.retry_count,
            report,
        }
    }

    #[inline]
    fn apply(&mut self, action: ToolCallAction, id: &str) -> Result<bool, HookError> {
        match action {
            ToolCallAction::Continue => Ok(false),
            ToolCallAction::Rewrite(args) => {
                self.call.args = args;
                self.rewritten = true;
                Ok(false)
            }
            decided => {
                self.decided = Some((decided, id.to_owned()));
                Ok(true)
            }
        }
    }

    fn with_input<R>(&self, f: impl FnOnce(&WorkflowInput<'_>) -> R) -> R {
        f(&WorkflowInput::ToolCall(&self.call))
    }

    fn judge(&self, action: ToolCallAction) -> Option<Verdict> {
        let name = &self.call.tool_name;
        let (action, reason, mut details) = match action {
            ToolCallAction::Continue => return None,
            ToolCallAction::Rewrite(args) if args == self.call.args => return None,
            ToolCallAction::Rewrite(args) => (
                ShadowAction::Change,
                format!("would have rewritten the arguments of `{name}`"),
                json!({ "args": args }),
            ),
            ToolCallAction::Respond(answer) => (
                ShadowAction::Change,
                format!("would have answered `{name}` in the tool's place"),
                json!({ "answer": answer }),
            ),
            ToolCallAction::Refuse(why) => (
                ShadowAction::Block,
                format!("would have refused `{name}`: {why}"),
                json!({ "refusal": why }),
            ),
            ToolCallAction::RequireApproval { reason, .. } => (
                ShadowAction::Block,
                format!("would have asked for approval of `{name}`: {reason}"),
                json!({ "approval": reason }),
            ),
        };
        details["toolCallId"] = json!(self.call.tool_call_id);
        Some(Verdict {
            action,
            reason,
            details,
        })
    }

    branches!(ToolCallCx; places: [call], state: [rewritten, decided], fixed: [tool, step_number, steps, list, retry_count], list: none);
}

/// `process_tool_result`: a tool's call and result. Each processor sees the result as the
/// ones before it left it, and the model's copy of it when one was set.
pub(crate) struct ToolResultCx<'r> {
    pub(crate) tool_call: &'r ToolCall,
    pub(crate) result: Place<'r, Value>,
    /// What the model reads instead of the result, when a processor set it.
    pub(crate) model_output: Option<Value>,
    pub(crate) is_error: bool,
    pub(crate) cx: Place<'r, RequestContext>,
    /// Whether a processor changed the result or its model copy.
    pub(crate) changed: bool,
}

impl HookCx for ToolResultCx<'_> {
    #[inline]
    fn args<'a>(
        &'a mut self,
        state: &'a mut (dyn Any + Send),
        _reads: bool,
        report: &'a Reporter,
    ) -> ToolResultArgs<'a, dyn Any + Send> {
        ToolResultArgs {
            tool_call: self.tool_call,
            result: &self.result,
            model_output: self.model_output.as_ref(),
            is_error: self.is_error,
            state,
            request_context: &mut self.cx,
            report,
        }
    }

    #[inline]
    fn apply(&mut self, action: ToolResultAction, _id: &str) -> Result<bool, HookError> {
        match action {
            ToolResultAction::Keep => return Ok(false),
            ToolResultAction::Replace(result) => {
                *self.result = result;
                self.model_output = None;
            }
            ToolResultAction::ForModel(copy) => self.model_output = Some(copy),
            ToolResultAction::ReplaceWithCopy { result, for_model } => {
                *self.result = result;
                self.model_output = Some(for_model);
            }
        }
        self.changed = true;
        Ok(false)
    }

    fn with_input<R>(&self, f: impl FnOnce(&WorkflowInput<'_>) -> R) -> R {
        f(&WorkflowInput::ToolResult {
            call: self.tool_call,
            result: &self.result,
        })
    }

    fn judge(&self, action: ToolResultAction) -> Option<Verdict> {
        let (what, details) = match action {
            ToolResultAction::Keep => return None,
            ToolResultAction::Replace(v) if v == *self.result => return None,
            ToolResultAction::ForModel(v) if Some(&v) == self.model_output.as_ref() => {
                return None;
            }
            ToolResultAction::Replace(v) => ("the result", json!({ "result": v })),
            ToolResultAction::ForModel(v) => {
                ("the model's copy of the result", json!({ "forModel": v }))
            }
            ToolResultAction::ReplaceWithCopy { result, for_model } => (
                "the result and the model's copy",
                json!({ "result": result, "forModel": for_model }),
            ),
        };
        let name = &self.tool_call.tool_name;
        Verdict::change(format!("would have replaced {what} of `{name}`"), details)
    }

    branches!(ToolResultCx; places: [result], state: [model_output, changed], fixed: [tool_call, is_error], list: none);
}

/// `process_output_result`: the response and the run's summary. Returned messages are
/// reconciled with the response, and the summary's text follows.
pub(crate) struct OutputResultCx<'r> {
    pub(crate) summary: Place<'r, RunSummary>,
    pub(crate) list: Place<'r, MessageList>,
    pub(crate) cx: Place<'r, RequestContext>,
    pub(crate) retry_count: u32,
    /// Whether a processor returned messages.
    pub(crate) changed: bool,
}

impl OutputResultCx<'_> {
    /// Reconciles the response with `ms`; the summary's text follows.
    fn replace(&mut self, ms: Vec<Message>) -> Result<(), crate::message::ReconcileError> {
        let view = ids(self.list.response());
        self.list.reconcile(&view, ms, MessageSource::Response)?;
        self.summary.text = response_text(&self.list);
        self.changed = true;
        Ok(())
    }
}

impl HookCx for OutputResultCx<'_> {
    #[inline]
    fn args<'a>(
        &'a mut self,
        state: &'a mut (dyn Any + Send),
        reads: bool,
        report: &'a Reporter,
    ) -> OutputResultArgs<'a, dyn Any + Send> {
        OutputResultArgs {
            messages: copy_if(reads, || self.list.response().cloned().collect()),
            result: &self.summary,
            message_list: &mut self.list,
            state,
            request_context: &mut self.cx,
            retry_count: self.retry_count,
            report,
        }
    }

    #[inline]
    fn apply(&mut self, outcome: OutputOutcome, id: &str) -> Result<bool, HookError> {
        if let OutputOutcome::Messages(ms) = outcome {
            self.replace(ms)
                .map_err(|e| HookError::invalid(id, Hook::OutputResult, e))?;
        }
        Ok(false)
    }

    fn with_input<R>(&self, f: impl FnOnce(&WorkflowInput<'_>) -> R) -> R {
        let messages: Vec<Message> = self.list.response().cloned().collect();
        f(&WorkflowInput::Messages(&messages))
    }

    fn map(&mut self, f: &MapFn, id: &str) -> Result<(), HookError> {
        let mapped = f(self.list.response().cloned().collect());
        self.replace(mapped)
            .map_err(|e| HookError::invalid(id, Hook::OutputResult, e))
    }

    fn judge(&self, outcome: OutputOutcome) -> Option<Verdict> {
        match outcome {
            OutputOutcome::Unchanged => None,
            OutputOutcome::Messages(m) => {
                let given: Vec<Message> = self.list.response().cloned().collect();
                Verdict::messages(&given, m, "the response")
            }
        }
    }

    branches!(OutputResultCx; places: [summary, list], state: [changed], fixed: [retry_count], list: list);
}

/// `process_api_error`: the provider's error. The first processor that asks for a retry
/// ends the hook's run.
pub(crate) struct ApiErrorCx<'r> {
    pub(crate) error: &'r ApiError,
    pub(crate) step_number: u32,
    pub(crate) steps: &'r [StepResult],
    pub(crate) list: Place<'r, MessageList>,
    pub(crate) cx: Place<'r, RequestContext>,
    /// API-error retries of this step so far.
    pub(crate) retry_count: u32,
}

impl HookCx for ApiErrorCx<'_> {
    #[inline]
    fn args<'a>(
        &'a mut self,
        state: &'a mut (dyn Any + Send),
        _reads: bool,
        report: &'a Reporter,
    ) -> ApiErrorArgs<'a, dyn Any + Send> {
        ApiErrorArgs {
            error: self.error,
            step_number: self.step_number,
            steps: self.steps,
            message_list: &mut self.list,
            state,
            request_context: &mut self.cx,
            retry_count: self.retry_count,
            report,
        }
    }

    #[inline]
    fn apply(&mut self, action: ApiErrorAction, _id: &str) -> Result<bool, HookError> {
        Ok(action == ApiErrorAction::Retry)
    }

    fn with_input<R>(&self, f: impl FnOnce(&WorkflowInput<'_>) -> R) -> R {
        f(&WorkflowInput::Error(self.error))
    }

    fn judge(&self, action: ApiErrorAction) -> Option<Verdict> {
        match action {
            ApiErrorAction::Unhandled => None,
            ApiErrorAction::Retry => Verdict::change(
                format!("would have called the model again after: {}", self.error),
                json!({ "status": self.error.status }),
            ),
        }
    }

    branches!(ApiErrorCx; places: [list], state: [], fixed: [error, step_number, steps, retry_count], list: list);
}

/// The response text: the text of the response's assistant messages.
pub(crate) fn response_text(list: &MessageList) -> Text {
    concat_texts(
        list.response()
            .filter(|m| m.role == Role::Assistant)
            .flat_map(|m| &m.content.parts),
    )
}

/// What a hook's context borrows of the run.
struct Parts<'s> {
    list: &'s mut MessageList,
    cx: &'s mut RequestContext,
    steps: &'s [StepResult],
    retry_count: u32,
}

/// What the dispatcher borrows of the run.
struct Runner<'s> {
    states: &'s mut crate::processor::state::StateMap,
    report: &'s Reporter,
    slot: &'s mut crate::processor::future_slot::FutureSlot,
}

impl Runner<'_> {
    /// Runs a hook over `entries` on `cx`.
    async fn run<'p, H: HookCx>(
        self,
        entries: impl Iterator<Item = HookEntry<'p>>,
        cx: &mut H,
    ) -> Result<Option<&'p str>, Halt> {
        run(entries, cx, self.states, self.report, self.slot).await
    }
}

impl Scope {
    /// The run, as hook contexts and the dispatcher borrow it.
    fn split(&mut self) -> (Parts<'_>, Runner<'_>) {
        let parts = Parts {
            list: &mut self.list,
            cx: &mut self.cx,
            steps: &self.steps,
            retry_count: self.retry_count,
        };
        let runner = Runner {
            states: &mut self.states,
            report: &self.report,
            slot: &mut self.hooks,
        };
        (parts, runner)
    }
}

/// `process_input` over `chain`.
pub(crate) async fn input(chain: &Chain<'_>, s: &mut Scope) -> Result<(), Halt> {
    let (p, runner) = s.split();
    let mut cx = InputCx {
        list: Place::Run(p.list),
        cx: Place::Run(p.cx),
        retry_count: 0,
        changed: false,
    };
    runner.run(chain.with(Hook::Input), &mut cx).await.map(drop)
}

/// `process_input_step` over `chain`, on the step's settings `config`.
pub(crate) async fn input_step(
    chain: &Chain<'_>,
    s: &mut Scope,
    step_number: u32,
    config: &mut StepConfig,
) -> Result<(), Halt> {
    let (p, runner) = s.split();
    let mut cx = InputStepCx {
        step_number,
        steps: p.steps,
        config: Place::Run(config),
        list: Place::Run(p.list),
        cx: Place::Run(p.cx),
        retry_count: p.retry_count,
        named: Named::default(),
    };
    runner
        .run(chain.with(Hook::InputStep), &mut cx)
        .await
        .map(drop)
}

/// `process_llm_request` over `chain`, on `request`: the response that answers the call, if
/// a processor returned one.
pub(crate) async fn llm_request(
    chain: &Chain<'_>,
    s: &mut Scope,
    step_number: u32,
    request: &mut ModelRequest,
    model: &dyn LanguageModel,
) -> Result<Option<LlmResponse>, Halt> {
    let (p, runner) = s.split();
    let mut cx = LlmRequestCx {
        step_number,
        request: Place::Run(request),
        model,
        cx: Place::Run(p.cx),
        answer: None,
        prompt_changed: false,
        request_changed: false,
    };
    runner.run(chain.with(Hook::LlmRequest), &mut cx).await?;
    Ok(cx.answer)
}

/// What `process_llm_response` sees of a step.
pub(crate) struct Response<'a> {
    pub(crate) step_number: u32,
    pub(crate) request: &'a ModelRequest,
    pub(crate) response: &'a LlmResponse,
    pub(crate) delivered: &'a LlmResponse,
    pub(crate) from_cache: bool,
}

/// `process_llm_response` over `chain`.
pub(crate) async fn llm_response(
    chain: &Chain<'_>,
    s: &mut Scope,
    r: Response<'_>,
) -> Result<(), Halt> {
    let (p, runner) = s.split();
    let mut cx = LlmResponseCx {
        step_number: r.step_number,
        request: r.request,
        response: r.response,
        delivered: r.delivered,
        from_cache: r.from_cache,
        cx: Place::Run(p.cx),
    };
    runner
        .run(chain.with(Hook::LlmResponse), &mut cx)
        .await
        .map(drop)
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

/// `process_output_step` over `chain`, on the step's messages (`step_ids`, which follow).
pub(crate) async fn output_step(
    chain: &Chain<'_>,
    s: &mut Scope,
    step: Step<'_>,
    step_ids: &mut Vec<String>,
) -> Result<(), Halt> {
    let (p, runner) = s.split();
    let mut cx = OutputStepCx {
        step_number: step.step_number,
        text: step.text,
        finish_reason: step.finish_reason,
        usage: step.usage,
        run_usage: step.run_usage,
        tool_calls: step.tool_calls,
        steps: p.steps,
        step_ids: Place::Run(step_ids),
        list: Place::Run(p.list),
        cx: Place::Run(p.cx),
        retry_count: p.retry_count,
        changed: false,
    };
    runner
        .run(chain.with(Hook::OutputStep), &mut cx)
        .await
        .map(drop)
}

/// What the `process_tool_call` processors decided for a call.
pub(crate) struct ToolCallDecision {
    /// Whether the arguments were rewritten (the call now holds the new ones).
    pub(crate) rewritten: bool,
    /// The deciding action (never `Continue` or `Rewrite`) and the processor that returned
    /// it; `None`: the call runs.
    pub(crate) decided: Option<(ToolCallAction, String)>,
}

/// `process_tool_call` over `chain`, on `call` (rewritten in place).
pub(crate) async fn tool_call(
    chain: &Chain<'_>,
    s: &mut Scope,
    call: &mut ToolCall,
    tool: Option<&dyn Tool>,
    step_number: u32,
) -> Result<ToolCallDecision, Halt> {
    let (p, runner) = s.split();
    let mut cx = ToolCallCx {
        call: Place::Run(call),
        tool,
        step_number,
        steps: p.steps,
        list: p.list,
        cx: Place::Run(p.cx),
        retry_count: p.retry_count,
        rewritten: false,
        decided: None,
    };
    runner.run(chain.with(Hook::ToolCall), &mut cx).await?;
    Ok(ToolCallDecision {
        rewritten: cx.rewritten,
        decided: cx.decided,
    })
}

/// `process_tool_result` over `chain`: the result as the processors left it, and the copy
/// the model reads when one was set.
pub(crate) async fn tool_result(
    chain: &Chain<'_>,
    s: &mut Scope,
    tool_call: &ToolCall,
    result: &mut Value,
    is_error: bool,
) -> Result<Option<Value>, Halt> {
    let (p, runner) = s.split();
    let mut cx = ToolResultCx {
        tool_call,
        result: Place::Run(result),
        model_output: None,
        is_error,
        cx: Place::Run(p.cx),
        changed: false,
    };
    runner.run(chain.with(Hook::ToolResult), &mut cx).await?;
    Ok(cx.model_output)
}

/// `process_output_result` over `chain`, on the response and `summary`.
pub(crate) async fn output_result(
    chain: &Chain<'_>,
    s: &mut Scope,
    summary: &mut RunSummary,
) -> Result<(), Halt> {
    let (p, runner) = s.split();
    let mut cx = OutputResultCx {
        summary: Place::Run(summary),
        list: Place::Run(p.list),
        cx: Place::Run(p.cx),
        retry_count: p.retry_count,
        changed: false,
    };
    runner
        .run(chain.with(Hook::OutputResult), &mut cx)
        .await
        .map(drop)
}

/// `process_api_error` over the input, output, then error processors: the id of the first
/// that asks for a retry.
pub(crate) async fn api_error(
    chains: [&Chain<'_>; 3],
    s: &mut Scope,
    error: &ApiError,
    step_number: u32,
    retry_count: u32,
) -> Result<Option<String>, Halt> {
    let (p, runner) = s.split();
    let mut cx = ApiErrorCx {
        error,
        step_number,
        steps: p.steps,
        list: Place::Run(p.list),
        cx: Place::Run(p.cx),
        retry_count,
    };
    let entries = chains.into_iter().flat_map(|c| c.with(Hook::ApiError));
    let asker = runner.run(entries, &mut cx).await?;
    Ok(asker.map(str::to_owned))
}
