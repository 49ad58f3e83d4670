//! The stream chain: one chunk through a list's stream processors, in order, with the rules
//! of `docs/semantics.md` (a dropped chunk goes no further, a failure passes the chunk on as
//! it is, an abort halts, written and extra chunks run from just after their writer).
//!
//! A chain whose stream hooks all never wait runs without futures ([`step_now`]), and for a
//! stretch of chunks with its processors' states bound to their types ([`StreamChain::bind`]);
//! one that may wait awaits each hook ([`stream_one`]), its future behind `dyn` in a slot the
//! chain keeps per position. With `MEASURE`, each call is counted and timed for tracing.

use crate::chunk::{Chunk, ChunkKind, DataWriter};
use crate::context::RequestContext;
use crate::message::MessageList;
use crate::processor::call::{result_now, state_mismatch};
use crate::processor::future_slot::FutureSlot;
use crate::processor::report::{Reporter, ViolationKind};
use crate::processor::state::StateMap;
use crate::processor::{
    Abort, Hook, Hooks, OutputStreamArgs, Processor, ProcessorError, StreamAction,
};
use crate::tripwire::TripWire;
use std::any::Any;
use std::future::Future;

/// How a processor list runs the stream hook on a chunk: the chain's side of
/// [`Pipeline`](crate::processor::Pipeline), for the framework's own lists only (the trait
/// cannot be named outside the crate, which seals `Pipeline`).
pub trait StreamChain {
    /// Runs the stream chain on `chunk` from the processor at `start`, changing the chunk in
    /// place. Panics are not caught here: the caller catches them once per chunk and names
    /// the processor at `cx.current`.
    /// With `MEASURE`, each processor's call is counted and timed in `cx`'s stats.
    fn run_output_stream<'a, 'r, const MEASURE: bool>(
        &'a self,
        cx: &'a mut StreamCx<'r>,
        chunk: &'a mut Chunk,
        start: usize,
    ) -> impl Future<Output = Flow> + Send + 'a;

    /// Whether every stream hook of the list runs without a future, so that
    /// `run_output_stream_now` may be called instead.
    fn stream_is_sync(&self) -> bool;

    /// Whether the processors are called behind `dyn` (a stream hook that waits then needs
    /// a place for its future).
    fn behind_dyn(&self) -> bool {
        false
    }

    /// `run_output_stream` for a list whose stream hooks never wait.
    fn run_output_stream_now<const MEASURE: bool>(
        &self,
        cx: &mut StreamCx<'_>,
        chunk: &mut Chunk,
        start: usize,
    ) -> Flow;

    /// The states of the list's processors, each taken out of the request's map as its
    /// processor's type: bound once for a run of chunks instead of being looked up and
    /// downcast for every chunk. It may borrow the list (`'p`).
    type Bound<'p>: Send
    where
        Self: 'p;

    /// Takes the states at `slots` (one per processor, in order) out of `states`, as their
    /// processors' types, until [`unbind`](StreamChain::unbind) puts them back; `None`, taking
    /// nothing, when the list does not run bound (a stream hook that may wait, or states that
    /// do not match), and then the chunks take `run_output_stream_now`. A tuple's bound
    /// states are its processors' own types; a list behind `dyn` binds each stream
    /// processor's state behind that processor's [`BoundStream`] (one allocation per stream
    /// processor, and the list's own, per binding).
    fn bind<'p>(&'p self, states: &mut StateMap, slots: &[usize]) -> Option<Self::Bound<'p>>;

    /// Puts back the states [`bind`](StreamChain::bind) took.
    fn unbind(&self, bound: Self::Bound<'_>, states: &mut StateMap, slots: &[usize]);

    /// `run_output_stream_now` with the states bound by [`bind`](StreamChain::bind); `cx`'s
    /// own state map is not used.
    fn run_output_stream_bound(
        &self,
        bound: &mut Self::Bound<'_>,
        cx: &mut StreamCx<'_>,
        chunk: &mut Chunk,
        start: usize,
    ) -> Flow;
}

/// What became of a chunk in the stream chain (the chunk itself is changed in place).
#[doc(hidden)]
#[derive(Debug)]
pub enum Flow {
    /// Go on to the next processor (at the end of the chain: emit the chunk).
    Continue,
    /// Skip the rest of the chain and emit the chunk as it is (a processor failed).
    Emit,
    /// Dropped.
    Drop,
    /// A processor aborted (boxed: a `Flow` is returned by every processor for every chunk,
    /// and fits in two registers this way).
    Abort(Box<TripWire>),
}

