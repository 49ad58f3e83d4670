//! The stream driver: runs each chunk through the output stream chain (`processor::chain`) and hands what
//! passes to the consumer through the run's outbox (`outbox`), accounting what the step
//! produced.
//!
//! Plain chunks (text, reasoning, tool-call deltas) of a chain whose hooks never wait are
//! pulled from the model and processed without suspending the run ([`pump`]); the rest take
//! the general path ([`StreamDriver::emit`]).

pub(crate) mod outbox;

pub use crate::processor::chain::{BoundStream, StreamChain};
pub(crate) use crate::processor::chain::{
    CHUNK_TARGET, Flow, StreamCx, StreamStats, is_sync, stream_one,
};

use super::{Halt, HookError, Scope};
use crate::chunk::{Chunk, ChunkKind};
use crate::message::{Part, Text, ToolCall};
use crate::model::{ApiError, ModelStream};
use crate::processor::future_slot::FutureSlot;
use crate::processor::{DynPipeline, Hook, Pipeline};
use outbox::{AHEAD, Outbox};

/// The tracing target of the per-step stream hook summaries.
pub(crate) const STREAM_TARGET: &str = "processors::stream";
use futures::FutureExt;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll};

/// The stream chain of a run: the agent's static list or a per-call dynamic one.
pub(crate) enum StreamList<'a, O> {
    Static(&'a O),
    Dynamic(&'a DynPipeline),
}

impl<O> Clone for StreamList<'_, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<O> Copy for StreamList<'_, O> {}

impl<O: Pipeline> StreamList<'_, O> {
    async fn run(&self, cx: &mut StreamCx<'_>, chunk: &mut Chunk, start: usize) -> Flow {
        // Measured only when tracing asks: the usual chain has no trace of it.
        match (self, cx.stats.is_some()) {
            (StreamList::Static(p), false) => p.run_output_stream::<false>(cx, chunk, start).await,
            (StreamList::Dynamic(p), false) => p.run_output_stream::<false>(cx, chunk, start).await,
            (StreamList::Static(p), true) => p.run_output_stream::<true>(cx, chunk, start).await,
            (StreamList::Dynamic(p), true) => p.run_output_stream::<true>(cx, chunk, start).await,
        }
    }

    fn is_sync(&self) -> bool {
        match self {
            StreamList::Static(p) => p.stream_is_sync(),
            StreamList::Dynamic(p) => p.stream_is_sync(),
        }
    }

    /// Whether the processors are called behind `dyn`.
    fn behind_dyn(&self) -> bool {
        match self {
            StreamList::Static(p) => p.behind_dyn(),
            StreamList::Dynamic(p) => p.behind_dyn(),
        }
    }

    fn run_now(&self, cx: &mut StreamCx<'_>, chunk: &mut Chunk, start: usize) -> Flow {
        match (self, cx.stats.is_some()) {
            (StreamList::Static(p), false) => p.run_output_stream_now::<false>(cx, chunk, start),
            (StreamList::Dynamic(p), false) => p.run_output_stream_now::<false>(cx, chunk, start),
            (_, true) => self.run_now_measured(cx, chunk, start),
        }
    }

    #[cold]
    #[inline(never)]
    fn run_now_measured(&self, cx: &mut StreamCx<'_>, chunk: &mut Chunk, start: usize) -> Flow {
        match self {
            StreamList::Static(p) => p.run_output_stream_now::<true>(cx, chunk, start),
            StreamList::Dynamic(p) => p.run_output_stream_now::<true>(cx, chunk, start),
        }
    }

    /// The id of the processor at `pos`.
    fn id_at(&self, pos: usize) -> String {
        let mut list = Vec::new();
        match self {
            StreamList::Static(p) => p.collect(&mut list),
            StreamList::Dynamic(p) => p.collect(&mut list),
        }
        list.get(pos).map_or("agent", |p| p.dyn_id()).to_owned()
    }
}

