//! Processors composed as a workflow: sequence, parallel branches with one selected, condition
//! branches, and maps. A workflow is itself a processor, and runs the processors inside it
//! through the runner's calls: the same guards, reports and stream chain as a list.

use super::hooks::{apply_input, apply_overrides};
use super::{Halt, HookError, call};
use crate::chunk::{Chunk, FinishReason, Usage};
use crate::context::RequestContext;
use crate::message::ToolCall;
use crate::message::{Message, MessageList};
use crate::model::{ApiError, LanguageModel, ModelRequest};
use crate::processor::state::StateMap;
use crate::processor::{
    Abort, ApiErrorAction, ApiErrorArgs, DynProcessor, ErrorProcessor, Flow, FutureSlot, Hook,
    Hooks, InputArgs, InputOutcome, InputProcessor, InputStepArgs, LlmRequestAction,
    LlmRequestArgs, LlmResponse, LlmResponseArgs, OutputOutcome, OutputProcessor, OutputResultArgs,
    OutputStepArgs, OutputStreamArgs, Processor, ProcessorError, ProcessorRef, Reporter,
    StepConfig, StepOverrides, StreamAction, StreamCx, ToolResultArgs, boxed, is_stream_sync,
};
use crate::step::{RunSummary, StepResult};
use futures::StreamExt;
use serde_json::Value;
use std::any::Any;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