/// What the stream chain needs of the run.
pub struct StreamCx<'r> {
    pub(crate) states: &'r mut StateMap,
    pub(crate) slots: &'r [usize],
    pub(crate) histories: &'r mut [Vec<Chunk>],
    /// Where the future of each position's stream hook goes when it is behind `dyn` (one
    /// allocation per position, reused from chunk to chunk); empty when the chain never
    /// waits, and then a call that has to have a future allocates it.
    pub(crate) futures: &'r mut [FutureSlot],
    pub(crate) message_list: &'r MessageList,
    pub(crate) request_context: &'r mut RequestContext,
    pub(crate) retry_count: u32,
    /// Where a hook's writer puts data chunks.
    pub(crate) written: &'r mut Vec<ChunkKind>,
    /// Written chunks still to send, with the position to start the chain at: just after
    /// their writer, so a chunk never reaches its writer or the processors before it. `None`
    /// inside a processor that runs others (a workflow): its writes stay in `written`, for
    /// the chain around it.
    pub(crate) pending: Option<&'r mut std::collections::VecDeque<(usize, ChunkKind)>>,
    /// Where warnings go.
    pub(crate) report: &'r Reporter,
    /// The position of the processor running, to name it when it panics.
    pub(crate) current: usize,
    /// Per-position counts and time of the chain's stream hooks, when tracing asks for them.
    pub(crate) stats: Option<&'r mut StreamStats>,
}

/// What the measuring chain keeps: a [`StreamStat`] per position, and whether each chunk's
/// way through each processor is reported too (at `TRACE`, target `processors::chunks`).
#[derive(Debug, Default)]
pub(crate) struct StreamStats {
    pub(crate) per: Vec<StreamStat>,
    pub(crate) chunks: bool,
}

/// The tracing target of the per-chunk events.
pub(crate) const CHUNK_TARGET: &str = "processors::chunks";

/// What one processor of the stream chain did in a step: the chunks it took, what became of
/// them, and the time spent in its hook. Kept only when a tracing subscriber listens at
/// `DEBUG` for `processors::stream`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StreamStat {
    pub(crate) chunks: u32,
    pub(crate) replaced: u32,
    pub(crate) dropped: u32,
    pub(crate) warned: u32,
    pub(crate) aborted: u32,
    pub(crate) failed: u32,
    pub(crate) nanos: u64,
}

/// Records one stream hook call in the chain's stats.
#[cold]
#[inline(never)]
fn record(cx: &mut StreamCx<'_>, pos: usize, started: std::time::Instant, outcome: StreamOutcome) {
    let Some(stats) = cx.stats.as_deref_mut() else {
        return;
    };
    let per = &mut stats.per;
    if per.len() <= pos {
        per.resize(pos + 1, StreamStat::default());
    }
    let s = &mut per[pos];
    s.chunks += 1;
    s.nanos += u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    match outcome {
        StreamOutcome::Passed => {}
        StreamOutcome::Replaced => s.replaced += 1,
        StreamOutcome::Dropped => s.dropped += 1,
        StreamOutcome::Warned => s.warned += 1,
        StreamOutcome::Aborted => s.aborted += 1,
        StreamOutcome::Failed => s.failed += 1,
    }
}

/// A chunk as the per-chunk events show it: its type and its text, if it has some.
fn describe(chunk: &Chunk) -> (std::borrow::Cow<'static, str>, Option<String>) {
    (
        chunk.kind.type_name(),
        chunk.text_delta().map(str::to_owned),
    )
}

/// Reports one chunk's way through one processor.
#[cold]
#[inline(never)]
fn trace_chunk(
    id: &str,
    pos: usize,
    before: (std::borrow::Cow<'static, str>, Option<String>),
    after: &Chunk,
    outcome: StreamOutcome,
) {
    let (kind, text) = before;
    let text_out = match outcome {
        StreamOutcome::Replaced => after.text_delta().map(str::to_owned),
        _ => None,
    };
    tracing::trace!(
        target: CHUNK_TARGET,
        processor = id,
        position = pos,
        chunk = %kind,
        text = text.as_deref(),
        text_out = text_out.as_deref(),
        outcome = outcome.name(),
        "chunk through a stream processor"
    );
}

/// What a stream hook's result does to its chunk.
#[derive(Clone, Copy)]
enum StreamOutcome {
    Passed,
    Replaced,
    Dropped,
    Warned,
    Aborted,
    Failed,
}

impl StreamOutcome {
    fn name(self) -> &'static str {
        match self {
            StreamOutcome::Passed => "pass",
            StreamOutcome::Replaced => "replaced",
            StreamOutcome::Dropped => "dropped",
            StreamOutcome::Warned => "warned",
            StreamOutcome::Aborted => "aborted",
            StreamOutcome::Failed => "failed",
        }
    }

    fn of(result: &Result<StreamAction, ProcessorError>) -> Self {
        match result {
            Ok(StreamAction::Pass) => StreamOutcome::Passed,
            Ok(StreamAction::Replace(_) | StreamAction::Many(_)) => StreamOutcome::Replaced,
            Ok(StreamAction::Drop) => StreamOutcome::Dropped,
            Err(ProcessorError::Warning(_)) => StreamOutcome::Warned,
            Err(ProcessorError::Abort(_)) => StreamOutcome::Aborted,
            Err(ProcessorError::Failed(_)) => StreamOutcome::Failed,
        }
    }
}

