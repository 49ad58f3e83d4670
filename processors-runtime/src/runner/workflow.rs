//! Processors composed as a workflow: sequence, parallel branches with one selected, condition
//! branches, and maps. A workflow is itself a processor, and runs the processors inside it
//! through the runner's calls: the same guards, reports and stream chain as a list.

use super::call;
use crate::chunk::{Chunk, Usage};
use crate::context::RequestContext;
use crate::message::ToolCall;
use crate::message::{Message, MessageList};
use crate::processor::state::StateMap;
use crate::processor::{
    Abort, Flow, Hook, Hooks, InputArgs, InputOutcome, InputProcessor, OutputOutcome,
    OutputProcessor, OutputResultArgs, OutputStepArgs, OutputStreamArgs, Processor, ProcessorError,
    ProcessorRef, Reporter, StreamAction, StreamCx, boxed,
};
use crate::step::{RunSummary, StepResult};
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

/// A step; processors are named by their position in [`Workflow::processors`].
#[derive(Clone)]
enum Step {
    Then(usize),
    Parallel { branches: Vec<usize>, select: usize },
    Branch(Vec<(Condition, usize)>),
    Map(MapFn),
}

/// Processors composed into one processor.
///
/// Steps run in order. [`then`](Workflow::then) runs a processor;
/// [`parallel`](Workflow::parallel) runs several on the same input (each on its own copy of
/// the message list, or of the chunk) and keeps the output of the selected one;
/// [`branch`](Workflow::branch) runs the first processor whose condition holds;
/// [`map`](Workflow::map) transforms the messages of message hooks. A trip wire inside bubbles
/// out with the inner processor's id, retry flag and metadata; a warning inside is reported
/// with the inner processor's id and the workflow goes on. Inner processors keep their own
/// state (and stream history, when they keep one) for the request.
///
/// A workflow runs `process_input`, `process_output_stream`, `process_output_step` and
/// `process_output_result` of its processors.
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
    processors: Vec<ProcessorRef>,
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
    /// The state slot of each processor, by position; empty until the first hook call.
    slots: Vec<usize>,
    /// The stream history of each processor, by position.
    histories: Vec<Vec<Chunk>>,
}

impl Workflow {
    /// An empty workflow with this id.
    pub fn new(id: impl Into<String>) -> Self {
        Workflow {
            id: id.into(),
            processors: Vec::new(),
            steps: Vec::new(),
        }
    }

    fn add(&mut self, p: ProcessorRef) -> usize {
        self.processors.push(p);
        self.processors.len() - 1
    }

    /// Runs `p` next.
    pub fn then(mut self, p: impl Processor) -> Self {
        let i = self.add(boxed(p));
        self.steps.push(Step::Then(i));
        self
    }

