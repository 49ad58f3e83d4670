//! Processors composed as a workflow: sequence, parallel branches with one selected, condition
//! branches, and maps. A workflow is itself a processor.

use super::state::StateMap;
use super::*;
use crate::chunk::Chunk;
use crate::message::{Message, MessageList};
use crate::tripwire::ProcessorError;
use std::any::Any;
use std::sync::Arc;

/// What a branch condition sees: the messages of a message hook, or the chunk of a stream hook.
#[derive(Debug, Clone, Copy)]
pub enum WorkflowInput<'a> {
    /// The messages the hook works on (input, step or response messages).
    Messages(&'a [Message]),
    /// The streamed chunk.
    Chunk(&'a Chunk),
}

type Condition = Arc<dyn Fn(&WorkflowInput<'_>) -> bool + Send + Sync>;
type MapFn = Arc<dyn Fn(Vec<Message>) -> Vec<Message> + Send + Sync>;

#[derive(Clone)]
enum Step {
    Then(ProcessorRef),
    Parallel {
        branches: Vec<ProcessorRef>,
        select: usize,
    },
    Branch(Vec<(Condition, ProcessorRef)>),
    Map(MapFn),
}

/// Processors composed into one processor.
///
/// Steps run in order. [`then`](Workflow::then) runs a processor;
/// [`parallel`](Workflow::parallel) runs several on the same input (each on its own copy of
/// the message list) and keeps the output of the selected one; [`branch`](Workflow::branch)
/// runs the first processor whose condition holds; [`map`](Workflow::map) transforms the
/// messages of message hooks. A trip wire inside bubbles out with the inner processor's id,
/// retry flag and metadata. Inner processors keep their own state for the request.
///
/// A workflow runs `process_input`, `process_output_stream`, `process_output_step` and
/// `process_output_result` of its processors; inner stream processors that keep a stream
/// history get theirs.
///
/// ```
/// use processors_runtime::prelude::*;
/// use processors_runtime::processor::{Workflow, WorkflowInput};
/// # struct Moderate; impl Processor for Moderate { type State = (); const HOOKS: Hooks = Hooks::INPUT; fn id(&self) -> &str { "moderate" } }
/// # struct Translate; impl Processor for Translate { type State = (); const HOOKS: Hooks = Hooks::INPUT; fn id(&self) -> &str { "translate" } }
/// # struct Summarise; impl Processor for Summarise { type State = (); const HOOKS: Hooks = Hooks::INPUT; fn id(&self) -> &str { "summarise" } }
/// let guard = Workflow::new("input-guard")
///     .then(Moderate)
///     .branch(
///         |input| matches!(input, WorkflowInput::Messages(m) if m.len() > 10),
///         Summarise,
///     )
///     .parallel([boxed(Translate), boxed(Moderate)], 0);
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([]))
///     .input(guard)
///     .build();
/// assert!(agent.is_ok());
/// ```
#[derive(Clone)]
pub struct Workflow {
    id: String,
    steps: Vec<Step>,
}

impl std::fmt::Debug for Workflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workflow")
            .field("id", &self.id)
            .field("steps", &self.steps.len())
            .finish()
    }
}

/// The state of a workflow's processors for one request.
#[derive(Default)]
pub struct WorkflowState {
    states: StateMap,
    /// Stream histories of the inner processors that keep one, by processor.
    histories: Vec<(usize, Vec<Chunk>)>,
}

impl Workflow {
    /// An empty workflow with this id.
    pub fn new(id: impl Into<String>) -> Self {
        Workflow {
            id: id.into(),
            steps: Vec::new(),
        }
    }

    /// Runs `p` next.
    pub fn then(mut self, p: impl Processor) -> Self {
        self.steps.push(Step::Then(boxed(p)));
        self
    }

    /// Runs every branch on the same input and keeps the output of `branches[select]`; an
    /// abort in any branch stops the workflow. An out-of-range `select` keeps the last branch.
    pub fn parallel(
        mut self,
        branches: impl IntoIterator<Item = ProcessorRef>,
        select: usize,
    ) -> Self {
        let branches: Vec<_> = branches.into_iter().collect();
        if !branches.is_empty() {
            let select = select.min(branches.len() - 1);
            self.steps.push(Step::Parallel { branches, select });
        }
        self
    }

