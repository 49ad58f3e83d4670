//! Processor lists: tuples of processors (statically dispatched) and [`DynPipeline`] (built
//! at run time). How a list runs the stream hook on a chunk is the stream chain's
//! (`processor::chain`); every other hook goes through the dispatcher (`runner::dispatch`).

use super::call::Called;
use super::chain::{
    BoundStream, Flow, StreamCall, StreamChain, StreamCx, is_sync, step_bound, step_now, stream_one,
};
use super::future_slot::FutureSlot;
use super::state::StateMap;
use super::tuples::for_each_tuple;
use super::*;
use crate::chunk::Chunk;
use std::any::Any;

/// An ordered list of processors: a tuple of [`Processor`]s (statically dispatched) or a
/// [`DynPipeline`] (built at run time).
///
/// ```
/// use processors_runtime::prelude::*;
/// struct A;
/// impl Processor for A {
///     type State = ();
///     const HOOKS: Hooks = Hooks::NONE;
///     fn id(&self) -> &str { "a" }
/// }
/// fn takes(_: impl Pipeline) {}
/// takes(());
/// takes((A,));
/// takes((A, A));
/// takes(DynPipeline::new().with(A));
/// ```
pub trait Pipeline: StreamChain + Send + Sync + 'static {
    /// Pushes every processor, in order.
    fn collect<'a>(&'a self, out: &mut Vec<&'a dyn DynProcessor>);
}

impl Pipeline for () {
    fn collect<'a>(&'a self, _: &mut Vec<&'a dyn DynProcessor>) {}
}

macro_rules! tuple_pipeline {
    ($($idx:tt $T:ident),+) => {
        impl<$($T: Processor),+> Pipeline for ($($T,)+) {
            fn collect<'a>(&'a self, out: &mut Vec<&'a dyn DynProcessor>) {
                out.reserve([$($idx),+].len());
                $( out.push(&self.$idx); )+
            }
        }
    };
}

for_each_tuple!(tuple_pipeline);

/// A processor list built at run time: processors of any types, each behind an
/// `Arc<dyn DynProcessor>` (see [`DynProcessor`] for a list made from configuration).
///
/// ```
/// use processors_runtime::prelude::*;
///
/// let count = output_stream_fn("count", |a: &mut OutputStreamArgs<'_, usize>| *a.state += 1);
/// let mut list = DynPipeline::new().with(count);
/// list.push(boxed(input_fn("noop", |_: &mut InputArgs<'_, ()>| ())));
/// assert_eq!(list.len(), 2);
/// // Building the agent checks where each processor belongs: `noop` has no output hook.
/// let agent = Agent::builder().model(ScriptedModel::new([])).output_pipeline(list).build();
/// assert!(agent.is_err());
/// ```
#[derive(Clone, Default)]
pub struct DynPipeline {
    pub(crate) processors: Vec<ProcessorRef>,
    /// The processors with a stream hook, with their positions and what the chain asks of
    /// them, asked when each was added: the chain calls no other, and asks nothing per chunk
    /// (behind `dyn`, asking inside the call cost a virtual call per processor and chunk).
    pub(crate) streaming: Vec<Streaming>,
}

impl DynPipeline {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// The list with `p` appended.
    pub fn with(mut self, p: impl Processor) -> Self {
        self.push(boxed(p));
        self
    }

    /// Appends a processor.
    pub fn push(&mut self, p: ProcessorRef) {
        if p.dyn_hooks().contains(Hook::OutputStream) {
            self.streaming
                .push(Streaming::new(self.processors.len(), p.clone()));
        }
        self.processors.push(p);
    }

    /// The processors, in order.
    pub fn processors(&self) -> &[ProcessorRef] {
        &self.processors
    }

    /// Number of processors.
    pub fn len(&self) -> usize {
        self.processors.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.processors.is_empty()
    }
}

impl From<Vec<ProcessorRef>> for DynPipeline {
    fn from(processors: Vec<ProcessorRef>) -> Self {
        processors.into_iter().collect()
    }
}

impl FromIterator<ProcessorRef> for DynPipeline {
    fn from_iter<T: IntoIterator<Item = ProcessorRef>>(iter: T) -> Self {
        let mut list = DynPipeline::new();
        for p in iter {
            list.push(p);
        }
        list
    }
}