/// What a branch condition sees: what the hook being run works on.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum WorkflowInput<'a> {
    /// The messages of `process_input` (the input), `process_output_step` (the step's
    /// messages) or `process_output_result` (the response).
    Messages(&'a [Message]),
    /// The streamed chunk, in `process_output_stream`.
    Chunk(&'a Chunk),
    /// The conversation, in `process_input_step`.
    Conversation(&'a MessageList),
    /// The request about to be sent, in `process_llm_request`.
    Request(&'a ModelRequest),
    /// The model's response, in `process_llm_response`.
    Response(&'a LlmResponse),
    /// A tool's call and result, in `process_tool_result`.
    ToolResult {
        /// The call.
        call: &'a ToolCall,
        /// The result, as the processors before left it.
        result: &'a Value,
    },
    /// The provider's error, in `process_api_error`.
    Error(&'a ApiError),
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
/// Steps run in order, for every hook. [`then`](Workflow::then) runs a processor;
/// [`parallel`](Workflow::parallel) runs several on the same input and keeps the output of
/// the selected one; [`branch`](Workflow::branch) runs the first processor whose condition
/// holds; [`map`](Workflow::map) transforms the messages of the hooks on messages. A trip wire
/// inside bubbles out with the inner processor's id, retry flag and metadata (a retry asked
/// from inside retries the step, as from a list); a warning inside is reported with the inner
/// processor's id and the workflow goes on. Inner processors keep their own state (one per id,
/// as in a list, and stream history when they keep one) for the request.
///
/// A workflow runs all nine hooks of the processors inside it, each as a list would: in step
/// order, each processor seeing what the ones before it left. Its hooks
/// ([`Processor::hooks`]) are those of its processors, so an agent refuses it in a list where
/// none of them belongs, when it is built.
///
/// **Parallel branches** run concurrently, at most [`concurrency`](Workflow::concurrency) at a
/// time (branches that share an id, and so a state, one after another), each on its own copy
/// of what the hook may change: the messages, the message list, the request context, the step
/// settings, the request, the tool result. When all have finished, the selected branch's copy
/// is kept and the others' changes are dropped; an abort or failure in any branch (the first
/// in branch order) stops the workflow with that branch's processor id. On the stream, branches
/// run one after another on copies of the chunk, with the same rule.
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
///
/// **Hooks known at compile time.** The type of a workflow says which processors its steps
/// hold (`H`), so its [`HOOKS`](Processor::HOOKS) are theirs and `agent!` checks where it goes
/// as it does for any processor. Branches given as shared pointers (`[boxed(a), boxed(b)]`)
/// are known only at run time: such a workflow declares every hook, and is checked when the
/// agent is built. Give parallel branches as a tuple (`(a, b)`) to keep them known.
pub struct Workflow<H = Steps> {
    id: String,
    processors: Vec<ProcessorRef>,
    steps: Vec<Step>,
    hooks: Hooks,
    concurrency: usize,
    _steps: PhantomData<fn() -> H>,
}

impl<H> Clone for Workflow<H> {
    fn clone(&self) -> Self {
        Workflow {
            id: self.id.clone(),
            processors: self.processors.clone(),
            steps: self.steps.clone(),
            hooks: self.hooks,
            concurrency: self.concurrency,
            _steps: PhantomData,
        }
    }
}

/// What a workflow's type knows of the hooks of its steps.
pub trait StepHooks: 'static {
    /// The union of the hooks of the processors of the steps.
    const HOOKS: Hooks;
}

/// Steps known only at run time (or none yet): every hook, narrowed at run time by
/// [`Processor::hooks`].
#[derive(Debug, Clone, Copy)]
pub struct Steps;

impl StepHooks for Steps {
    const HOOKS: Hooks = Hooks::ALL;
}

/// No step yet.
#[derive(Debug, Clone, Copy)]
pub struct NoSteps;

impl StepHooks for NoSteps {
    const HOOKS: Hooks = Hooks::NONE;
}

/// The steps `S`, then a step with the processor `P`.
#[derive(Debug, Clone, Copy)]
pub struct AndThen<S, P>(PhantomData<fn() -> (S, P)>);

impl<S: StepHooks, P: Processor> StepHooks for AndThen<S, P> {
    const HOOKS: Hooks = S::HOOKS.with(P::HOOKS);
}

/// The steps `S`, then parallel branches `B`.
#[derive(Debug, Clone, Copy)]
pub struct AndParallel<S, B>(PhantomData<fn() -> (S, B)>);

impl<S: StepHooks, B: Branches> StepHooks for AndParallel<S, B> {
    const HOOKS: Hooks = S::HOOKS.with(B::HOOKS);
}

/// The branches of a parallel step: a tuple of processors (their hooks known at compile
/// time), or shared pointers (`[ProcessorRef; N]`, `Vec<ProcessorRef>`: known at run time).
pub trait Branches: 'static {
    /// The union of the branches' hooks.
    const HOOKS: Hooks;
    /// The branches, as shared processors.
    fn into_refs(self) -> Vec<ProcessorRef>;
}

impl<const N: usize> Branches for [ProcessorRef; N] {
    const HOOKS: Hooks = Hooks::ALL;
    fn into_refs(self) -> Vec<ProcessorRef> {
        self.into()
    }
}

impl Branches for Vec<ProcessorRef> {
    const HOOKS: Hooks = Hooks::ALL;
    fn into_refs(self) -> Vec<ProcessorRef> {
        self
    }
}

macro_rules! tuple_branches {
    ($(($($T:ident $i:tt),+))*) => { $(
        impl<$($T: Processor),+> Branches for ($($T,)+) {
            const HOOKS: Hooks = Hooks::NONE$(.with($T::HOOKS))+;
            fn into_refs(self) -> Vec<ProcessorRef> {
                vec![$(boxed(self.$i)),+]
            }
        }
    )* };
}

tuple_branches! {
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, I 7)
}

impl<H> std::fmt::Debug for Workflow<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workflow")
            .field("id", &self.id)
            .field("steps", &self.steps.len())
            .field("hooks", &self.hooks)
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
    /// The memory of each processor's stream hook future, by position, kept from chunk to
    /// chunk; empty when every stream hook of the workflow runs without a future.
    futures: Vec<FutureSlot>,
}

impl Workflow<NoSteps> {
    /// An empty workflow with this id.
    pub fn new(id: impl Into<String>) -> Self {
        Workflow {
            id: id.into(),
            processors: Vec::new(),
            steps: Vec::new(),
            hooks: Hooks::NONE,
            concurrency: DEFAULT_CONCURRENCY,
            _steps: PhantomData,
        }
    }
}

/// How many parallel branches of a workflow run at once unless said otherwise.
const DEFAULT_CONCURRENCY: usize = 8;

impl<H: StepHooks> Workflow<H> {
    /// The same workflow with another type of steps.
    fn retype<G>(self) -> Workflow<G> {
        Workflow {
            id: self.id,
            processors: self.processors,
            steps: self.steps,
            hooks: self.hooks,
            concurrency: self.concurrency,
            _steps: PhantomData,
        }
    }

    /// Forgets what the type says of the steps (a workflow to keep with others of any steps,
    /// as in a `Vec`): it then declares every hook and is checked at run time.
    pub fn erased(self) -> Workflow<Steps> {
        self.retype()
    }

    /// Runs at most `n` parallel branches at once (at least 1; 8 unless set).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    fn add(&mut self, p: ProcessorRef) -> usize {
        self.hooks = self.hooks.with(p.dyn_hooks());
        self.processors.push(p);
        self.processors.len() - 1
    }

    /// Runs `p` next.
    pub fn then<P: Processor>(mut self, p: P) -> Workflow<AndThen<H, P>> {
        let i = self.add(boxed(p));
        self.steps.push(Step::Then(i));
        self.retype()
    }

    /// Runs every branch on its own copy of the input, concurrently, and keeps the output of
    /// `branches[select]`; an abort in any branch stops the workflow. An out-of-range `select`
    /// keeps the last branch.
    pub fn parallel<B: Branches>(
        mut self,
        branches: B,
        select: usize,
    ) -> Workflow<AndParallel<H, B>> {
        let branches: Vec<usize> = branches
            .into_refs()
            .into_iter()
            .map(|p| self.add(p))
            .collect();
        if !branches.is_empty() {
            let select = select.min(branches.len() - 1);
            self.steps.push(Step::Parallel { branches, select });
        }
        self.retype()
    }

    /// Runs `p` when `condition` holds; consecutive `branch` calls form one branch step where
    /// the first matching condition wins.
    pub fn branch<P: Processor>(
        mut self,
        condition: impl Fn(&WorkflowInput<'_>) -> bool + Send + Sync + 'static,
        p: P,
    ) -> Workflow<AndThen<H, P>> {
        let arm: (Condition, usize) = (Arc::new(condition), self.add(boxed(p)));
        match self.steps.last_mut() {
            Some(Step::Branch(arms)) => arms.push(arm),
            _ => self.steps.push(Step::Branch(vec![arm])),
        }
        self.retype()
    }

    /// Transforms the messages of message hooks (chunks pass unchanged).
    pub fn map(mut self, f: impl Fn(Vec<Message>) -> Vec<Message> + Send + Sync + 'static) -> Self {
        self.steps.push(Step::Map(Arc::new(f)));
        self
    }
}

impl<W> Workflow<W> {
    /// Binds every processor to its state slot, on the first hook call of a request.
    fn bind(&self, state: &mut WorkflowState) -> Result<(), HookError> {
        if state.slots.len() == self.processors.len() {
            return Ok(());
        }
        state.slots = self
            .processors
            .iter()
            .map(|p| state.states.slot_for(&**p).map_err(HookError::from))
            .collect::<Result<_, _>>()?;
        state.histories = vec![Vec::new(); self.processors.len()];
        if !self.processors.iter().all(|p| is_stream_sync(&**p)) {
            state.futures = self.processors.iter().map(|_| FutureSlot::new()).collect();
        }
        Ok(())
    }
}

/// One hook as a workflow's steps run it: what flows through the steps (the carry: copied for
/// each parallel branch, the selected branch's copy kept), what a branch condition sees, and
/// one inner processor's call.
trait StepHook: Sync {
    /// What the hook's processors change.
    type Carry: Clone + Send;
    /// The hook.
    const HOOK: Hook;
    /// What a branch condition sees.
    fn input<'c>(&'c self, carry: &'c Self::Carry) -> WorkflowInput<'c>;
    /// Applies a `map` step (hooks on messages only).
    fn map(&self, _carry: &mut Self::Carry, _f: &MapFn) {}
    /// Calls one processor's hook on the carry. `true` ends the hook's run through the
    /// workflow (an error processor asked for a retry).
    fn call<'a>(
        &'a self,
        p: &'a dyn DynProcessor,
        state: &'a mut (dyn Any + Send),
        carry: &'a mut Self::Carry,
        report: &'a Reporter,
    ) -> impl Future<Output = Result<bool, Halt>> + Send + 'a;
}

impl<W> Workflow<W> {
    /// Runs a hook through the steps.
    async fn drive<H: StepHook>(
        &self,
        h: &H,
        carry: &mut H::Carry,
        ws: &mut WorkflowState,
        report: &Reporter,
    ) -> Result<(), Halt> {
        self.bind(ws)?;
        for step in &self.steps {
            let stop = match step {
                Step::Then(i) => self.call_at(h, *i, carry, ws, report).await?,
                Step::Branch(arms) => match arms.iter().find(|(c, _)| c(&h.input(carry))) {
                    Some(&(_, i)) => self.call_at(h, i, carry, ws, report).await?,
                    None => false,
                },
                Step::Parallel { branches, select } => {
                    self.run_parallel(h, branches, *select, carry, ws, report)
                        .await?
                }
                Step::Map(f) => {
                    h.map(carry, f);
                    false
                }
            };
            if stop {
                break;
            }
        }
        Ok(())
    }

    /// Calls the hook of the processor at `i`, if it has it.
    async fn call_at<H: StepHook>(
        &self,
        h: &H,
        i: usize,
        carry: &mut H::Carry,
        ws: &mut WorkflowState,
        report: &Reporter,
    ) -> Result<bool, Halt> {
        let (Some(p), Some(&slot)) = (self.processors.get(i), ws.slots.get(i)) else {
            return Ok(false);
        };
        if !p.dyn_hooks().contains(H::HOOK) {
            return Ok(false);
        }
        h.call(&**p, ws.states.get_mut(slot), carry, report).await
    }

    /// Runs parallel branches, each on its own copy of the carry, at most
    /// [`concurrency`](Workflow::concurrency) at a time; the selected branch's copy is kept.
    /// A branch's abort or failure (the first in branch order) stops the workflow.
    async fn run_parallel<H: StepHook>(
        &self,
        h: &H,
        branches: &[usize],
        select: usize,
        carry: &mut H::Carry,
        ws: &mut WorkflowState,
        report: &Reporter,
    ) -> Result<bool, Halt> {
        let slots: Vec<usize> = branches
            .iter()
            .filter_map(|&i| ws.slots.get(i).copied())
            .collect();
        let shared = slots
            .iter()
            .enumerate()
            .any(|(k, s)| slots[..k].contains(s));
        let results: Vec<(Result<bool, Halt>, H::Carry)> =
            if shared || slots.len() != branches.len() {
                // Branches that share a state (one id) run one after another, each seeing the
                // state the one before it left.
                let mut out = Vec::with_capacity(branches.len());
                for &i in branches {
                    let mut copy = carry.clone();
                    let r = self.call_at(h, i, &mut copy, ws, report).await;
                    out.push((r, copy));
                }
                out
            } else {
                let mut taken: Vec<Box<dyn Any + Send>> =
                    slots.iter().map(|&s| ws.states.take(s)).collect();
                // Built in a loop, not by a closure: the future stays `Send` for every lifetime.
                let mut jobs = Vec::with_capacity(branches.len());
                for (&i, state) in branches.iter().zip(taken.iter_mut()) {
                    let mut copy = carry.clone();
                    let p = self.processors.get(i);
                    jobs.push(async move {
                        let r = match p {
                            Some(p) if p.dyn_hooks().contains(H::HOOK) => {
                                h.call(&**p, &mut **state, &mut copy, report).await
                            }
                            _ => Ok(false),
                        };
                        (r, copy)
                    });
                }
                let out = futures::stream::iter(jobs)
                    .buffered(self.concurrency)
                    .collect::<Vec<_>>()
                    .await;
                for (&s, value) in slots.iter().zip(taken) {
                    ws.states.put(s, value);
                }
                out
            };
        let mut stop = false;
        for (k, (r, copy)) in results.into_iter().enumerate() {
            let r = r?;
            if k == select {
                *carry = copy;
                stop = r;
            }
        }
        Ok(stop)
    }
}

/// What the hooks on messages carry: the messages, the system messages, the list and the
/// request context, and whether a processor returned messages.
#[derive(Clone)]
struct MessagesCarry {
    messages: Vec<Message>,
    system: Vec<Message>,
    list: MessageList,
    cx: RequestContext,
    changed: bool,
    system_changed: bool,
}

impl MessagesCarry {
    fn new(
        messages: Vec<Message>,
        system: Vec<Message>,
        list: &mut MessageList,
        cx: &mut RequestContext,
    ) -> Self {
        MessagesCarry {
            messages,
            system,
            list: std::mem::take(list),
            cx: std::mem::take(cx),
            changed: false,
            system_changed: false,
        }
    }

    /// Gives the list and the context back, and the messages if a processor returned some.
    fn finish(
        self,
        list: &mut MessageList,
        cx: &mut RequestContext,
    ) -> (Option<Vec<Message>>, Option<Vec<Message>>) {
        *list = self.list;
        *cx = self.cx;
        (
            self.changed.then_some(self.messages),
            self.system_changed.then_some(self.system),
        )
    }

    fn map(&mut self, f: &MapFn) {
        self.messages = f(std::mem::take(&mut self.messages));
        self.changed = true;
    }

    fn returned(&mut self, out: Option<OutputOutcome>) {
        if let Some(OutputOutcome::Messages(ms)) = out {
            self.messages = ms;
            self.changed = true;
        }
    }
}

struct InputHook {
    retry_count: u32,
}

impl StepHook for InputHook {
    type Carry = MessagesCarry;
    const HOOK: Hook = Hook::Input;

    fn input<'c>(&'c self, c: &'c MessagesCarry) -> WorkflowInput<'c> {
        WorkflowInput::Messages(&c.messages)
    }

    fn map(&self, c: &mut MessagesCarry, f: &MapFn) {
        c.map(f);
    }

    async fn call<'a>(
        &'a self,
        p: &'a dyn DynProcessor,
        state: &'a mut (dyn Any + Send),
        c: &'a mut MessagesCarry,
        report: &'a Reporter,
    ) -> Result<bool, Halt> {
        let args = InputArgs {
            messages: c.messages.clone(),
            system_messages: c.system.clone(),
            message_list: &mut c.list,
            state,
            request_context: &mut c.cx,
            retry_count: self.retry_count,
            report,
        };
        // Applied to the workflow's list at once, as in a list of processors: the next one
        // sees it there too, and an invalid result names the processor that returned it.
        let system = match call(p.dyn_id(), Hook::Input, report, p.dyn_process_input(args)).await? {
            None | Some(InputOutcome::Unchanged) => return Ok(false),
            Some(outcome) => {
                let system = matches!(outcome, InputOutcome::MessagesAndSystem { .. });
                apply_input(&mut c.list, outcome, p.dyn_id())?;
                system
            }
        };
        c.messages = c.list.input().cloned().collect();
        c.changed = true;
        if system {
            c.system = c.list.system_messages().to_vec();
            c.system_changed = true;
        }
        Ok(false)
    }
}