    /// Runs `p` when `condition` holds; consecutive `branch` calls form one branch step where
    /// the first matching condition wins.
    pub fn branch(
        mut self,
        condition: impl Fn(&WorkflowInput<'_>) -> bool + Send + Sync + 'static,
        p: impl Processor,
    ) -> Self {
        let arm: (Condition, ProcessorRef) = (Arc::new(condition), boxed(p));
        match self.steps.last_mut() {
            Some(Step::Branch(arms)) => arms.push(arm),
            _ => self.steps.push(Step::Branch(vec![arm])),
        }
        self
    }

    /// Transforms the messages of message hooks (chunks pass unchanged).
    pub fn map(mut self, f: impl Fn(Vec<Message>) -> Vec<Message> + Send + Sync + 'static) -> Self {
        self.steps.push(Step::Map(Arc::new(f)));
        self
    }

    fn processors(&self) -> impl Iterator<Item = &ProcessorRef> {
        self.steps
            .iter()
            .flat_map(|s| -> Box<dyn Iterator<Item = &ProcessorRef> + '_> {
                match s {
                    Step::Then(p) => Box::new(std::iter::once(p)),
                    Step::Parallel { branches, .. } => Box::new(branches.iter()),
                    Step::Branch(arms) => Box::new(arms.iter().map(|(_, p)| p)),
                    Step::Map(_) => Box::new(std::iter::empty()),
                }
            })
    }
}

/// The index of an inner processor's state slot.
fn slot_index(states: &mut StateMap, p: &dyn DynProcessor) -> Result<usize, ProcessorError> {
    states.slot_for(p).map_err(|c| {
        ProcessorError::msg(format!(
            "processors in the workflow share the id `{}` but not a state type (`{}` and `{}`)",
            c.id, c.first, c.second
        ))
    })
}

/// The state slot of an inner processor.
fn slot<'s>(
    state: &'s mut WorkflowState,
    p: &dyn DynProcessor,
) -> Result<&'s mut (dyn Any + Send), ProcessorError> {
    let i = slot_index(&mut state.states, p)?;
    Ok(state.states.get_mut(i))
}

/// Marks an inner abort with the inner processor's id.
fn bubble(p: &dyn DynProcessor, e: ProcessorError) -> ProcessorError {
    match e {
        ProcessorError::Abort(a) => ProcessorError::Abort(a.raised_by(p.dyn_id())),
        ProcessorError::Warning(a) => ProcessorError::Warning(a.raised_by(p.dyn_id())),
        other => other,
    }
}

/// The message hooks a workflow runs, as one shape: messages in, messages out.
#[derive(Clone, Copy)]
enum MessageHook {
    Input,
    OutputStep,
    OutputResult,
}

impl Workflow {
    #[allow(clippy::too_many_arguments)]
    async fn run_message_hook(
        &self,
        hook: MessageHook,
        mut messages: Vec<Message>,
        system: &mut Vec<Message>,
        list: &mut MessageList,
        state: &mut WorkflowState,
        cx: &crate::context::RequestContext,
        retry_count: u32,
        extra: &MessageExtra<'_>,
    ) -> Result<Option<Vec<Message>>, ProcessorError> {
        // Whether a step returned messages: if none did, the hook returns "unchanged", so
        // that direct edits of the list by inner processors stand.
        let mut changed = false;
        for step in &self.steps {
            match step {
                Step::Then(_) | Step::Branch(_) => {
                    let chosen = match step {
                        Step::Then(p) => Some(p),
                        Step::Branch(arms) => {
                            let input = WorkflowInput::Messages(&messages);
                            arms.iter().find(|(c, _)| c(&input)).map(|(_, p)| p)
                        }
                        _ => None,
                    };
                    if let Some(p) = chosen {
                        let out = call_message(
                            p.as_ref(),
                            hook,
                            &messages,
                            system,
                            list,
                            state,
                            cx,
                            retry_count,
                            extra,
                        )
                        .await?;
                        if let Some(out) = out {
                            messages = out;
                            changed = true;
                        }
                    }
                }
                Step::Parallel { branches, select } => {
                    let mut chosen = None;
                    for (i, p) in branches.iter().enumerate() {
                        let mut branch_list = list.clone();
                        let mut branch_system = system.clone();
                        let out = call_message(
                            p.as_ref(),
                            hook,
                            &messages,
                            &mut branch_system,
                            &mut branch_list,
                            state,
                            cx,
                            retry_count,
                            extra,
                        )
                        .await?;
                        if i == *select {
                            chosen = Some((out, branch_system, branch_list));
                        }
                    }
                    if let Some((out, s, l)) = chosen {
                        if let Some(out) = out {
                            messages = out;
                            changed = true;
                        }
                        *system = s;
                        *list = l;
                    }
                }
                Step::Map(f) => {
                    messages = f(messages);
                    changed = true;
                }
            }
        }
        Ok(changed.then_some(messages))
    }
}