/// What a step accumulates from the chunks that reached the client: a chunk a processor
/// dropped counts for nothing, a replaced one as it was replaced.
#[derive(Default)]
pub(crate) struct StepAcc {
    /// The streamed text, until the step's answer is added to the list.
    pub(crate) text: String,
    /// The same text once it is the answer's (shared with its message).
    pub(crate) answer: Text,
    pub(crate) reasoning: String,
    pub(crate) data: Vec<Part>,
    pub(crate) tool_calls: Vec<ToolCall>,
    /// The delivered chunks as model chunks, when a `process_llm_response` hook wants them.
    pub(crate) delivered: Option<Vec<ChunkKind>>,
}

/// Appends `s`, growing `buf` by at most a quarter when it is full rather than doubling it:
/// the buffer becomes the answer's only copy, and its spare capacity is what the run's memory
/// holds beyond the text. Growth stays geometric (by an eighth to a quarter), so appending
/// stays amortized O(1); capacities are steps of a fixed series (a quarter of a power of two
/// apart), so how often the buffer grows does not depend on how the text was cut.
#[inline(always)]
fn append(buf: &mut String, s: &str) {
    let needed = buf.len() + s.len();
    if needed > buf.capacity() {
        grow(buf, needed);
    }
    buf.push_str(s);
}

/// Makes room in `buf` for `needed` bytes ([`append`]'s rare case).
#[inline(never)]
fn grow(buf: &mut String, needed: usize) {
    buf.reserve_exact(capacity_step(needed) - buf.len());
}

/// The smallest capacity of the series 64, 80, 96, 112, 128, 160, … that holds `needed`.
fn capacity_step(needed: usize) -> usize {
    let needed = needed.max(64);
    let quarter = (1usize << needed.ilog2()) / 4;
    needed.div_ceil(quarter).saturating_mul(quarter)
}

impl StepAcc {
    #[inline(always)]
    fn account(&mut self, c: &Chunk) {
        if self.delivered.is_none()
            && let ChunkKind::TextDelta { text, .. } = &c.kind
        {
            // The usual chunk, in the chunk loop itself.
            append(&mut self.text, text);
            return;
        }
        self.account_any(c);
    }

    #[inline(never)]
    fn account_any(&mut self, c: &Chunk) {
        if let Some(d) = &mut self.delivered
            && !matches!(
                c.kind,
                ChunkKind::StepStart { .. } | ChunkKind::StepFinish { .. }
            )
        {
            d.push(c.kind.clone());
        }
        match &c.kind {
            ChunkKind::TextDelta { text, .. } => append(&mut self.text, text),
            ChunkKind::ReasoningDelta { text, .. } => append(&mut self.reasoning, text),
            // A call runs only if its chunk reached the client, as it reached it.
            ChunkKind::ToolCall(call) => self.tool_calls.push(call.clone()),
            ChunkKind::Data {
                name,
                data,
                transient: false,
            } => self.data.push(Part::Data {
                name: name.clone(),
                data: data.clone(),
            }),
            _ => {}
        }
    }
}

/// What the stream chain needs of the run and of the driver.
macro_rules! stream_cx {
    ($d:ident, $s:ident) => {
        StreamCx {
            states: &mut $s.states,
            slots: &$d.slots,
            histories: &mut $d.histories,
            futures: &mut $d.futures,
            message_list: &$s.list,
            request_context: &mut $s.cx,
            retry_count: $s.retry_count,
            written: &mut $d.written,
            pending: Some(&mut $d.pending),
            report: &$s.report,
            current: 0,
            stats: match $d.measure {
                true => Some(&mut $d.stats),
                false => None,
            },
        }
    };
}

