//! Processor lists: tuples of processors (statically dispatched) and [`DynPipeline`] (built
//! at run time). How a list runs the stream hook on a chunk is the stream chain's
//! (`runner::stream::chain`); every other hook goes through the dispatcher (`runner::dispatch`).

use super::*;
use crate::runner::stream::StreamChain;

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

/// Calls `$gen!(0 A, 1 B, …)` for each tuple length a processor list may have (1 to 16).
macro_rules! for_each_tuple {
    ($gen:ident) => {
        $gen!(0 A);
        $gen!(0 A, 1 B);
        $gen!(0 A, 1 B, 2 C);
        $gen!(0 A, 1 B, 2 C, 3 D);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N, 14 O);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N, 14 O, 15 P);
    };
}

pub(crate) use for_each_tuple;

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