/// Step and result details the output hooks pass on to inner processors.
struct MessageExtra<'a> {
    step_number: u32,
    text: &'a str,
    finish_reason: crate::chunk::FinishReason,
    tool_calls: &'a [crate::agent::ToolCallInfo],
    steps: &'a [crate::agent::StepResult],
    summary: Option<&'a crate::agent::RunSummary>,
}

#[allow(clippy::too_many_arguments)]
async fn call_message(
    p: &dyn DynProcessor,
    hook: MessageHook,
    messages: &[Message],
    system: &mut Vec<Message>,
    list: &mut MessageList,
    state: &mut WorkflowState,
    cx: &crate::context::RequestContext,
    retry_count: u32,
    extra: &MessageExtra<'_>,
) -> Result<Option<Vec<Message>>, ProcessorError> {
    let hooks = p.dyn_hooks();
    let s = slot(state, p)?;
    match hook {
        MessageHook::Input if hooks.contains(Hook::Input) => {
            let args = InputArgs {
                messages: messages.to_vec(),
                system_messages: system.clone(),
                message_list: list,
                state: s,
                request_context: cx,
                retry_count,
            };
            match p.dyn_process_input(args).await.map_err(|e| bubble(p, e))? {
                InputOutcome::Unchanged => Ok(None),
                InputOutcome::Messages(m) => Ok(Some(m)),
                InputOutcome::MessagesAndSystem {
                    messages,
                    system: sys,
                } => {
                    *system = sys;
                    Ok(Some(messages))
                }
            }
        }
        MessageHook::OutputStep if hooks.contains(Hook::OutputStep) => {
            let args = OutputStepArgs {
                step_number: extra.step_number,
                messages: messages.to_vec(),
                text: extra.text,
                finish_reason: extra.finish_reason,
                tool_calls: extra.tool_calls,
                steps: extra.steps,
                system_messages: system.clone(),
                message_list: list,
                state: s,
                request_context: cx,
                retry_count,
            };
            match p
                .dyn_process_output_step(args)
                .await
                .map_err(|e| bubble(p, e))?
            {
                OutputOutcome::Unchanged => Ok(None),
                OutputOutcome::Messages(m) => Ok(Some(m)),
            }
        }
        MessageHook::OutputResult if hooks.contains(Hook::OutputResult) => {
            let Some(summary) = extra.summary else {
                return Ok(None);
            };
            let args = OutputResultArgs {
                messages: messages.to_vec(),
                result: summary,
                message_list: list,
                state: s,
                request_context: cx,
                retry_count,
            };
            match p
                .dyn_process_output_result(args)
                .await
                .map_err(|e| bubble(p, e))?
            {
                OutputOutcome::Unchanged => Ok(None),
                OutputOutcome::Messages(m) => Ok(Some(m)),
            }
        }
        _ => Ok(None),
    }
}

impl Workflow {
    async fn run_stream(
        &self,
        chunk: &Chunk,
        state: &mut WorkflowState,
        list: &MessageList,
        cx: &crate::context::RequestContext,
        retry_count: u32,
        writer: &mut DataWriter<'_>,
    ) -> Result<StreamAction, ProcessorError> {
        let mut current: Option<Chunk> = None;
        for step in &self.steps {
            let input = current.as_ref().unwrap_or(chunk);
            let action = match step {
                Step::Then(p) => {
                    call_stream(p.as_ref(), input, state, list, cx, retry_count, writer).await?
                }
                Step::Branch(arms) => {
                    let wi = WorkflowInput::Chunk(input);
                    match arms.iter().find(|(c, _)| c(&wi)) {
                        Some((_, p)) => {
                            call_stream(p.as_ref(), input, state, list, cx, retry_count, writer)
                                .await?
                        }
                        None => StreamAction::Pass,
                    }
                }
                Step::Parallel { branches, select } => {
                    let mut chosen = StreamAction::Pass;
                    for (i, p) in branches.iter().enumerate() {
                        let a =
                            call_stream(p.as_ref(), input, state, list, cx, retry_count, writer)
                                .await?;
                        if i == *select {
                            chosen = a;
                        }
                    }
                    chosen
                }
                Step::Map(_) => StreamAction::Pass,
            };
            match action {
                StreamAction::Pass => {}
                StreamAction::Replace(c) => current = Some(c),
                StreamAction::Drop => return Ok(StreamAction::Drop),
            }
        }
        Ok(current.map_or(StreamAction::Pass, StreamAction::Replace))
    }
}