/// Which step settings a processor of the workflow named.
#[derive(Clone, Copy, Default)]
struct Named {
    model: bool,
    tools: bool,
    tool_choice: bool,
    active_tools: bool,
    provider_options: bool,
    model_settings: bool,
}

#[derive(Clone)]
struct InputStepCarry {
    config: StepConfig,
    list: MessageList,
    cx: RequestContext,
    named: Named,
}

struct InputStepHook<'s> {
    step_number: u32,
    steps: &'s [StepResult],
    retry_count: u32,
}

impl StepHook for InputStepHook<'_> {
    type Carry = InputStepCarry;
    const HOOK: Hook = Hook::InputStep;

    fn input<'c>(&'c self, c: &'c InputStepCarry) -> WorkflowInput<'c> {
        WorkflowInput::Conversation(&c.list)
    }

    async fn call<'a>(
        &'a self,
        p: &'a dyn DynProcessor,
        state: &'a mut (dyn Any + Send),
        c: &'a mut InputStepCarry,
        report: &'a Reporter,
    ) -> Result<bool, Halt> {
        let id = p.dyn_id();
        let args = InputStepArgs {
            step_number: self.step_number,
            steps: self.steps,
            messages: c.list.all().cloned().collect(),
            system_messages: c.list.all_system_messages().cloned().collect(),
            config: &c.config,
            message_list: &mut c.list,
            state,
            request_context: &mut c.cx,
            retry_count: self.retry_count,
            report,
        };
        let out = call(id, Hook::InputStep, report, p.dyn_process_input_step(args)).await?;
        if let Some(o) = out {
            let n = &mut c.named;
            n.model |= o.model.is_some();
            n.tools |= o.tools.is_some();
            n.tool_choice |= o.tool_choice.is_some();
            n.active_tools |= o.active_tools.is_some();
            n.provider_options |= o.provider_options.is_some();
            n.model_settings |= o.model_settings.is_some();
            apply_overrides(&mut c.list, &mut c.config, o, id)?;
        }
        Ok(false)
    }
}