/// The output stream side of a run: the chain, its state slots and histories, and what the
/// current step accumulated.
pub(crate) struct StreamDriver<'a, O: Pipeline> {
    list: StreamList<'a, O>,
    slots: Cow<'a, [usize]>,
    /// The chunks each position's processor received, for those that keep their stream
    /// history: one run's, kept across its steps (and across a harness's stream calls,
    /// `crate::testing`).
    pub(crate) histories: Vec<Vec<Chunk>>,
    /// The memory of each position's stream hook future behind `dyn`, kept from chunk to
    /// chunk; only for a list behind `dyn` whose hooks may wait.
    futures: Vec<FutureSlot>,
    /// The memory of [`emit_waiting`](Self::emit_waiting)'s future, kept from chunk to chunk.
    emit_slot: FutureSlot,
    written: Vec<ChunkKind>,
    pending: VecDeque<(usize, ChunkKind)>,
    /// Whether a processor of the chain has a stream hook.
    active: bool,
    /// Whether every stream hook of the chain runs without a future.
    sync: bool,
    /// Whether the stream hooks are counted and timed for tracing ([`Self::trace_step`]).
    measure: bool,
    /// The stream chain's states bound to their processors' types (`Some(None)`: they
    /// cannot be), kept from pull to pull while the model's chunks take the pump; put back
    /// in the request's map whenever the pump stops for anything else ([`pump_bound`]).
    bound: Option<Option<O::Bound<'a>>>,
    /// The same for a list given for the call.
    dyn_bound: Option<Option<<DynPipeline as StreamChain>::Bound<'a>>>,
    /// How many chunks still run unbound before the states are bound.
    unbound_left: usize,
    stats: StreamStats,
    pub(crate) acc: StepAcc,
}

impl<'a, O: Pipeline> StreamDriver<'a, O> {
    /// A driver for `list`, whose processors have the state slots `slots`.
    pub(crate) fn new(list: StreamList<'a, O>, slots: Cow<'a, [usize]>, active: bool) -> Self {
        let sync = list.is_sync();
        let futures = match active && !sync && list.behind_dyn() {
            true => slots.iter().map(|_| FutureSlot::new()).collect(),
            false => Vec::new(),
        };
        StreamDriver {
            sync,
            futures,
            emit_slot: FutureSlot::new(),
            histories: vec![Vec::new(); slots.len()],
            list,
            slots,
            written: Vec::new(),
            pending: VecDeque::new(),
            active,
            measure: false,
            bound: None,
            dyn_bound: None,
            unbound_left: BIND_AT - 1,
            stats: StreamStats::default(),
            acc: StepAcc::default(),
        }
    }

    /// Whether the chain's states are all in the request's map: always, but while
    /// [`pump`] is between pulls of one stretch of chunks.
    pub(crate) fn is_unbound(&self) -> bool {
        !matches!(self.bound, Some(Some(_))) && !matches!(self.dyn_bound, Some(Some(_)))
    }

    /// Starts counting and timing the chain's stream hooks for a step when a tracing
    /// subscriber listens for them; without one, nothing is measured.
    pub(crate) fn measure_step(&mut self) {
        let chunks = tracing::enabled!(target: CHUNK_TARGET, tracing::Level::TRACE);
        self.measure = self.active
            && (chunks || tracing::enabled!(target: STREAM_TARGET, tracing::Level::DEBUG));
        self.stats.chunks = chunks;
    }

    /// Reports what each stream processor did in the step, one event per processor (no span
    /// or event per chunk), and starts over.
    pub(crate) fn trace_step(&mut self, step_number: u32) {
        if !std::mem::take(&mut self.measure) || self.stats.per.is_empty() {
            return;
        }
        let mut list = Vec::new();
        match &self.list {
            StreamList::Static(p) => p.collect(&mut list),
            StreamList::Dynamic(p) => p.collect(&mut list),
        }
        for (pos, s) in self
            .stats
            .per
            .iter()
            .enumerate()
            .filter(|(_, s)| s.chunks > 0)
        {
            tracing::debug!(
                target: STREAM_TARGET,
                processor = list.get(pos).map_or("?", |p| p.dyn_id()),
                hook = Hook::OutputStream.name(),
                step = step_number,
                chunks = s.chunks,
                replaced = s.replaced,
                dropped = s.dropped,
                warned = s.warned,
                aborted = s.aborted,
                failed = s.failed,
                duration_us = s.nanos / 1_000,
                "stream hook calls of the step"
            );
        }
        self.stats.per.clear();
    }

    /// The error of a processor that panicked at position `current` of the chain.
    fn panicked(&self, current: usize, panic: &(dyn std::any::Any + Send)) -> Halt {
        panicked(self.list, current, panic)
    }