impl Pipeline for DynPipeline {
    fn collect<'a>(&'a self, out: &mut Vec<&'a dyn DynProcessor>) {
        out.extend(self.processors.iter().map(|p| &**p));
    }
}

// How each list runs the stream chain: the chain's side of `Pipeline`, for (), tuples and
// `DynPipeline`.

impl StreamChain for () {
    type Bound<'p> = ();
    fn bind(&self, _: &mut StateMap, _: &[usize]) -> Option<()> {
        None
    }
    fn unbind(&self, _: (), _: &mut StateMap, _: &[usize]) {}
    fn run_output_stream_bound(
        &self,
        _: &mut (),
        _: &mut StreamCx<'_>,
        _: &mut Chunk,
        _: usize,
    ) -> Flow {
        Flow::Continue
    }
    fn stream_is_sync(&self) -> bool {
        true
    }
    fn run_output_stream_now<const MEASURE: bool>(
        &self,
        _: &mut StreamCx<'_>,
        _: &mut Chunk,
        _: usize,
    ) -> Flow {
        Flow::Continue
    }
    async fn run_output_stream<'a, 'r, const MEASURE: bool>(
        &'a self,
        _: &'a mut StreamCx<'r>,
        _: &'a mut Chunk,
        _: usize,
    ) -> Flow {
        Flow::Continue
    }
}

macro_rules! tuple_chain {
    ($($idx:tt $T:ident),+) => {
        impl<$($T: Processor),+> StreamChain for ($($T,)+) {
            type Bound<'p> = ($(Box<<$T as Processor>::State>,)+);
            #[inline]
            fn bind(&self, states: &mut StateMap, slots: &[usize]) -> Option<Self::Bound<'_>> {
                const LEN: usize = [$($idx),+].len();
                if !self.stream_is_sync() {
                    return None;
                }
                let slots: [usize; LEN] = slots.try_into().ok()?;
                if slots.iter().any(|&slot| slot >= states.len()) {
                    return None;
                }
                let taken = slots.map(|slot| states.take(slot));
                // A slot given twice is taken as a unit the second time, which only a unit
                // state accepts (and a unit is all such a slot holds).
                if !($(taken[$idx].is::<<$T as Processor>::State>())&&+) {
                    // In reverse, so that a slot taken twice gets its first value back last.
                    for (slot, value) in slots.into_iter().zip(taken).rev() {
                        states.put(slot, value);
                    }
                    return None;
                }
                let mut taken = taken.into_iter();
                // In order: a tuple's fields are evaluated left to right. None fails: each
                // holds its type.
                Some(($(taken.next()?.downcast::<<$T as Processor>::State>().ok()?,)+))
            }
            #[inline]
            fn unbind(&self, bound: Self::Bound<'_>, states: &mut StateMap, slots: &[usize]) {
                // In reverse, as `bind` puts back.
                let values: [Box<dyn Any + Send>; [$($idx),+].len()] = [$(bound.$idx),+];
                for (&slot, value) in slots.iter().zip(values).rev() {
                    states.put(slot, value);
                }
            }
            #[inline]
            fn run_output_stream_bound(&self, bound: &mut Self::Bound<'_>, cx: &mut StreamCx<'_>, chunk: &mut Chunk, start: usize) -> Flow {
                $(
                    if $idx >= start {
                        match step_bound(&self.$idx, &mut *bound.$idx, cx, chunk, $idx) {
                            Flow::Continue => {}
                            other => return other,
                        }
                    }
                )+
                Flow::Continue
            }
            #[inline]
            fn stream_is_sync(&self) -> bool {
                $( is_sync(&self.$idx) )&&+
            }
            #[inline]
            fn run_output_stream_now<const MEASURE: bool>(&self, cx: &mut StreamCx<'_>, chunk: &mut Chunk, start: usize) -> Flow {
                $(
                    if $idx >= start {
                        match step_now::<MEASURE, _>(&self.$idx, cx, chunk, $idx) {
                            Flow::Continue => {}
                            other => return other,
                        }
                    }
                )+
                Flow::Continue
            }
            async fn run_output_stream<'a, 'r, const MEASURE: bool>(
                &'a self,
                cx: &'a mut StreamCx<'r>,
                chunk: &'a mut Chunk,
                start: usize,
            ) -> Flow {
                $(
                    if $idx >= start {
                        match stream_one::<MEASURE, _>(&self.$idx, cx, chunk, $idx).await {
                            Flow::Continue => {}
                            other => return other,
                        }
                    }
                )+
                Flow::Continue
            }
        }
    };
}

