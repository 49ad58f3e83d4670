//! How a workflow runs: a [`Composite`] whose every hook runs its steps, each processor called
//! by the runner's dispatcher on the context of the hook that called the workflow (so its
//! results apply to the run as they would in a list), the stream hook through the stream
//! chain.

use super::{Step, Workflow, WorkflowInput, WorkflowState};
use crate::chunk::Chunk;
use crate::processor::future_slot::FutureSlot;
use crate::processor::report::Reporter;
use crate::processor::table::for_each_hook;
use crate::processor::{
    Abort, ApiErrorAction, Hooks, InputOutcome, LlmRequestAction, OutputOutcome, OutputStreamArgs,
    Processor, ProcessorError, StepOverrides, StreamAction, ToolCallAction, ToolResultAction,
};
use crate::runner::compose::{Composite, composite_hooks};
use crate::runner::dispatch::{Callee, HookCx, dispatch};
use crate::runner::stream::{Flow, StreamCx, is_sync, stream_one};
use crate::runner::{Halt, HookError};
use futures::StreamExt;
use std::any::Any;

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
        if !self.processors.iter().all(|p| is_sync(&**p)) {
            state.futures = self.processors.iter().map(|_| FutureSlot::new()).collect();
        }
        Ok(())
    }

    /// Calls the hook of the processor at `i`, if it has it.
    async fn call_at<H: HookCx>(
        &self,
        i: usize,
        cx: &mut H,
        ws: &mut WorkflowState,
        report: &Reporter,
    ) -> Result<bool, Halt> {
        let (Some(p), Some(&slot)) = (self.processors.get(i), ws.slots.get(i)) else {
            return Ok(false);
        };
        if !p.dyn_hooks().contains(H::HOOK) {
            return Ok(false);
        }
        let state = ws.states.get_mut(slot);
        dispatch(Callee::of(&**p, H::HOOK), cx, state, report, &mut ws.hooks).await
    }

    /// Runs parallel branches, each on its own copy of what the hook may change, at most
    /// [`concurrency`](Workflow::concurrency) at a time; the selected branch's copy is kept.
    /// A branch's abort or failure (the first in branch order) stops the workflow.
    async fn run_parallel<H: HookCx>(
        &self,
        branches: &[usize],
        select: usize,
        cx: &mut H,
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
        let results = if shared || slots.len() != branches.len() {
            // Branches that share a state (one id) run one after another, each seeing the
            // state the one before it left.
            let mut out = Vec::with_capacity(branches.len());
            for &i in branches {
                let mut copy = cx.fork();
                let r = self.call_at(i, &mut copy, ws, report).await;
                out.push((r, copy));
            }
            out
        } else {
            self.run_concurrently(branches, &slots, cx, ws, report)
                .await
        };
        let mut stop = false;
        for (k, (r, copy)) in results.into_iter().enumerate() {
            let r = r?;
            if k == select {
                cx.adopt(copy);
                stop = r;
            }
        }
        Ok(stop)
    }

    /// Runs branches of distinct states concurrently, each on its own copy of `cx`, with its
    /// state taken out of the map meanwhile.
    async fn run_concurrently<H: HookCx>(
        &self,
        branches: &[usize],
        slots: &[usize],
        cx: &H,
        ws: &mut WorkflowState,
        report: &Reporter,
    ) -> Vec<(Result<bool, Halt>, H)> {
        let mut taken: Vec<Box<dyn Any + Send>> =
            slots.iter().map(|&s| ws.states.take(s)).collect();
        // Built in a loop, not by a closure: the future stays `Send` for every lifetime.
        let mut jobs = Vec::with_capacity(branches.len());
        for (&i, state) in branches.iter().zip(taken.iter_mut()) {
            let mut copy = cx.fork();
            let p = self
                .processors
                .get(i)
                .filter(|p| p.dyn_hooks().contains(H::HOOK));
            jobs.push(async move {
                let r = match p {
                    Some(p) => {
                        let c = Callee::of(&**p, H::HOOK);
                        let mut slot = FutureSlot::new();
                        dispatch(c, &mut copy, &mut **state, report, &mut slot).await
                    }
                    None => Ok(false),
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
    }
}

impl<W> Workflow<W> {
    /// Runs the processor at `i` on a chunk.
    async fn stream_at(&self, i: usize, cx: &mut StreamCx<'_>, chunk: &mut Chunk) -> Flow {
        match self.processors.get(i) {
            Some(p) => stream_one::<false, _>(&**p, cx, chunk, i).await,
            None => Flow::Continue,
        }
    }
}

impl<W> Composite for Workflow<W> {
    type State = WorkflowState;

    /// Runs a hook through the steps, on `cx`. `Ok(true)`: a processor ended the hook's run
    /// (an error processor asked for a retry).
    async fn drive<H: HookCx>(
        &self,
        cx: &mut H,
        ws: &mut WorkflowState,
        report: &Reporter,
    ) -> Result<bool, Halt> {
        self.bind(ws)?;
        for step in &self.steps {
            let stop = match step {
                Step::Then(i) => self.call_at(*i, cx, ws, report).await?,
                Step::Branch(arms) => {
                    let chosen =
                        cx.with_input(|input| arms.iter().find(|(c, _)| c(input)).map(|&(_, i)| i));
                    match chosen {
                        Some(i) => self.call_at(i, cx, ws, report).await?,
                        None => false,
                    }
                }
                Step::Parallel { branches, select } => {
                    self.run_parallel(branches, *select, cx, ws, report).await?
                }
                Step::Map(f) => {
                    cx.map(&**f, &self.id)?;
                    false
                }
            };
            if stop {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Runs a chunk through the steps, with the stream chain's rules for each processor.
    async fn stream(
        &self,
        args: OutputStreamArgs<'_, WorkflowState>,
    ) -> Result<StreamAction, ProcessorError> {
        self.bind(args.state).map_err(Halt::from)?;
        let WorkflowState {
            states,
            slots,
            histories,
            futures,
            ..
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
}

impl<H: super::StepHooks> Processor for Workflow<H> {
    type State = WorkflowState;
    /// The hooks of the steps' processors, as far as the type knows them (every hook for
    /// branches known at run time); [`hooks`](Processor::hooks) is exact.
    const HOOKS: Hooks = H::HOOKS;
    /// The processors inside read the run's list themselves; the step's messages are read
    /// for their ids.
    const READS_MESSAGES: Hooks = Hooks::OUTPUT_STEP;

    fn id(&self) -> &str {
        &self.id
    }

    fn hooks(&self) -> Hooks {
        self.hooks
    }

    fn process_data_parts(&self) -> bool {
        self.processors.iter().any(|p| p.dyn_process_data_parts())
    }

    // Each hook runs the steps on the context of the run that called the workflow
    // (`runner::compose`): what the processors inside return is applied to the run's list
    // and request context as they return it.
    for_each_hook!(composite_hooks);
}