/// How the stream chain calls one processor: directly for a processor of a tuple, through its
/// erased call for one behind a pointer.
pub(crate) trait StreamCall: Send + Sync {
    /// One step of the chain for a processor whose stream hook never waits ([`step_now`]);
    /// behind `dyn`, one virtual call does the whole step, compiled for the processor's type.
    #[inline(always)]
    fn call_step_now<const MEASURE: bool>(
        &self,
        cx: &mut StreamCx<'_>,
        chunk: &mut Chunk,
        pos: usize,
    ) -> Flow {
        step_now::<MEASURE, Self>(self, cx, chunk, pos)
    }
    fn call_hooks(&self) -> Hooks;
    fn call_id(&self) -> &str;
    fn call_data_parts(&self) -> bool;
    fn call_history(&self) -> bool;
    fn call_is_sync(&self) -> bool;
    /// The hook's result, for a processor whose stream hook never waits.
    fn call_now(
        &self,
        args: OutputStreamArgs<'_, dyn Any + Send>,
    ) -> Result<StreamAction, ProcessorError>;
    /// Whether [`call`](Self::call) places its future in the slot it is given (behind `dyn`,
    /// where the chain cannot hold the future itself).
    const USES_SLOT: bool = false;
    /// `process_output_stream`; behind `dyn`, its future is placed in `slot`.
    fn call<'a>(
        &'a self,
        args: OutputStreamArgs<'a, dyn Any + Send>,
        slot: &'a mut FutureSlot,
    ) -> impl Future<Output = Result<StreamAction, ProcessorError>> + Send + 'a;
}

impl<P: Processor> StreamCall for P {
    #[inline]
    fn call_hooks(&self) -> Hooks {
        self.hooks()
    }
    fn call_id(&self) -> &str {
        self.id()
    }
    fn call_data_parts(&self) -> bool {
        self.process_data_parts()
    }
    fn call_history(&self) -> bool {
        self.keeps_stream_history()
    }
    #[inline]
    fn call_is_sync(&self) -> bool {
        P::SYNC_HOOKS.contains(Hook::OutputStream)
    }
    #[inline]
    fn call_now(
        &self,
        args: OutputStreamArgs<'_, dyn Any + Send>,
    ) -> Result<StreamAction, ProcessorError> {
        match args.__map_state(|s| s.downcast_mut::<P::State>()) {
            Some(args) => result_now(self, Hook::OutputStream, self.process_output_stream(args)),
            None => Err(state_mismatch(self)),
        }
    }
    #[inline]
    async fn call<'a>(
        &'a self,
        args: OutputStreamArgs<'a, dyn Any + Send>,
        _: &'a mut FutureSlot,
    ) -> Result<StreamAction, ProcessorError> {
        match args.__map_state(|s| s.downcast_mut::<P::State>()) {
            Some(args) => self.process_output_stream(args).await,
            None => Err(state_mismatch(self)),
        }
    }
}

/// The arguments of one processor's `process_output_stream` call, or `None` when the
/// processor does not take this chunk.
#[inline(always)]
pub(crate) fn args_for<'a, P: StreamCall + ?Sized>(
    p: &P,
    cx: &'a mut StreamCx<'_>,
    chunk: &'a Chunk,
    pos: usize,
) -> Option<OutputStreamArgs<'a, dyn Any + Send>> {
    args_with(p, cx, chunk, pos, |states, slots| {
        Some(states.get_mut(*slots.get(pos)?))
    })
}

/// [`args_for`], with the processor's state found by `state` (in the request's states, from
/// the chain's slots): `None` from it skips the processor.
#[inline(always)]
fn args_with<'a, P: StreamCall + ?Sized, S: ?Sized>(
    p: &P,
    cx: &'a mut StreamCx<'_>,
    chunk: &'a Chunk,
    pos: usize,
    state: impl FnOnce(&'a mut StateMap, &[usize]) -> Option<&'a mut S>,
) -> Option<OutputStreamArgs<'a, S>> {
    if !p.call_hooks().contains(Hook::OutputStream) || (chunk.is_data() && !p.call_data_parts()) {
        return None;
    }
    let state = state(&mut *cx.states, cx.slots)?;
    let history: &[Chunk] = match p.call_history() {
        true => match cx.histories.get_mut(pos) {
            Some(h) => {
                h.push(chunk.clone());
                h
            }
            None => &[],
        },
        false => &[],
    };
    cx.current = pos;
    Some(OutputStreamArgs {
        chunk,
        stream_history: history,
        state,
        message_list: cx.message_list,
        request_context: &mut *cx.request_context,
        retry_count: cx.retry_count,
        writer: DataWriter {
            buf: &mut *cx.written,
        },
        report: cx.report,
    })
}

