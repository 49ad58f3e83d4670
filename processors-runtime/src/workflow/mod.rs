//! Processors composed as a workflow: sequence, parallel branches with one selected, condition
//! branches, and maps. A workflow is itself a processor; its steps run the processors inside
//! it through the runner's dispatcher and stream chain (`run.rs`), exactly as a list does.

mod run;

pub use crate::runner::dispatch::WorkflowInput;

use crate::chunk::Chunk;
use crate::message::Message;
use crate::processor::future_slot::FutureSlot;
use crate::processor::known::Known;
use crate::processor::state::StateMap;
use crate::processor::{
    ErrorProcessor, Hooks, InputProcessor, OutputProcessor, Processor, ProcessorRef, boxed,
};
use std::marker::PhantomData;
use std::sync::Arc;

pub(crate) type Condition = Arc<dyn Fn(&WorkflowInput<'_>) -> bool + Send + Sync>;
type MapFn = Arc<crate::runner::dispatch::MapFn>;

/// A step; processors are named by their position in [`Workflow::processors`].
#[derive(Clone)]
pub(crate) enum Step {
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
/// A workflow runs all ten hooks of the processors inside it, each as a list would: in step
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
/// use processors_runtime::workflow::{Workflow, WorkflowInput};
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
    pub(crate) processors: Vec<ProcessorRef>,
    pub(crate) steps: Vec<Step>,
    hooks: Hooks,
    pub(crate) concurrency: usize,
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

        impl<$($T: Known),+> Known for ($($T,)+) {
            const HOOKS: Hooks = Hooks::NONE$(.with(<$T as Known>::HOOKS))+;
            const STATIC_ID: Option<&'static str> = None;
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
    pub(crate) states: StateMap,
    /// The state slot of each processor, by position; empty until the first hook call.
    pub(crate) slots: Vec<usize>,
    /// The stream history of each processor, by position.
    pub(crate) histories: Vec<Vec<Chunk>>,
    /// The memory of each processor's stream hook future, by position, kept from chunk to
    /// chunk; empty when every stream hook of the workflow runs without a future.
    pub(crate) futures: Vec<FutureSlot>,
    /// The memory of the other hooks' futures (one at a time), reused from call to call.
    pub(crate) hooks: FutureSlot,
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

// Where a workflow belongs depends on its steps: `agent!` checks its `HOOKS` at compile time,
// the builder its `hooks()` when the agent is built (and each call checks again).
#[diagnostic::do_not_recommend]
impl<H: StepHooks> InputProcessor for Workflow<H> {}
#[diagnostic::do_not_recommend]
impl<H: StepHooks> OutputProcessor for Workflow<H> {}
#[diagnostic::do_not_recommend]
impl<H: StepHooks> ErrorProcessor for Workflow<H> {}

// A workflow's hooks are known where its steps' are.
impl<H: StepHooks + Known> Known for Workflow<H> {
    const HOOKS: Hooks = <H as Known>::HOOKS;
    const STATIC_ID: Option<&'static str> = None;
}
// Written out, not read from `StepHooks` or `Branches`: a where clause of the code `agent!` is
// in could hide those impls from a check made while it type-checks.
impl Known for Steps {
    const HOOKS: Hooks = Hooks::ALL;
    const STATIC_ID: Option<&'static str> = None;
}
impl Known for NoSteps {
    const HOOKS: Hooks = Hooks::NONE;
    const STATIC_ID: Option<&'static str> = None;
}
impl<S: Known, P: Known> Known for AndThen<S, P> {
    const HOOKS: Hooks = <S as Known>::HOOKS.with(<P as Known>::HOOKS);
    const STATIC_ID: Option<&'static str> = None;
}
impl<S: Known, B: Known> Known for AndParallel<S, B> {
    const HOOKS: Hooks = <S as Known>::HOOKS.with(<B as Known>::HOOKS);
    const STATIC_ID: Option<&'static str> = None;
}
impl<const N: usize> Known for [ProcessorRef; N] {
    const HOOKS: Hooks = Hooks::ALL;
    const STATIC_ID: Option<&'static str> = None;
}
impl Known for Vec<ProcessorRef> {
    const HOOKS: Hooks = Hooks::ALL;
    const STATIC_ID: Option<&'static str> = None;
}