#[derive(Clone)]
struct LlmRequestCarry {
    request: ModelRequest,
    answer: Option<LlmResponse>,
    cx: RequestContext,
    prompt_changed: bool,
}

struct LlmRequestHook<'s> {
    step_number: u32,
    model: &'s dyn LanguageModel,
}

impl StepHook for LlmRequestHook<'_> {
    type Carry = LlmRequestCarry;
    const HOOK: Hook = Hook::LlmRequest;

    fn input<'c>(&'c self, c: &'c LlmRequestCarry) -> WorkflowInput<'c> {
        WorkflowInput::Request(&c.request)
    }

    async fn call<'a>(
        &'a self,
        p: &'a dyn DynProcessor,
        state: &'a mut (dyn Any + Send),
        c: &'a mut LlmRequestCarry,
        report: &'a Reporter,
    ) -> Result<bool, Halt> {
        let args = LlmRequestArgs {
            step_number: self.step_number,
            request: &c.request,
            model: self.model,
            state,
            request_context: &mut c.cx,
            report,
        };
        let out = call(
            p.dyn_id(),
            Hook::LlmRequest,
            report,
            p.dyn_process_llm_request(args),
        );
        match out.await?.unwrap_or_default() {
            LlmRequestAction::Continue => {}
            LlmRequestAction::Prompt(prompt) => {
                c.request.prompt = prompt;
                c.prompt_changed = true;
            }
            LlmRequestAction::Respond(response) => {
                c.answer.get_or_insert(response);
            }
        }
        Ok(false)
    }
}