/// Applies one processor's result to the chunk and the chain: a failure passes the chunk on
/// as it is and skips the rest of the chain for it.
#[inline(always)]
fn apply<P: StreamCall + ?Sized>(
    p: &P,
    cx: &mut StreamCx<'_>,
    chunk: &mut Chunk,
    pos: usize,
    result: Result<StreamAction, ProcessorError>,
) -> Flow {
    if !cx.written.is_empty() {
        queue_written(cx, pos);
    }
    match result {
        Ok(StreamAction::Pass) => Flow::Continue,
        Ok(StreamAction::Replace(c)) => {
            *chunk = c;
            Flow::Continue
        }
        Ok(StreamAction::Drop) => Flow::Drop,
        Ok(StreamAction::Many(chunks)) => emit_many(cx, chunk, pos, chunks),
        Err(e) => failed(cx, p.call_id(), e),
    }
}

/// Queues the data chunks a processor wrote, to run from just after it (inside a workflow
/// they stay in `written`, for the chain around it).
#[cold]
#[inline(never)]
fn queue_written(cx: &mut StreamCx<'_>, pos: usize) {
    if let Some(pending) = &mut cx.pending {
        pending.extend(cx.written.drain(..).map(|kind| (pos + 1, kind)));
    }
}

/// What a processor's error does: an abort halts the run, a warning is reported and the
/// chunk goes on, a failure is logged and the chunk passes on as it is.
#[cold]
#[inline(never)]
fn failed(cx: &StreamCx<'_>, id: &str, e: ProcessorError) -> Flow {
    match e {
        ProcessorError::Abort(a) => Flow::Abort(Box::new(a.into_tripwire(id))),
        ProcessorError::Warning(a) => {
            warn(cx, a, id);
            Flow::Continue
        }
        ProcessorError::Failed(e) => {
            tracing::warn!(
                processor = id,
                error = %e,
                "process_output_stream failed; the original chunk passes on"
            );
            Flow::Emit
        }
    }
}

/// Puts the first of several chunks in place of the one processed; the others follow from
/// the next processor on (inside a workflow, from the next processor after it).
#[cold]
fn emit_many(cx: &mut StreamCx<'_>, chunk: &mut Chunk, pos: usize, chunks: Vec<Chunk>) -> Flow {
    let mut chunks = chunks.into_iter();
    let Some(first) = chunks.next() else {
        return Flow::Drop;
    };
    *chunk = first;
    match &mut cx.pending {
        Some(pending) => pending.extend(chunks.map(|c| (pos + 1, c.kind))),
        None => cx.written.extend(chunks.map(|c| c.kind)),
    }
    Flow::Continue
}

/// Reports a processor's warning; the chunk goes on.
#[cold]
fn warn(cx: &StreamCx<'_>, a: Abort, id: &str) {
    cx.report
        .violation(&a.into_tripwire(id), ViolationKind::Warn);
}

/// Runs a processor that never waits on a chunk, without a future: one step of the chain
/// (whether the processor takes the chunk, its arguments, the call, and what its result does
/// to the chunk).
#[inline(always)]
pub(crate) fn step_now<const MEASURE: bool, P: StreamCall + ?Sized>(
    p: &P,
    cx: &mut StreamCx<'_>,
    chunk: &mut Chunk,
    pos: usize,
) -> Flow {
    if MEASURE {
        return measured_now(p, cx, chunk, pos);
    }
    let Some(args) = args_for(p, cx, chunk, pos) else {
        return Flow::Continue;
    };
    let result = p.call_now(args);
    apply(p, cx, chunk, pos, result)
}

/// [`step_now`] for a processor whose state is already bound to its type (a tuple's, or one
/// behind `dyn` through its [`BoundStream`]): no lookup or downcast per chunk.
#[inline(always)]
pub(crate) fn step_bound<P: Processor>(
    p: &P,
    state: &mut P::State,
    cx: &mut StreamCx<'_>,
    chunk: &mut Chunk,
    pos: usize,
) -> Flow {
    let Some(args) = args_with(p, cx, chunk, pos, |_, _| Some(state)) else {
        return Flow::Continue;
    };
    let result = result_now(p, Hook::OutputStream, p.process_output_stream(args));
    apply(p, cx, chunk, pos, result)
}

/// A stream processor behind `dyn` with its state taken out of the request's map as its own
/// type (the erased `dyn_bind_stream`), for a run of chunks: each chunk is one virtual
/// call, with no lookup or downcast of the state.
pub trait BoundStream: Send {
    /// One step of the chain for the processor at `pos`, as [`step_now`] makes it.
    fn step(&mut self, cx: &mut StreamCx<'_>, chunk: &mut Chunk, pos: usize) -> Flow;
    /// Gives the state back, for the request's map.
    fn unbind(self: Box<Self>) -> Box<dyn Any + Send>;
}

/// A processor and its state, bound ([`BoundStream`]).
pub(crate) struct BoundTo<'p, P: Processor> {
    pub(crate) p: &'p P,
    pub(crate) state: Box<P::State>,
}

impl<P: Processor> BoundStream for BoundTo<'_, P> {
    fn step(&mut self, cx: &mut StreamCx<'_>, chunk: &mut Chunk, pos: usize) -> Flow {
        step_bound(self.p, &mut self.state, cx, chunk, pos)
    }
    fn unbind(self: Box<Self>) -> Box<dyn Any + Send> {
        self.state
    }
}