    /// Runs every branch on the same input and keeps the output of `branches[select]`; an
    /// abort in any branch stops the workflow. An out-of-range `select` keeps the last branch.
    pub fn parallel(
        mut self,
        branches: impl IntoIterator<Item = ProcessorRef>,
        select: usize,
    ) -> Self {
        let branches: Vec<usize> = branches.into_iter().map(|p| self.add(p)).collect();
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
        let arm: (Condition, usize) = (Arc::new(condition), self.add(boxed(p)));
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

    /// Binds every processor to its state slot, on the first hook call of a request.
    fn bind(&self, state: &mut WorkflowState) -> Result<(), ProcessorError> {
        if state.slots.len() == self.processors.len() {
            return Ok(());
        }
        state.slots = self
            .processors
            .iter()
            .map(|p| {
                state.states.slot_for(&**p).map_err(|c| {
                    ProcessorError::msg(format!(
                        "processors in the workflow share the id `{}` but not a state type (`{}` and `{}`)",
                        c.id, c.first, c.second
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        state.histories = vec![Vec::new(); self.processors.len()];
        Ok(())
    }
}

/// The message hooks a workflow runs, as one shape: messages in, messages out.
#[derive(Clone, Copy)]
enum MessageHook {
    Input,
    OutputStep,
    OutputResult,
}

/// What the message hooks of inner processors get besides the messages.
struct MessageCx<'a, 'r> {
    hook: MessageHook,
    system: &'a mut Vec<Message>,
    list: &'a mut MessageList,
    state: &'a mut WorkflowState,
    cx: &'a mut RequestContext,
    report: &'r Reporter,
    retry_count: u32,
    extra: &'a MessageExtra<'r>,
}

/// Step and result details the output hooks pass on to inner processors.
struct MessageExtra<'a> {
    step_number: u32,
    text: &'a str,
    finish_reason: crate::chunk::FinishReason,
    usage: Usage,
    run_usage: Usage,
    tool_calls: &'a [ToolCall],
    steps: &'a [StepResult],
    summary: Option<&'a RunSummary>,
}

const NO_STEP: MessageExtra<'static> = MessageExtra {
    step_number: 0,
    text: "",
    finish_reason: crate::chunk::FinishReason::Stop,
    usage: Usage {
        input_tokens: 0,
        output_tokens: 0,
        total_tokens: 0,
    },
    run_usage: Usage {
        input_tokens: 0,
        output_tokens: 0,
        total_tokens: 0,
    },
    tool_calls: &[],
    steps: &[],
    summary: None,
};

impl Workflow {
    /// Runs a message hook through the steps. `None` when no step returned messages, so that
    /// direct edits of the list by inner processors stand.
    async fn run_messages(
        &self,
        mut messages: Vec<Message>,
        m: &mut MessageCx<'_, '_>,
    ) -> Result<Option<Vec<Message>>, ProcessorError> {
        self.bind(m.state)?;
        let mut changed = false;
        for step in &self.steps {
            let out = match step {
                Step::Then(i) => self.call_messages(*i, &messages, m).await?,
                Step::Branch(arms) => {
                    let input = WorkflowInput::Messages(&messages);
                    match arms.iter().find(|(c, _)| c(&input)) {
                        Some((_, i)) => self.call_messages(*i, &messages, m).await?,
                        None => None,
                    }
                }
                Step::Parallel { branches, select } => {
                    let mut chosen = None;
                    for (k, &i) in branches.iter().enumerate() {
                        let mut list = m.list.clone();
                        let mut system = m.system.clone();
                        let mut branch = MessageCx {
                            hook: m.hook,
                            system: &mut system,
                            list: &mut list,
                            state: &mut *m.state,
                            cx: &mut *m.cx,
                            report: m.report,
                            retry_count: m.retry_count,
                            extra: m.extra,
                        };
                        let out = self.call_messages(i, &messages, &mut branch).await?;
                        if k == *select {
                            chosen = Some((out, system, list));
                        }
                    }
                    chosen.and_then(|(out, system, list)| {
                        *m.system = system;
                        *m.list = list;
                        out
                    })
                }
                Step::Map(f) => Some(f(std::mem::take(&mut messages))),
            };
            if let Some(out) = out {
                messages = out;
                changed = true;
            }
        }
        Ok(changed.then_some(messages))
    }

    /// Calls the message hook of the processor at `i`, if it has it.
    async fn call_messages(
        &self,
        i: usize,
        messages: &[Message],
        m: &mut MessageCx<'_, '_>,
    ) -> Result<Option<Vec<Message>>, ProcessorError> {
        let (Some(p), Some(&slot)) = (self.processors.get(i), m.state.slots.get(i)) else {
            return Ok(None);
        };
        let (id, hooks, state) = (p.dyn_id(), p.dyn_hooks(), m.state.states.get_mut(slot));
        let (report, extra) = (m.report, m.extra);
        match m.hook {
            MessageHook::Input if hooks.contains(Hook::Input) => {
                let args = InputArgs {
                    messages: messages.to_vec(),
                    system_messages: m.system.clone(),
                    message_list: &mut *m.list,
                    state,
                    request_context: &mut *m.cx,
                    retry_count: m.retry_count,
                    report,
                };
                Ok(
                    match call(id, Hook::Input, report, p.dyn_process_input(args)).await? {
                        None | Some(InputOutcome::Unchanged) => None,
                        Some(InputOutcome::Messages(ms)) => Some(ms),
                        Some(InputOutcome::MessagesAndSystem { messages, system }) => {
                            *m.system = system;
                            Some(messages)
                        }
                    },
                )
            }
            MessageHook::OutputStep if hooks.contains(Hook::OutputStep) => {
                let args = OutputStepArgs {
                    step_number: extra.step_number,
                    messages: messages.to_vec(),
                    text: extra.text,
                    finish_reason: extra.finish_reason,
                    usage: extra.usage,
                    run_usage: extra.run_usage,
                    tool_calls: extra.tool_calls,
                    steps: extra.steps,
                    system_messages: m.system.clone(),
                    message_list: &mut *m.list,
                    state,
                    request_context: &mut *m.cx,
                    retry_count: m.retry_count,
                    report,
                };
                let out = call(
                    id,
                    Hook::OutputStep,
                    report,
                    p.dyn_process_output_step(args),
                );
                Ok(changed_messages(out.await?))
            }
            MessageHook::OutputResult if hooks.contains(Hook::OutputResult) => {
                let Some(summary) = extra.summary else {
                    return Ok(None);
                };
                let args = OutputResultArgs {
                    messages: messages.to_vec(),
                    result: summary,
                    message_list: &mut *m.list,
                    state,
                    request_context: &mut *m.cx,
                    retry_count: m.retry_count,
                    report,
                };
                let out = call(
                    id,
                    Hook::OutputResult,
                    report,
                    p.dyn_process_output_result(args),
                );
                Ok(changed_messages(out.await?))
            }
            _ => Ok(None),
        }
    }

    /// Runs a chunk through the steps, with the stream chain's rules for each processor.
    async fn run_stream(
        &self,
        args: OutputStreamArgs<'_, WorkflowState>,
    ) -> Result<StreamAction, ProcessorError> {
        self.bind(args.state)?;
        let WorkflowState {
            states,
            slots,
            histories,
        } = args.state;
        let mut cx = StreamCx {
            states,
            slots,
            histories,
            message_list: args.message_list,
            request_context: args.request_context,
            retry_count: args.retry_count,
            // Chunks written inside go to the chain around the workflow, after it.
            written: args.writer.buf,
            pending: None,
            report: args.report,
            current: 0,
        };
        let mut chunk = args.chunk.clone();
        for step in &self.steps {
            let flow = match step {
                Step::Then(i) => self.stream_at(*i, &mut cx, &mut chunk).await,
                Step::Branch(arms) => {
                    let input = WorkflowInput::Chunk(&chunk);
                    match arms.iter().find(|(c, _)| c(&input)) {
                        Some((_, i)) => self.stream_at(*i, &mut cx, &mut chunk).await,
                        None => Flow::Continue,
                    }
                }
                Step::Parallel { branches, select } => {
                    let mut chosen = (Flow::Continue, None);
                    for (k, &i) in branches.iter().enumerate() {
                        let mut copy = chunk.clone();
                        let flow = self.stream_at(i, &mut cx, &mut copy).await;
                        if matches!(flow, Flow::Abort(_)) {
                            chosen = (flow, None);
                            break;
                        }
                        if k == *select {
                            chosen = (flow, Some(copy));
                        }
                    }
                    if let (_, Some(copy)) = &mut chosen {
                        chunk = std::mem::replace(copy, chunk.clone());
                    }
                    chosen.0
                }
                Step::Map(_) => Flow::Continue,
            };
            match flow {
                Flow::Continue => {}
                Flow::Drop => return Ok(StreamAction::Drop),
                Flow::Abort(tw) => return Err(Abort::from(tw).into()),
                Flow::Emit => {
                    let id = self.processors.get(cx.current).map_or("?", |p| p.dyn_id());
                    return Err(ProcessorError::msg(format!(
                        "processor `{id}` inside the workflow failed on this chunk"
                    )));
                }
            }
        }
        Ok(StreamAction::Replace(chunk))
    }

    /// Runs the processor at `i` on a chunk.
    async fn stream_at(&self, i: usize, cx: &mut StreamCx<'_>, chunk: &mut Chunk) -> Flow {
        match self.processors.get(i) {
            Some(p) => crate::processor::stream_one(&**p, cx, chunk, i).await,
            None => Flow::Continue,
        }
    }
}

/// The messages a step's output hook returned, if any.
fn changed_messages(out: Option<OutputOutcome>) -> Option<Vec<Message>> {
    match out {
        Some(OutputOutcome::Messages(ms)) => Some(ms),
        None | Some(OutputOutcome::Unchanged) => None,
    }
}

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
        self.processors.iter().any(|p| p.dyn_process_data_parts())
    }

    async fn process_input(
        &self,
        args: InputArgs<'_, WorkflowState>,
    ) -> Result<InputOutcome, ProcessorError> {
        let mut system = args.system_messages;
        let mut m = MessageCx {
            hook: MessageHook::Input,
            system: &mut system,
            list: args.message_list,
            state: args.state,
            cx: args.request_context,
            report: args.report,
            retry_count: args.retry_count,
            extra: &NO_STEP,
        };
        Ok(match self.run_messages(args.messages, &mut m).await? {
            Some(messages) => InputOutcome::MessagesAndSystem { messages, system },
            None => InputOutcome::Unchanged,
        })
    }

    async fn process_output_stream(
        &self,
        args: OutputStreamArgs<'_, WorkflowState>,
    ) -> Result<StreamAction, ProcessorError> {
        self.run_stream(args).await
    }

    async fn process_output_step(
        &self,
        args: OutputStepArgs<'_, WorkflowState>,
    ) -> Result<OutputOutcome, ProcessorError> {
        let extra = MessageExtra {
            step_number: args.step_number,
            text: args.text,
            finish_reason: args.finish_reason,
            usage: args.usage,
            run_usage: args.run_usage,
            tool_calls: args.tool_calls,
            steps: args.steps,
            summary: None,
        };
        let mut system = args.system_messages;
        let mut m = MessageCx {
            hook: MessageHook::OutputStep,
            system: &mut system,
            list: args.message_list,
            state: args.state,
            cx: args.request_context,
            report: args.report,
            retry_count: args.retry_count,
            extra: &extra,
        };
        let messages = self.run_messages(args.messages, &mut m).await?;
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
        let mut m = MessageCx {
            hook: MessageHook::OutputResult,
            system: &mut system,
            list: args.message_list,
            state: args.state,
            cx: args.request_context,
            report: args.report,
            retry_count: args.retry_count,
            extra: &extra,
        };
        let messages = self.run_messages(args.messages, &mut m).await?;
        Ok(messages.map_or(OutputOutcome::Unchanged, OutputOutcome::Messages))
    }
}

#[diagnostic::do_not_recommend]
impl InputProcessor for Workflow {}
#[diagnostic::do_not_recommend]
impl OutputProcessor for Workflow {}