/// What a hook that changes nothing but the request context carries.
#[derive(Clone)]
struct ContextCarry {
    cx: RequestContext,
}

struct LlmResponseHook<'s> {
    step_number: u32,
    request: &'s ModelRequest,
    response: &'s LlmResponse,
    delivered: &'s LlmResponse,
    from_cache: bool,
}

impl StepHook for LlmResponseHook<'_> {
    type Carry = ContextCarry;
    const HOOK: Hook = Hook::LlmResponse;

    fn input<'c>(&'c self, _: &'c ContextCarry) -> WorkflowInput<'c> {
        WorkflowInput::Response(self.response)
    }

    async fn call<'a>(
        &'a self,
        p: &'a dyn DynProcessor,
        state: &'a mut (dyn Any + Send),
        c: &'a mut ContextCarry,
        report: &'a Reporter,
    ) -> Result<bool, Halt> {
        let args = LlmResponseArgs {
            step_number: self.step_number,
            request: self.request,
            response: self.response,
            delivered: self.delivered,
            from_cache: self.from_cache,
            state,
            request_context: &mut c.cx,
            report,
        };
        let out = call(
            p.dyn_id(),
            Hook::LlmResponse,
            report,
            p.dyn_process_llm_response(args),
        );
        out.await?;
        Ok(false)
    }
}