/// [`step_now`], counted and timed.
#[inline(never)]
fn measured_now<P: StreamCall + ?Sized>(
    p: &P,
    cx: &mut StreamCx<'_>,
    chunk: &mut Chunk,
    pos: usize,
) -> Flow {
    let started = std::time::Instant::now();
    let before = traces_chunks(cx).then(|| describe(chunk));
    let Some(args) = args_for(p, cx, chunk, pos) else {
        return Flow::Continue;
    };
    let result = p.call_now(args);
    let outcome = StreamOutcome::of(&result);
    let flow = apply(p, cx, chunk, pos, result);
    record(cx, pos, started, outcome);
    if let Some(before) = before {
        trace_chunk(p.call_id(), pos, before, chunk, outcome);
    }
    flow
}

/// Whether each chunk's way through each processor is reported.
fn traces_chunks(cx: &StreamCx<'_>) -> bool {
    cx.stats.as_ref().is_some_and(|s| s.chunks)
}

/// Runs one processor's `process_output_stream` on a chunk, with the rules of the stream chain.
#[inline]
pub(crate) async fn stream_one<const MEASURE: bool, P: StreamCall + ?Sized>(
    p: &P,
    cx: &mut StreamCx<'_>,
    chunk: &mut Chunk,
    pos: usize,
) -> Flow {
    if p.call_is_sync() {
        return p.call_step_now::<MEASURE>(cx, chunk, pos);
    }
    let started = MEASURE.then(std::time::Instant::now);
    let before = (MEASURE && traces_chunks(cx)).then(|| describe(chunk));
    // Lent to the call behind `dyn` (taking it moves the slot, not the memory it keeps).
    let mut slot = match P::USES_SLOT {
        true => cx
            .futures
            .get_mut(pos)
            .map(std::mem::take)
            .unwrap_or_default(),
        false => FutureSlot::new(),
    };
    let Some(args) = args_for(p, cx, chunk, pos) else {
        give_back(cx, pos, slot, P::USES_SLOT);
        return Flow::Continue;
    };
    let result = p.call(args, &mut slot).await;
    give_back(cx, pos, slot, P::USES_SLOT);
    if let Some(started) = started {
        let outcome = StreamOutcome::of(&result);
        let flow = apply(p, cx, chunk, pos, result);
        record(cx, pos, started, outcome);
        if let Some(before) = before {
            trace_chunk(p.call_id(), pos, before, chunk, outcome);
        }
        return flow;
    }
    apply(p, cx, chunk, pos, result)
}

/// Puts back the slot `stream_one` took from position `pos`, if it took one.
#[inline(always)]
fn give_back(cx: &mut StreamCx<'_>, pos: usize, slot: FutureSlot, taken: bool) {
    if taken && let Some(kept) = cx.futures.get_mut(pos) {
        *kept = slot;
    }
}