for_each_tuple!(tuple_chain);

impl StreamChain for DynPipeline {
    /// Each stream processor's state taken out of the request's map as its own type, behind
    /// the processor's [`BoundStream`]: a chunk then costs one virtual call per processor,
    /// without a lookup or a downcast.
    type Bound<'p> = Vec<(usize, Box<dyn BoundStream + 'p>)>;
    fn bind<'p>(&'p self, states: &mut StateMap, slots: &[usize]) -> Option<Self::Bound<'p>> {
        let mut bound = Vec::with_capacity(self.streaming.len());
        for s in &self.streaming {
            let Some(slot) = slots.get(s.pos).copied().filter(|&s| s < states.len()) else {
                self.unbind(bound, states, slots);
                return None;
            };
            match s.p.dyn_bind_stream(states.take(slot)) {
                Ok(b) => bound.push((s.pos, b)),
                // Not its type: a slot given twice is taken as a unit the second time, which
                // only a unit state accepts (and a unit is all such a slot holds).
                Err(value) => {
                    states.put(slot, value);
                    self.unbind(bound, states, slots);
                    return None;
                }
            }
        }
        Some(bound)
    }
    fn unbind(&self, bound: Self::Bound<'_>, states: &mut StateMap, slots: &[usize]) {
        // In reverse, so that a slot taken twice gets its first value back last.
        for (pos, b) in bound.into_iter().rev() {
            // `bind` took each from its position's slot: it is there.
            debug_assert!(pos < slots.len(), "a bound state without its slot");
            if let Some(&slot) = slots.get(pos) {
                states.put(slot, b.unbind());
            }
        }
    }
    fn run_output_stream_bound(
        &self,
        bound: &mut Self::Bound<'_>,
        cx: &mut StreamCx<'_>,
        chunk: &mut Chunk,
        start: usize,
    ) -> Flow {
        for (pos, b) in bound.iter_mut() {
            if *pos >= start {
                match b.step(cx, chunk, *pos) {
                    Flow::Continue => {}
                    other => return other,
                }
            }
        }
        Flow::Continue
    }
    fn stream_is_sync(&self) -> bool {
        self.processors.iter().all(|p| is_sync(&**p))
    }
    fn behind_dyn(&self) -> bool {
        true
    }
    fn run_output_stream_now<const MEASURE: bool>(
        &self,
        cx: &mut StreamCx<'_>,
        chunk: &mut Chunk,
        start: usize,
    ) -> Flow {
        for s in self.streaming.iter().filter(|s| s.pos >= start) {
            match s.call_step_now::<MEASURE>(cx, chunk, s.pos) {
                Flow::Continue => {}
                other => return other,
            }
        }
        Flow::Continue
    }
    async fn run_output_stream<'a, 'r, const MEASURE: bool>(
        &'a self,
        cx: &'a mut StreamCx<'r>,
        chunk: &'a mut Chunk,
        start: usize,
    ) -> Flow {
        for s in self.streaming.iter().filter(|s| s.pos >= start) {
            match stream_one::<MEASURE, _>(s, cx, chunk, s.pos).await {
                Flow::Continue => {}
                other => return other,
            }
        }
        Flow::Continue
    }
}

/// A stream processor of a [`DynPipeline`], with its position and what the chain asks of it,
/// asked once when it joined the list: the stream chain asks nothing of it per chunk.
#[derive(Clone)]
pub(crate) struct Streaming {
    pub(crate) pos: usize,
    pub(crate) p: ProcessorRef,
    pub(crate) data_parts: bool,
    pub(crate) history: bool,
    pub(crate) sync: bool,
}