    /// What becomes of a chunk once the chain has run: it is accounted and batched for the
    /// client, dropped, or the abort halts.
    #[inline(always)]
    fn settle(&mut self, out: &mut Outbox, flow: Flow, chunk: Chunk) -> Result<(), Halt> {
        match flow {
            Flow::Continue | Flow::Emit => {
                self.acc.account(&chunk);
                out.push(chunk);
                Ok(())
            }
            Flow::Drop => Ok(()),
            Flow::Abort(tw) => Err(Halt::Abort(*tw)),
        }
    }

    /// Sends a chunk through the stream processors (unless `through` is false) and on to the
    /// client, then any data chunks the processors wrote (each from just after its writer).
    pub(crate) async fn emit(
        &mut self,
        s: &mut Scope,
        out: &mut Outbox,
        kind: ChunkKind,
        through: bool,
    ) -> Result<(), Halt> {
        if self.emits_now(through) {
            self.emit_now(s, out, kind, through)?;
        } else {
            // The chain's future is over a kilobyte: kept out of this one (which every step
            // of the run awaits, and moves), in memory reused from chunk to chunk.
            let mut slot = std::mem::take(&mut self.emit_slot);
            let ran = slot.put(self.emit_waiting(s, out, kind)).await;
            self.emit_slot = slot;
            ran?;
        }
        out.hand_over().await;
        Ok(())
    }

    /// `emit` through a chain with hooks that may wait.
    async fn emit_waiting(
        &mut self,
        s: &mut Scope,
        out: &mut Outbox,
        kind: ChunkKind,
    ) -> Result<(), Halt> {
        let mut next = Some((0, Chunk::new(out.run_id.clone(), kind)));
        while let Some((start, mut chunk)) = next.take() {
            let mut scx = stream_cx!(self, s);
            // One unwind guard for the whole chain; `current` names the processor.
            let ran = AssertUnwindSafe(self.list.run(&mut scx, &mut chunk, start))
                .catch_unwind()
                .await;
            let current = scx.current;
            let flow = ran.map_err(|panic| self.panicked(current, &*panic))?;
            self.settle(out, flow, chunk)?;
            // Hand over before the next chunk's hooks may make the run wait.
            out.hand_over().await;
            next = self
                .pending
                .pop_front()
                .map(|(start, kind)| (start, Chunk::new(out.run_id.clone(), kind)));
        }
        Ok(())
    }

    /// Whether [`emit`](Self::emit) of a chunk that goes `through` the chain (or past it)
    /// works without waiting: past the chain, or through one whose hooks never wait.
    #[inline(always)]
    pub(crate) fn emits_now(&self, through: bool) -> bool {
        !through || !self.active || self.sync
    }

    /// `emit` for a chunk of a chain that never waits: runs it and batches what passes, then
    /// the data chunks the processors wrote (each from just after its writer).
    #[inline]
    pub(crate) fn emit_now(
        &mut self,
        s: &mut Scope,
        out: &mut Outbox,
        kind: ChunkKind,
        through: bool,
    ) -> Result<(), Halt> {
        self.one_now(s, out, kind, 0, through)?;
        while let Some((start, kind)) = self.pending.pop_front() {
            self.one_now(s, out, kind, start, through)?;
        }
        Ok(())
    }

    /// One chunk through a chain that never waits.
    #[inline(always)]
    fn one_now(
        &mut self,
        s: &mut Scope,
        out: &mut Outbox,
        kind: ChunkKind,
        start: usize,
        through: bool,
    ) -> Result<(), Halt> {
        if !(through && self.active) {
            let chunk = out.stage(kind);
            self.acc.account(chunk);
            out.commit();
            return Ok(());
        }
        let list = self.list;
        let mut scx = stream_cx!(self, s);
        let mut chain = |scx: &mut StreamCx<'_>, chunk: &mut Chunk, start: usize| {
            list.run_now(scx, chunk, start)
        };
        run_one::<_, true>(&mut scx, &mut self.acc, out, kind, start, list, &mut chain)
    }
}

/// The error of a processor of `list` that panicked at position `current`.
fn panicked<O: Pipeline>(
    list: StreamList<'_, O>,
    current: usize,
    panic: &(dyn std::any::Any + Send),
) -> Halt {
    Halt::Failed(HookError::panicked(
        &list.id_at(current),
        Hook::OutputStream,
        panic,
    ))
}