#[derive(Clone)]
struct ToolResultCarry {
    result: Value,
    cx: RequestContext,
    changed: bool,
}

struct ToolResultHook<'s> {
    tool_call: &'s ToolCall,
}

impl StepHook for ToolResultHook<'_> {
    type Carry = ToolResultCarry;
    const HOOK: Hook = Hook::ToolResult;

    fn input<'c>(&'c self, c: &'c ToolResultCarry) -> WorkflowInput<'c> {
        WorkflowInput::ToolResult {
            call: self.tool_call,
            result: &c.result,
        }
    }

    async fn call<'a>(
        &'a self,
        p: &'a dyn DynProcessor,
        state: &'a mut (dyn Any + Send),
        c: &'a mut ToolResultCarry,
        report: &'a Reporter,
    ) -> Result<bool, Halt> {
        let args = ToolResultArgs {
            tool_call: self.tool_call,
            result: &c.result,
            state,
            request_context: &mut c.cx,
            report,
        };
        let out = call(
            p.dyn_id(),
            Hook::ToolResult,
            report,
            p.dyn_process_tool_result(args),
        );
        if let Some(Some(changed)) = out.await? {
            c.result = changed;
            c.changed = true;
        }
        Ok(false)
    }
}

struct OutputStepHook<'s> {
    step_number: u32,
    text: &'s str,
    finish_reason: FinishReason,
    usage: Usage,
    run_usage: Usage,
    tool_calls: &'s [ToolCall],
    steps: &'s [StepResult],
    retry_count: u32,
}

impl StepHook for OutputStepHook<'_> {
    type Carry = MessagesCarry;
    const HOOK: Hook = Hook::OutputStep;

    fn input<'c>(&'c self, c: &'c MessagesCarry) -> WorkflowInput<'c> {
        WorkflowInput::Messages(&c.messages)
    }

    fn map(&self, c: &mut MessagesCarry, f: &MapFn) {
        c.map(f);
    }

    async fn call<'a>(
        &'a self,
        p: &'a dyn DynProcessor,
        state: &'a mut (dyn Any + Send),
        c: &'a mut MessagesCarry,
        report: &'a Reporter,
    ) -> Result<bool, Halt> {
        let args = OutputStepArgs {
            step_number: self.step_number,
            messages: c.messages.clone(),
            text: self.text,
            finish_reason: self.finish_reason,
            usage: self.usage,
            run_usage: self.run_usage,
            tool_calls: self.tool_calls,
            steps: self.steps,
            system_messages: c.system.clone(),
            message_list: &mut c.list,
            state,
            request_context: &mut c.cx,
            retry_count: self.retry_count,
            report,
        };
        let out = call(
            p.dyn_id(),
            Hook::OutputStep,
            report,
            p.dyn_process_output_step(args),
        );
        let out = out.await?;
        c.returned(out);
        Ok(false)
    }
}

struct OutputResultHook<'s> {
    summary: &'s RunSummary,
    retry_count: u32,
}

impl StepHook for OutputResultHook<'_> {
    type Carry = MessagesCarry;
    const HOOK: Hook = Hook::OutputResult;

    fn input<'c>(&'c self, c: &'c MessagesCarry) -> WorkflowInput<'c> {
        WorkflowInput::Messages(&c.messages)
    }

    fn map(&self, c: &mut MessagesCarry, f: &MapFn) {
        c.map(f);
    }

    async fn call<'a>(
        &'a self,
        p: &'a dyn DynProcessor,
        state: &'a mut (dyn Any + Send),
        c: &'a mut MessagesCarry,
        report: &'a Reporter,
    ) -> Result<bool, Halt> {
        let args = OutputResultArgs {
            messages: c.messages.clone(),
            result: self.summary,
            message_list: &mut c.list,
            state,
            request_context: &mut c.cx,
            retry_count: self.retry_count,
            report,
        };
        let out = call(
            p.dyn_id(),
            Hook::OutputResult,
            report,
            p.dyn_process_output_result(args),
        );
        let out = out.await?;
        c.returned(out);
        Ok(false)
    }
}

#[derive(Clone)]
struct ApiErrorCarry {
    list: MessageList,
    cx: RequestContext,
    retry: bool,
}

struct ApiErrorHook<'s> {
    error: &'s ApiError,
    step_number: u32,
    steps: &'s [StepResult],
    retry_count: u32,
}