/// Whether a processor's stream hook runs without a future (or it has none).
#[inline]
pub(crate) fn is_sync<P: StreamCall + ?Sized>(p: &P) -> bool {
    !p.call_hooks().contains(Hook::OutputStream) || p.call_is_sync()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::RunId;
    use crate::processor::pipeline::Streaming;
    use crate::processor::{DynPipeline, ProcessorRef, boxed};
    use std::collections::VecDeque;

    /// A stream processor that never waits: counts chunks, and by the chunk's text writes a
    /// data chunk, warns, drops, fails or upper-cases it.
    struct Script;

    impl Processor for Script {
        type State = usize;
        const HOOKS: Hooks = Hooks::OUTPUT_STREAM;
        const SYNC_HOOKS: Hooks = Hooks::OUTPUT_STREAM;
        fn id(&self) -> &str {
            "script"
        }
        async fn process_output_stream(
            &self,
            args: OutputStreamArgs<'_, usize>,
        ) -> Result<StreamAction, ProcessorError> {
            script(args)
        }
    }

    /// What [`Script`] does to a chunk.
    fn script(mut args: OutputStreamArgs<'_, usize>) -> Result<StreamAction, ProcessorError> {
        *args.state += 1;
        match args.chunk.text_delta().unwrap_or_default() {
            "write" => {
                args.writer.write("seen", (*args.state).into());
                Ok(StreamAction::Pass)
            }
            "warn" => Err(args.abort().reason("warned").warn()),
            "drop" => Ok(StreamAction::Drop),
            "fail" => Err(ProcessorError::msg("failed")),
            _ => Ok(args.chunk.clone().map_text(str::to_uppercase).into()),
        }
    }

    /// [`Script`] as a hook that waits once before it answers.
    struct Waits;

    impl Processor for Waits {
        type State = usize;
        const HOOKS: Hooks = Hooks::OUTPUT_STREAM;
        fn id(&self) -> &str {
            "script"
        }
        async fn process_output_stream(
            &self,
            args: OutputStreamArgs<'_, usize>,
        ) -> Result<StreamAction, ProcessorError> {
            let mut waited = false;
            std::future::poll_fn(|cx| match std::mem::replace(&mut waited, true) {
                true => std::task::Poll::Ready(()),
                false => {
                    cx.waker().wake_by_ref();
                    std::task::Poll::Pending
                }
            })
            .await;
            script(args)
        }
    }

    /// What one step did: the flow's name, the chunk after it, the state, the queued chunks.
    type Seen = (&'static str, Option<String>, usize, Vec<(usize, ChunkKind)>);

    /// What a stream context borrows besides the states and their slots, for two positions.
    struct Rig {
        histories: Vec<Vec<Chunk>>,
        futures: [FutureSlot; 2],
        messages: MessageList,
        request_context: RequestContext,
        written: Vec<ChunkKind>,
        pending: VecDeque<(usize, ChunkKind)>,
        report: Reporter,
    }

    impl Rig {
        fn new() -> Self {
            Rig {
                histories: vec![Vec::new(), Vec::new()],
                futures: [FutureSlot::new(), FutureSlot::new()],
                messages: MessageList::new(),
                request_context: RequestContext::new(),
                written: Vec::new(),
                pending: VecDeque::new(),
                report: Reporter::default(),
            }
        }

        /// The context of a chain over `states` at `slots`, its written chunks queued.
        fn cx<'a>(&'a mut self, states: &'a mut StateMap, slots: &'a [usize]) -> StreamCx<'a> {
            StreamCx {
                states,
                slots,
                histories: &mut self.histories,
                futures: &mut self.futures,
                message_list: &self.messages,
                request_context: &mut self.request_context,
                retry_count: 0,
                written: &mut self.written,
                pending: Some(&mut self.pending),
                report: &self.report,
                current: 0,
                stats: None,
            }
        }
    }

    /// A text delta of the tests' run.
    fn delta(text: &str) -> Chunk {
        let kind = ChunkKind::TextDelta {
            id: "t".into(),
            text: text.into(),
        };
        Chunk::new(RunId::from("run-1"), kind)
    }

    /// A flow's name.
    fn name(flow: Flow) -> &'static str {
        match flow {
            Flow::Continue => "continue",
            Flow::Emit => "emit",
            Flow::Drop => "drop",
            Flow::Abort(_) => "abort",
        }
    }

    /// Runs `texts` through one step of the chain at position 1, by `step`.
    fn run(texts: &[&str], step: impl Fn(&mut StreamCx<'_>, &mut Chunk) -> Flow) -> Vec<Seen> {
        let p: ProcessorRef = boxed(Script);
        let mut states = StateMap::default();
        let slot = states.slot_for(&*p).unwrap();
        let slots = [slot, slot];
        let mut rig = Rig::new();
        let mut seen = Vec::new();
        for text in texts {
            let mut chunk = delta(text);
            let flow = name(step(&mut rig.cx(&mut states, &slots), &mut chunk));
            let state = *states.get_mut(slot).downcast_mut::<usize>().unwrap();
            let text = chunk.text_delta().map(str::to_owned);
            seen.push((flow, text, state, rig.pending.drain(..).collect()));
        }
        seen
    }

    /// A processor without hooks whose state is a unit.
    struct Unit(&'static str);

    impl Processor for Unit {
        type State = ();
        const HOOKS: Hooks = Hooks::NONE;
        fn id(&self) -> &str {
            self.0
        }
    }

    /// A map with `Script`'s state at slot 0 and `Unit`'s at slot 1, the first set to `n`.
    fn states_with(n: usize) -> StateMap {
        let mut states = StateMap::default();
        assert_eq!(states.slot_for(&Script), Ok(0));
        assert_eq!(states.slot_for(&Unit("unit")), Ok(1));
        *states.get_mut(0).downcast_mut::<usize>().unwrap() = n;
        states
    }

    /// A list behind `dyn` calls only its processors with a stream hook, each at its own
    /// position (whose slot holds its state), from the position the chain starts at; however
    /// the list was built.
    #[test]
    fn a_dyn_list_calls_its_stream_processors_at_their_positions() {
        let procs = || [boxed(Unit("a")), boxed(Script), boxed(Unit("b"))];
        let mut pushed = DynPipeline::new();
        for p in procs() {
            pushed.push(p);
        }
        let lists = [
            DynPipeline::from(procs().to_vec()),
            procs().into_iter().collect(),
            DynPipeline::new()
                .with(Unit("a"))
                .with(Script)
                .with(Unit("b")),
            pushed,
        ];
        for list in lists {
            let streaming: Vec<_> = list
                .streaming
                .iter()
                .map(|s| (s.pos, s.p.dyn_id()))
                .collect();
            assert_eq!(streaming, [(1, "script")]);
            let mut states = StateMap::default();
            let slots: Vec<usize> = (list.processors().iter())
                .map(|p| states.slot_for(&**p).unwrap())
                .collect();
            let mut histories = vec![Vec::new(); 3];
            let mut futures = [FutureSlot::new(), FutureSlot::new(), FutureSlot::new()];
            let messages = MessageList::new();
            let mut request_context = RequestContext::new();
            let mut written = Vec::new();
            let report = Reporter::default();
            let mut texts = Vec::new();
            for start in [0, 1, 2] {
                let mut cx = StreamCx {
                    states: &mut states,
                    slots: &slots,
                    histories: &mut histories,
                    futures: &mut futures,
                    message_list: &messages,
                    request_context: &mut request_context,
                    retry_count: 0,
                    written: &mut written,
                    pending: None,
                    report: &report,
                    current: 0,
                    stats: None,
                };
                let kind = ChunkKind::TextDelta {
                    id: "t".into(),
                    text: "abc".into(),
                };
                let mut chunk = Chunk::new(RunId::from("run-1"), kind);
                let flow = list.run_output_stream_now::<false>(&mut cx, &mut chunk, start);
                assert!(matches!(flow, Flow::Continue), "{flow:?}");
                texts.push(chunk.text_delta().map(str::to_owned));
            }
            // Upper-cased by `Script` from positions 0 and 1, left alone from position 2.
            let (upper, lower) = (Some("ABC".to_owned()), Some("abc".to_owned()));
            assert_eq!(texts, [upper.clone(), upper, lower]);
            let count = states.get_mut(slots[1]).downcast_mut::<usize>();
            assert_eq!(count, Some(&mut 2));
        }
    }

    #[test]
    fn bound_states_are_the_map_s_own_and_go_back() {
        let mut states = states_with(7);
        let list = (Script, Unit("unit"));
        let mut bound = list.bind(&mut states, &[0, 1]).expect("binds");
        assert_eq!(*bound.0, 7);
        *bound.0 += 1;
        list.unbind(bound, &mut states, &[0, 1]);
        assert_eq!(states.get_mut(0).downcast_mut::<usize>(), Some(&mut 8));
        assert!(states.get_mut(1).is::<()>());
    }

    #[test]
    fn states_that_do_not_match_are_not_bound_and_stay() {
        let mut states = states_with(7);
        // Slot 1 holds a unit, not a count; slot 0 given twice; a slot out of range; slots
        // that do not match the list's length.
        for slots in [&[1, 0][..], &[0, 0], &[0, 5], &[0]] {
            assert!(
                (Script, Script).bind(&mut states, slots).is_none(),
                "{slots:?}"
            );
            assert_eq!(states.get_mut(0).downcast_mut::<usize>(), Some(&mut 7));
            assert!(states.get_mut(1).is::<()>());
        }
        // A unit slot given twice binds, and keeps its unit.
        let list = (Unit("unit"), Unit("unit"));
        let bound = list.bind(&mut states, &[1, 1]).expect("binds");
        list.unbind(bound, &mut states, &[1, 1]);
        assert!(states.get_mut(1).is::<()>());
        assert_eq!(states.get_mut(0).downcast_mut::<usize>(), Some(&mut 7));
    }

    #[test]
    fn a_list_that_may_wait_is_not_bound() {
        let mut states = states_with(7);
        assert!((Waits, Unit("unit")).bind(&mut states, &[0, 1]).is_none());
        let dynamic = DynPipeline::new().with(Waits).with(Unit("unit"));
        assert!(dynamic.bind(&mut states, &[0, 1]).is_none());
        assert_eq!(states.get_mut(0).downcast_mut::<usize>(), Some(&mut 7));
    }

    /// Runs `texts` through a list's bound chain from position 0, `Script`'s state at slot 0:
    /// what became of each chunk, its text and the chunks written (with the position they
    /// run from).
    fn run_bound<L: StreamChain>(
        list: &L,
        bound: &mut L::Bound<'_>,
        states: &mut StateMap,
        texts: &[&str],
    ) -> Vec<(&'static str, Option<String>, Vec<usize>)> {
        let mut rig = Rig::new();
        let mut seen = Vec::new();
        for text in texts {
            let mut chunk = delta(text);
            let mut cx = rig.cx(states, &[0, 1]);
            let flow = name(list.run_output_stream_bound(bound, &mut cx, &mut chunk, 0));
            let from = rig.pending.drain(..).map(|(start, _)| start).collect();
            seen.push((flow, chunk.text_delta().map(str::to_owned), from));
        }
        seen
    }

    /// Behind `dyn`, a list binds its stream processors' states (each taken out of the map as
    /// its processor's type), runs the chain on them as the tuple does, and gives them back.
    #[test]
    fn a_dyn_list_binds_its_stream_states_and_gives_them_back() {
        let texts = ["a", "write", "drop", "fail", "b"];
        let dynamic = DynPipeline::new().with(Script).with(Unit("unit"));
        let mut states = states_with(7);
        let mut bound = dynamic.bind(&mut states, &[0, 1]).expect("binds");
        assert_eq!(bound.len(), 1, "the stream processor only");
        assert!(states.get_mut(0).is::<()>(), "out of the map while bound");
        let by_dyn = run_bound(&dynamic, &mut bound, &mut states, &texts);
        dynamic.unbind(bound, &mut states, &[0, 1]);
        assert_eq!(states.get_mut(0).downcast_mut::<usize>(), Some(&mut 12));
        assert!(states.get_mut(1).is::<()>());

        let tuple = (Script, Unit("unit"));
        let mut states = states_with(7);
        let mut bound = tuple.bind(&mut states, &[0, 1]).expect("binds");
        let by_tuple = run_bound(&tuple, &mut bound, &mut states, &texts);
        tuple.unbind(bound, &mut states, &[0, 1]);
        assert_eq!(by_dyn, by_tuple);
        assert_eq!(by_dyn[0], ("continue", Some("A".into()), vec![]));
        assert_eq!(
            by_dyn[1].2,
            [1],
            "a written chunk runs from after its writer"
        );
        assert_eq!((by_dyn[2].0, by_dyn[3].0), ("drop", "emit"));
    }

    /// A stream processor behind `dyn` is bound from its own position's slot, whatever its
    /// place among the list's stream processors, and steps at its own position.
    #[test]
    fn a_dyn_list_binds_a_stream_processor_from_its_own_position() {
        let mut states = states_with(7);
        let dynamic = DynPipeline::new().with(Unit("unit")).with(Script);
        // Position 0 (the unit) keeps its state in slot 1, position 1 (`Script`) in slot 0.
        let slots = [1, 0];
        let mut bound = dynamic.bind(&mut states, &slots).expect("binds");
        assert_eq!(bound.len(), 1);
        assert!(
            states.get_mut(0).is::<()>(),
            "`Script`'s state is out of the map"
        );
        let mut rig = Rig::new();
        let mut run = |start: usize| {
            let mut chunk = delta("write");
            let mut cx = rig.cx(&mut states, &slots);
            let flow = dynamic.run_output_stream_bound(&mut bound, &mut cx, &mut chunk, start);
            assert!(matches!(flow, Flow::Continue), "{flow:?}");
            let current = cx.current;
            let from: Vec<usize> = rig.pending.drain(..).map(|(start, _)| start).collect();
            (current, from)
        };
        assert_eq!(
            run(0),
            (1, vec![2]),
            "it runs at its own position, and what it writes runs from after it"
        );
        assert_eq!(run(2), (0, vec![]), "from after it, it is not called");
        dynamic.unbind(bound, &mut states, &slots);
        assert_eq!(states.get_mut(0).downcast_mut::<usize>(), Some(&mut 8));
        assert!(states.get_mut(1).is::<()>());
    }

    #[test]
    fn dyn_states_that_do_not_match_are_not_bound_and_stay() {
        let mut states = states_with(7);
        let list = DynPipeline::new().with(Script).with(Script);
        // Slot 1 holds a unit, not a count; slot 0 given twice; a slot out of range; slots
        // that do not match the list's length.
        for slots in [&[1, 0][..], &[0, 0], &[0, 5], &[0]] {
            assert!(list.bind(&mut states, slots).is_none(), "{slots:?}");
            assert_eq!(states.get_mut(0).downcast_mut::<usize>(), Some(&mut 7));
            assert!(states.get_mut(1).is::<()>());
        }
    }

    #[test]
    fn a_step_behind_dyn_is_the_step_of_the_processor_s_type() {
        let texts = ["a", "write", "warn", "drop", "fail", "b"];
        let p: ProcessorRef = boxed(Script);
        let direct = run(&texts, |cx, chunk| {
            step_now::<false, _>(&Script, cx, chunk, 1)
        });
        let behind_dyn = run(&texts, |cx, chunk| step_now::<false, _>(&*p, cx, chunk, 1));
        let listed = Streaming::new(1, p.clone());
        let in_a_list = run(&texts, |cx, chunk| {
            step_now::<false, _>(&listed, cx, chunk, 1)
        });
        let measured = run(&texts, |cx, chunk| step_now::<true, _>(&*p, cx, chunk, 1));
        assert_eq!(direct[0], ("continue", Some("A".into()), 1, vec![]));
        assert_eq!(direct[1].3.len(), 1);
        assert_eq!(
            direct[1].3[0].0, 2,
            "a written chunk runs from after its writer"
        );
        assert_eq!(direct[3].0, "drop");
        assert_eq!(direct[4].0, "emit");
        assert_eq!(direct[5], ("continue", Some("B".into()), 6, vec![]));
        let waiting: ProcessorRef = boxed(Waits);
        let waits = run(&texts, |cx, chunk| {
            futures::executor::block_on(stream_one::<false, _>(&*waiting, cx, chunk, 1))
        });
        assert_eq!(behind_dyn, direct);
        assert_eq!(
            waits, direct,
            "a hook that waits, its future in the position's slot"
        );
        assert_eq!(in_a_list, direct);
        assert_eq!(measured, direct);
    }
}