/// The chunk through the pump at which a chain binds its states ([`pump_bound`]).
const BIND_AT: usize = 4;

/// `emit_now` for a chain whose hooks never wait, in the stream context `scx` built once for
/// the pull, with the states bound when it is first called ([`pump_bound`]; `bound`: not
/// tried yet, or how it went).
#[inline(always)]
fn emit_bound<'p, O: Pipeline>(
    scx: &mut StreamCx<'_>,
    acc: &mut StepAcc,
    out: &mut Outbox,
    kind: ChunkKind,
    list: &'p O,
    bound: &mut Option<Option<O::Bound<'p>>>,
) -> Result<(), Halt> {
    match bound.get_or_insert_with(|| list.bind(&mut *scx.states, scx.slots)) {
        Some(bound) => {
            let mut chain = |scx: &mut StreamCx<'_>, chunk: &mut Chunk, start: usize| {
                list.run_output_stream_bound(bound, scx, chunk, start)
            };
            emit_in(scx, acc, out, kind, StreamList::Static(list), &mut chain)
        }
        None => emit_unbound(scx, acc, out, kind, list),
    }
}

/// [`emit_bound`] for a chunk that runs before the states are bound, or through a chain
/// whose states could not be bound (two of its processors share an id, and so a state; or,
/// behind `dyn`, a slot that does not hold its processor's state type): each processor
/// looks its state up.
#[inline(never)]
fn emit_unbound<O: Pipeline>(
    scx: &mut StreamCx<'_>,
    acc: &mut StepAcc,
    out: &mut Outbox,
    kind: ChunkKind,
    list: &O,
) -> Result<(), Halt> {
    let mut chain = |scx: &mut StreamCx<'_>, chunk: &mut Chunk, start: usize| {
        list.run_output_stream_now::<false>(scx, chunk, start)
    };
    emit_in(scx, acc, out, kind, StreamList::Static(list), &mut chain)
}