impl StepHook for ApiErrorHook<'_> {
    type Carry = ApiErrorCarry;
    const HOOK: Hook = Hook::ApiError;

    fn input<'c>(&'c self, _: &'c ApiErrorCarry) -> WorkflowInput<'c> {
        WorkflowInput::Error(self.error)
    }

    async fn call<'a>(
        &'a self,
        p: &'a dyn DynProcessor,
        state: &'a mut (dyn Any + Send),
        c: &'a mut ApiErrorCarry,
        report: &'a Reporter,
    ) -> Result<bool, Halt> {
        let args = ApiErrorArgs {
            error: self.error,
            step_number: self.step_number,
            steps: self.steps,
            message_list: &mut c.list,
            state,
            request_context: &mut c.cx,
            retry_count: self.retry_count,
            report,
        };
        let out = call(
            p.dyn_id(),
            Hook::ApiError,
            report,
            p.dyn_process_api_error(args),
        );
        c.retry = out.await? == Some(ApiErrorAction::Retry);
        Ok(c.retry)
    }
}

impl<W> Workflow<W> {
    /// Runs a chunk through the steps, with the stream chain's rules for each processor.
    async fn run_stream(
        &self,
        args: OutputStreamArgs<'_, WorkflowState>,
    ) -> Result<StreamAction, ProcessorError> {
        self.bind(args.state).map_err(Halt::from)?;
        let WorkflowState {
            states,
            slots,
            histories,
            futures,
        } = args.state;
        let mut cx = StreamCx {
            states,
            slots,
            histories,
            futures,
            message_list: args.message_list,
            request_context: args.request_context,
            retry_count: args.retry_count,
            // Chunks written inside go to the chain around the workflow, after it.
            written: args.writer.buf,
            pending: None,
            report: args.report,
            current: 0,
            // The workflow is counted as one processor of the chain around it.
            stats: None,
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
                        // What a branch adds (the rest of a `Many`, data it writes) is part
                        // of its output: kept for the selected branch alone.
                        let added = cx.written.len();
                        let flow = self.stream_at(i, &mut cx, &mut copy).await;
                        if matches!(flow, Flow::Abort(_)) {
                            chosen = (flow, None);
                            break;
                        }
                        if k == *select {
                            chosen = (flow, Some(copy));
                        } else {
                            cx.written.truncate(added);
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
                Flow::Abort(tw) => return Err(Abort::from(*tw).into()),
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
            Some(p) => crate::processor::stream_one::<false, _>(&**p, cx, chunk, i).await,
            None => Flow::Continue,
        }
    }
}

impl<H: StepHooks> Processor for Workflow<H> {
    type State = WorkflowState;
    /// The hooks of the steps' processors, as far as the type knows them (every hook for
    /// branches known at run time); [`hooks`](Processor::hooks) is exact.
    const HOOKS: Hooks = H::HOOKS;

    fn id(&self) -> &str {
        &self.id
    }

    fn hooks(&self) -> Hooks {
        self.hooks
    }

    fn process_data_parts(&self) -> bool {
        self.processors.iter().any(|p| p.dyn_process_data_parts())
    }

    async fn process_input(
        &self,
        args: InputArgs<'_, WorkflowState>,
    ) -> Result<InputOutcome, ProcessorError> {
        let hook = InputHook {
            retry_count: args.retry_count,
        };
        let (list, cx) = (args.message_list, args.request_context);
        let mut carry = MessagesCarry::new(args.messages, args.system_messages, list, cx);
        let run = self.drive(&hook, &mut carry, args.state, args.report).await;
        let (messages, system) = carry.finish(list, cx);
        run?;
        Ok(match (messages, system) {
            (None, None) => InputOutcome::Unchanged,
            (Some(messages), None) => InputOutcome::Messages(messages),
            (messages, Some(system)) => InputOutcome::MessagesAndSystem {
                messages: messages.unwrap_or_else(|| list.input().cloned().collect()),
                system,
            },
        })
    }

    async fn process_input_step(
        &self,
        args: InputStepArgs<'_, WorkflowState>,
    ) -> Result<StepOverrides, ProcessorError> {
        let hook = InputStepHook {
            step_number: args.step_number,
            steps: args.steps,
            retry_count: args.retry_count,
        };
        let (list, cx) = (args.message_list, args.request_context);
        let mut carry = InputStepCarry {
            config: args.config.clone(),
            list: std::mem::take(list),
            cx: std::mem::take(cx),
            named: Named::default(),
        };
        let run = self.drive(&hook, &mut carry, args.state, args.report).await;
        *list = carry.list;
        *cx = carry.cx;
        run?;
        // Messages and system messages were applied to the list; the settings named are
        // returned, so that later processors see them.
        let (c, n) = (carry.config, carry.named);
        let mut o = StepOverrides::new();
        o.model = n.model.then_some(c.model);
        o.tools = n.tools.then_some(c.tools);
        o.tool_choice = n.tool_choice.then_some(c.tool_choice);
        o.active_tools = if n.active_tools { c.active_tools } else { None };
        o.provider_options = n.provider_options.then_some(c.provider_options);
        o.model_settings = n.model_settings.then_some(c.model_settings);
        Ok(o)
    }