async fn call_stream(
    p: &dyn DynProcessor,
    chunk: &Chunk,
    state: &mut WorkflowState,
    list: &MessageList,
    cx: &crate::context::RequestContext,
    retry_count: u32,
    writer: &mut DataWriter<'_>,
) -> Result<StreamAction, ProcessorError> {
    if !p.dyn_hooks().contains(Hook::OutputStream)
        || (chunk.is_data() && !p.dyn_process_data_parts())
    {
        return Ok(StreamAction::Pass);
    }
    let key = std::ptr::from_ref(p).cast::<()>() as usize;
    let history: &[Chunk] = if p.dyn_keeps_stream_history() {
        let i = match state.histories.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                state.histories.push((key, Vec::new()));
                state.histories.len() - 1
            }
        };
        let h = &mut state.histories[i].1;
        h.push(chunk.clone());
        h
    } else {
        &[]
    };
    let i = slot_index(&mut state.states, p)?;
    let args = OutputStreamArgs {
        chunk,
        stream_history: history,
        state: state.states.get_mut(i),
        message_list: list,
        request_context: cx,
        retry_count,
        writer: writer.reborrow(),
    };
    p.dyn_process_output_stream(args)
        .await
        .map_err(|e| bubble(p, e))
}

const NO_STEP: MessageExtra<'static> = MessageExtra {
    step_number: 0,
    text: "",
    finish_reason: crate::chunk::FinishReason::Stop,
    tool_calls: &[],
    steps: &[],
    summary: None,
};

impl Processor for Workflow {
    type State = WorkflowState;
    const HOOKS: Hooks = Hooks::INPUT
        .with(Hooks::OUTPUT_STREAM)
        .with(Hooks::OUTPUT_STEP)
        .with(Hooks::OUTPUT_RESULT);

    fn id(&self) -> &str {
        &self.id
    }

    fn process_data_parts(&self) -> bool {
        self.processors().any(|p| p.dyn_process_data_parts())
    }

    async fn process_input(
        &self,
        args: InputArgs<'_, WorkflowState>,
    ) -> Result<InputOutcome, ProcessorError> {
        let mut system = args.system_messages;
        let messages = self
            .run_message_hook(
                MessageHook::Input,
                args.messages,
                &mut system,
                args.message_list,
                args.state,
                args.request_context,
                args.retry_count,
                &NO_STEP,
            )
            .await?;
        Ok(match messages {
            Some(messages) => InputOutcome::MessagesAndSystem { messages, system },
            None => InputOutcome::Unchanged,
        })
    }

    async fn process_output_stream(
        &self,
        mut args: OutputStreamArgs<'_, WorkflowState>,
    ) -> Result<StreamAction, ProcessorError> {
        self.run_stream(
            args.chunk,
            args.state,
            args.message_list,
            args.request_context,
            args.retry_count,
            &mut args.writer,
        )
        .await
    }

    async fn process_output_step(
        &self,
        args: OutputStepArgs<'_, WorkflowState>,
    ) -> Result<OutputOutcome, ProcessorError> {
        let extra = MessageExtra {
            step_number: args.step_number,
            text: args.text,
            finish_reason: args.finish_reason,
            tool_calls: args.tool_calls,
            steps: args.steps,
            summary: None,
        };
        let mut system = args.system_messages;
        let messages = self
            .run_message_hook(
                MessageHook::OutputStep,
                args.messages,
                &mut system,
                args.message_list,
                args.state,
                args.request_context,
                args.retry_count,
                &extra,
            )
            .await?;
        Ok(messages.map_or(OutputOutcome::Unchanged, OutputOutcome::Messages))
    }

    async fn process_output_result(
        &self,
        args: OutputResultArgs<'_, WorkflowState>,
    ) -> Result<OutputOutcome, ProcessorError> {
        let extra = MessageExtra {
            summary: Some(args.result),
            ..NO_STEP
        };
        let mut system = Vec::new();
        let messages = self
            .run_message_hook(
                MessageHook::OutputResult,
                args.messages,
                &mut system,
                args.message_list,
                args.state,
                args.request_context,
                args.retry_count,
                &extra,
            )
            .await?;
        Ok(messages.map_or(OutputOutcome::Unchanged, OutputOutcome::Messages))
    }
}

#[diagnostic::do_not_recommend]
impl InputProcessor for Workflow {}
#[diagnostic::do_not_recommend]
impl OutputProcessor for Workflow {}