/// `emit_now` in the stream context `scx` built once for the pull, with `chain` running
/// the chunks through `list`'s processors from a position; the caller guards the pull
/// against a processor's panic ([`pump_bound`]).
#[inline(always)]
fn emit_in<O: Pipeline>(
    scx: &mut StreamCx<'_>,
    acc: &mut StepAcc,
    out: &mut Outbox,
    kind: ChunkKind,
    list: StreamList<'_, O>,
    chain: &mut impl FnMut(&mut StreamCx<'_>, &mut Chunk, usize) -> Flow,
) -> Result<(), Halt> {
    run_one::<_, false>(scx, acc, out, kind, 0, list, chain)?;
    while let Some((start, kind)) = scx.pending.as_deref_mut().and_then(VecDeque::pop_front) {
        run_one::<_, false>(scx, acc, out, kind, start, list, chain)?;
    }
    Ok(())
}

/// `StreamCx::current` between chains in a pull guarded as a whole ([`pump_bound`]): a panic
/// caught then is not a processor's.
const OUTSIDE_CHAIN: usize = usize::MAX;

/// One chunk through a chain that never waits (`chain` runs it from a position), worked on
/// where it will wait for the consumer (no move between the chain and the batch). With
/// `GUARD`, a panic in the chain is caught here; without, the caller guards a whole pull, and
/// `current` tells it which processor panicked, or ([`OUTSIDE_CHAIN`]) that none did.
#[inline(always)]
fn run_one<O: Pipeline, const GUARD: bool>(
    scx: &mut StreamCx<'_>,
    acc: &mut StepAcc,
    out: &mut Outbox,
    kind: ChunkKind,
    start: usize,
    list: StreamList<'_, O>,
    chain: &mut impl FnMut(&mut StreamCx<'_>, &mut Chunk, usize) -> Flow,
) -> Result<(), Halt> {
    let chunk = out.stage(kind);
    scx.current = 0;
    let flow = match GUARD {
        true => {
            // One unwind guard for the whole chain; `current` names the processor.
            let ran = std::panic::catch_unwind(AssertUnwindSafe(|| chain(scx, chunk, start)));
            match ran {
                Ok(flow) => flow,
                Err(panic) => {
                    out.unstage();
                    return Err(panicked(list, scx.current, &*panic));
                }
            }
        }
        false => {
            let flow = chain(scx, chunk, start);
            scx.current = OUTSIDE_CHAIN;
            flow
        }
    };
    match flow {
        Flow::Continue | Flow::Emit => {
            acc.account(chunk);
            out.commit();
            Ok(())
        }
        Flow::Drop => {
            out.unstage();
            Ok(())
        }
        Flow::Abort(tw) => {
            out.unstage();
            Err(Halt::Abort(*tw))
        }
    }
}

/// A panic caught around a pull ([`pump_bound`]): a processor's (at `current`) halts the run,
/// and the chunk its chain was on, the last staged, goes no further; any other goes on
/// unwinding, as it would have without the guard.
#[cold]
#[inline(never)]
fn pull_panicked<L: Pipeline>(
    panic: Box<dyn std::any::Any + Send>,
    current: usize,
    out: &mut Outbox,
    list: &L,
) -> Poll<Pulled> {
    if current == OUTSIDE_CHAIN {
        std::panic::resume_unwind(panic);
    }
    out.unstage();
    Poll::Ready(Pulled::Halted(panicked(
        StreamList::Static(list),
        current,
        &*panic,
    )))
}

/// What the streaming loop stopped on.
pub(crate) enum Pulled {
    /// A chunk for the general path (finish, tool calls, errors, or any chunk when the chain
    /// waits).
    Item(Result<ChunkKind, ApiError>),
    /// The model's stream ended.
    End,
    /// Enough chunks are batched: let the consumer catch up.
    Full,
    /// The chain halted.
    Halted(Halt),
}

/// Where the plain chunks a [`pump`] pulls go.
pub(crate) struct PumpCx<'x, 'a, O: Pipeline> {
    pub(crate) driver: &'x mut StreamDriver<'a, O>,
    pub(crate) scope: &'x mut Scope,
    pub(crate) out: &'x mut Outbox,
    /// The model chunks, kept for `process_llm_response` when it is wanted.
    pub(crate) raw: Option<&'x mut Vec<ChunkKind>>,
    /// Whether chunks go through the stream processors (not for a replayed response).
    pub(crate) through: bool,
}

/// Pulls model chunks and runs them through a chain that never waits, without suspending,
/// until a chunk needs the general path, the batch is full, or the model has nothing ready
/// (then the batch goes to the consumer before the run waits).
pub(crate) fn pump<O: Pipeline>(
    cx: &mut Context<'_>,
    stream: &mut ModelStream,
    p: &mut PumpCx<'_, '_, O>,
) -> Poll<Pulled> {
    let (d, s, through) = (&mut *p.driver, &mut *p.scope, p.through);
    let fast = !through || !d.active || d.sync;
    if through && d.active && d.sync && !d.measure {
        return match d.list {
            StreamList::Static(list) => {
                let mut bound = d.bound.take();
                let pulled = pump_bound(cx, stream, p, list, &mut bound);
                p.driver.bound = bound;
                pulled
            }
            StreamList::Dynamic(list) => {
                let mut bound = d.dyn_bound.take();
                let pulled = pump_bound(cx, stream, p, list, &mut bound);
                p.driver.dyn_bound = bound;
                pulled
            }
        };
    }
    pump_with(
        cx,
        stream,
        p.out,
        p.raw.as_deref_mut(),
        fast,
        |out, kind| d.emit_now(s, out, kind, through),
    )
}

/// [`pump`] for a chain whose hooks never wait, with the states of `list`'s processors bound
/// to their types at the [`BIND_AT`]th chunk of each stretch of chunks through the pump (a
/// stretch ends with a chunk for the general path), not looked up and downcast for every
/// chunk. They stay bound while the pump only waits for the model or for
/// the consumer (nothing else of the run uses them then), and go back to the request's map
/// when it stops for anything else: a chunk for the general path, the end of the stream, a
/// halt. Binding and unbinding cost what a few lookups do, which an answer of one or two
/// chunks would not win back.
fn pump_bound<'a, O: Pipeline, L: Pipeline>(
    cx: &mut Context<'_>,
    stream: &mut ModelStream,
    p: &mut PumpCx<'_, 'a, O>,
    list: &'a L,
    bound: &mut Option<Option<L::Bound<'a>>>,
) -> Poll<Pulled> {
    let (d, s) = (&mut *p.driver, &mut *p.scope);
    // The chain's context is built once for the pull, not per chunk.
    let mut scx = stream_cx!(d, s);
    // One unwind guard for the pull, not one per chunk (below): `current` names the processor
    // that panicked, if one did.
    scx.current = OUTSIDE_CHAIN;
    let acc = &mut d.acc;
    let unbound = &mut d.unbound_left;
    let emit = |out: &mut Outbox, kind| {
        if bound.is_none() && *unbound > 0 {
            *unbound -= 1;
            return emit_unbound(&mut scx, acc, out, kind, list);
        }
        emit_bound(&mut scx, acc, out, kind, list, bound)
    };
    let (out, raw) = (&mut *p.out, p.raw.as_deref_mut());
    let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
        pump_with(cx, stream, out, raw, true, emit)
    }));
    let pulled = match ran {
        Ok(pulled) => pulled,
        Err(panic) => pull_panicked(panic, scx.current, p.out, list),
    };
    if !matches!(pulled, Poll::Pending | Poll::Ready(Pulled::Full)) {
        if let Some(Some(bound)) = bound.take() {
            list.unbind(bound, &mut *scx.states, scx.slots);
        }
        *unbound = BIND_AT - 1;
    }
    pulled
}