impl Streaming {
    pub(crate) fn new(pos: usize, p: ProcessorRef) -> Self {
        Streaming {
            pos,
            data_parts: p.dyn_process_data_parts(),
            history: p.dyn_keeps_stream_history(),
            sync: p.dyn_sync_hooks().contains(Hook::OutputStream),
            p,
        }
    }
}

// A processor behind `dyn`, and a `DynPipeline`'s stream entry, as the chain calls them.

/// The erased call of a processor's stream hook, as the chain makes it.
#[inline(always)]
fn call_erased<'a>(
    p: &'a dyn DynProcessor,
    args: OutputStreamArgs<'a, dyn Any + Send>,
    slot: &'a mut FutureSlot,
) -> impl Future<Output = Result<StreamAction, ProcessorError>> + Send + 'a {
    let called = p.dyn_process_output_stream(args, Some(slot));
    async move {
        match called {
            Called::Ready(result) => result,
            Called::Waiting(future) => future.await,
        }
    }
}

/// The result of the erased call of a stream hook that never waits.
#[inline(always)]
fn call_erased_now(
    p: &dyn DynProcessor,
    args: OutputStreamArgs<'_, dyn Any + Send>,
) -> Result<StreamAction, ProcessorError> {
    match p.dyn_process_output_stream(args, None) {
        Called::Ready(result) => result,
        Called::Waiting(_) => Err(error::waited(p.dyn_id(), Hook::OutputStream)),
    }
}

impl<'x> StreamCall for dyn DynProcessor + 'x {
    #[inline(always)]
    fn call_step_now<const MEASURE: bool>(
        &self,
        cx: &mut StreamCx<'_>,
        chunk: &mut Chunk,
        pos: usize,
    ) -> Flow {
        self.dyn_stream_step(cx, chunk, pos, MEASURE)
    }
    fn call_hooks(&self) -> Hooks {
        self.dyn_hooks()
    }
    fn call_id(&self) -> &str {
        self.dyn_id()
    }
    fn call_data_parts(&self) -> bool {
        self.dyn_process_data_parts()
    }
    fn call_history(&self) -> bool {
        self.dyn_keeps_stream_history()
    }
    fn call_is_sync(&self) -> bool {
        self.dyn_sync_hooks().contains(Hook::OutputStream)
    }
    fn call_now(
        &self,
        args: OutputStreamArgs<'_, dyn Any + Send>,
    ) -> Result<StreamAction, ProcessorError> {
        call_erased_now(self, args)
    }
    const USES_SLOT: bool = true;
    fn call<'a>(
        &'a self,
        args: OutputStreamArgs<'a, dyn Any + Send>,
        slot: &'a mut FutureSlot,
    ) -> impl Future<Output = Result<StreamAction, ProcessorError>> + Send + 'a {
        call_erased(self, args, slot)
    }
}

impl StreamCall for Streaming {
    #[inline(always)]
    fn call_step_now<const MEASURE: bool>(
        &self,
        cx: &mut StreamCx<'_>,
        chunk: &mut Chunk,
        pos: usize,
    ) -> Flow {
        self.p.dyn_stream_step(cx, chunk, pos, MEASURE)
    }
    fn call_hooks(&self) -> Hooks {
        Hooks::OUTPUT_STREAM
    }
    fn call_id(&self) -> &str {
        self.p.dyn_id()
    }
    #[inline]
    fn call_data_parts(&self) -> bool {
        self.data_parts
    }
    #[inline]
    fn call_history(&self) -> bool {
        self.history
    }
    #[inline]
    fn call_is_sync(&self) -> bool {
        self.sync
    }
    #[inline]
    fn call_now(
        &self,
        args: OutputStreamArgs<'_, dyn Any + Send>,
    ) -> Result<StreamAction, ProcessorError> {
        call_erased_now(&*self.p, args)
    }
    const USES_SLOT: bool = true;
    fn call<'a>(
        &'a self,
        args: OutputStreamArgs<'a, dyn Any + Send>,
        slot: &'a mut FutureSlot,
    ) -> impl Future<Output = Result<StreamAction, ProcessorError>> + Send + 'a {
        call_erased(&*self.p, args, slot)
    }
}