    async fn process_llm_request(
        &self,
        args: LlmRequestArgs<'_, WorkflowState>,
    ) -> Result<LlmRequestAction, ProcessorError> {
        let hook = LlmRequestHook {
            step_number: args.step_number,
            model: args.model,
        };
        let cx = args.request_context;
        let mut carry = LlmRequestCarry {
            request: args.request.clone(),
            answer: None,
            cx: std::mem::take(cx),
            prompt_changed: false,
        };
        let run = self.drive(&hook, &mut carry, args.state, args.report).await;
        *cx = carry.cx;
        run?;
        Ok(match (carry.answer, carry.prompt_changed) {
            (Some(response), _) => LlmRequestAction::Respond(response),
            (None, true) => LlmRequestAction::Prompt(carry.request.prompt),
            (None, false) => LlmRequestAction::Continue,
        })
    }

    async fn process_llm_response(
        &self,
        args: LlmResponseArgs<'_, WorkflowState>,
    ) -> Result<(), ProcessorError> {
        let hook = LlmResponseHook {
            step_number: args.step_number,
            request: args.request,
            response: args.response,
            delivered: args.delivered,
            from_cache: args.from_cache,
        };
        let cx = args.request_context;
        let mut carry = ContextCarry {
            cx: std::mem::take(cx),
        };
        let run = self.drive(&hook, &mut carry, args.state, args.report).await;
        *cx = carry.cx;
        Ok(run?)
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
        let hook = OutputStepHook {
            step_number: args.step_number,
            text: args.text,
            finish_reason: args.finish_reason,
            usage: args.usage,
            run_usage: args.run_usage,
            tool_calls: args.tool_calls,
            steps: args.steps,
            retry_count: args.retry_count,
        };
        let (list, cx) = (args.message_list, args.request_context);
        let mut carry = MessagesCarry::new(args.messages, args.system_messages, list, cx);
        let run = self.drive(&hook, &mut carry, args.state, args.report).await;
        let (messages, _) = carry.finish(list, cx);
        run?;
        Ok(messages.map_or(OutputOutcome::Unchanged, OutputOutcome::Messages))
    }

    async fn process_tool_result(
        &self,
        args: ToolResultArgs<'_, WorkflowState>,
    ) -> Result<Option<Value>, ProcessorError> {
        let hook = ToolResultHook {
            tool_call: args.tool_call,
        };
        let cx = args.request_context;
        let mut carry = ToolResultCarry {
            result: args.result.clone(),
            cx: std::mem::take(cx),
            changed: false,
        };
        let run = self.drive(&hook, &mut carry, args.state, args.report).await;
        *cx = carry.cx;
        run?;
        Ok(carry.changed.then_some(carry.result))
    }

    async fn process_output_result(
        &self,
        args: OutputResultArgs<'_, WorkflowState>,
    ) -> Result<OutputOutcome, ProcessorError> {
        let hook = OutputResultHook {
            summary: args.result,
            retry_count: args.retry_count,
        };
        let (list, cx) = (args.message_list, args.request_context);
        let mut carry = MessagesCarry::new(args.messages, Vec::new(), list, cx);
        let run = self.drive(&hook, &mut carry, args.state, args.report).await;
        let (messages, _) = carry.finish(list, cx);
        run?;
        Ok(messages.map_or(OutputOutcome::Unchanged, OutputOutcome::Messages))
    }

    async fn process_api_error(
        &self,
        args: ApiErrorArgs<'_, WorkflowState>,
    ) -> Result<ApiErrorAction, ProcessorError> {
        let hook = ApiErrorHook {
            error: args.error,
            step_number: args.step_number,
            steps: args.steps,
            retry_count: args.retry_count,
        };
        let (list, cx) = (args.message_list, args.request_context);
        let mut carry = ApiErrorCarry {
            list: std::mem::take(list),
            cx: std::mem::take(cx),
            retry: false,
        };
        let run = self.drive(&hook, &mut carry, args.state, args.report).await;
        *list = carry.list;
        *cx = carry.cx;
        run?;
        Ok(match carry.retry {
            true => ApiErrorAction::Retry,
            false => ApiErrorAction::Unhandled,
        })
    }
}

// Where a workflow belongs depends on its steps: `agent!` checks its `HOOKS` at compile time,
// the builder its `hooks()` when the agent is built (and each call checks again).
#[diagnostic::do_not_recommend]
impl<H: StepHooks> InputProcessor for Workflow<H> {}
#[diagnostic::do_not_recommend]
impl<H: StepHooks> OutputProcessor for Workflow<H> {}
#[diagnostic::do_not_recommend]
impl<H: StepHooks> ErrorProcessor for Workflow<H> {}