/// [`pump`]'s loop, with `emit` running each plain chunk through the chain (when `fast`:
/// the chain never waits, or is not run).
#[inline(always)]
fn pump_with(
    cx: &mut Context<'_>,
    stream: &mut ModelStream,
    out: &mut Outbox,
    mut raw: Option<&mut Vec<ChunkKind>>,
    fast: bool,
    mut emit: impl FnMut(&mut Outbox, ChunkKind) -> Result<(), Halt>,
) -> Poll<Pulled> {
    loop {
        if out.batched() >= AHEAD {
            out.flush();
            return Poll::Ready(Pulled::Full);
        }
        let kind = match stream.as_mut().poll_next(cx) {
            Poll::Pending => {
                out.flush();
                return Poll::Pending;
            }
            Poll::Ready(None) => return Poll::Ready(Pulled::End),
            Poll::Ready(Some(Ok(kind))) => kind,
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Pulled::Item(Err(e))),
        };
        let plain = matches!(
            kind,
            ChunkKind::TextDelta { .. }
                | ChunkKind::TextStart { .. }
                | ChunkKind::TextEnd { .. }
                | ChunkKind::ReasoningDelta { .. }
                | ChunkKind::ReasoningStart { .. }
                | ChunkKind::ReasoningEnd { .. }
                | ChunkKind::ToolCallDelta { .. }
        );
        if !(fast && plain) {
            return Poll::Ready(Pulled::Item(Ok(kind)));
        }
        if let Some(raw) = &mut raw {
            raw.push(kind.clone());
        }
        if let Err(halt) = emit(out, kind) {
            return Poll::Ready(Pulled::Halted(halt));
        }
    }
}

/// A cached response as a model stream.
pub(crate) fn replay(chunks: Vec<ChunkKind>) -> ModelStream {
    Box::pin(futures::stream::iter(chunks.into_iter().map(Ok)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_text_buffer_grows_by_an_eighth_to_a_quarter() {
        use super::capacity_step;
        assert_eq!(
            [1, 64, 65, 80, 81, 113, 129, 300, 1025].map(capacity_step),
            [64, 64, 80, 80, 96, 128, 160, 320, 1280]
        );
        let mut cap = 64;
        while cap < 1 << 30 {
            let next = capacity_step(cap + 1);
            assert!(
                next * 8 >= cap * 9 && next * 4 <= cap * 5,
                "{cap} -> {next}"
            );
            cap = next;
        }
    }
}
