use super::pipeline::{BoundStream, BoundTo, ViaDyn, step_now};
use super::table::{for_each_hook, for_each_sync_hook, sync_hooks_of};
use super::*;
use crate::chunk::Chunk;
use futures::future::BoxFuture;
use std::any::{Any, TypeId};
use std::sync::Arc;

/// Declares, from the hook table, the type-erased call of each hook.
macro_rules! dyn_hook_decls {
    ($a:lifetime; $(
        $hook:ident {
            method: $method:ident, dyn_method: $dyn_method:ident, dyn_in: $dyn_in:ident,
            now: $now:ident, dyn_now: $dyn_now:ident,
            args: $args:ident, parts: $parts:ident, extractor: $extractor:ident,
            outcome: $outcome:ty,
            $($rest:tt)*
        }
    )*) => { $(
        #[doc = concat!("[`Processor::", stringify!($method), "`], with the state behind `dyn Any`.")]
        fn $dyn_method<'a>(
            &'a self,
            args: $args<'a, dyn Any + Send>,
        ) -> BoxFuture<'a, Result<$outcome, ProcessorError>>;
        #[doc = concat!("[`Processor::", stringify!($method), "`], with the state behind `dyn Any`, its future placed in `slot`, whose memory the runner reuses from call to call. The default places the boxed future of `", stringify!($dyn_method), "` there.")]
        #[doc(hidden)]
        fn $dyn_in<'a>(
            &'a self,
            args: $args<'a, dyn Any + Send>,
            slot: &'a mut FutureSlot,
        ) -> InSlot<'a, Result<$outcome, ProcessorError>> {
            slot.put(self.$dyn_method(args))
        }
    )* };
}

/// Implements, from the hook table, the type-erased call of each hook: the state is
/// downcast to the processor's own, and the call's future boxed or placed in a slot.
macro_rules! dyn_hook_impls {
    ($a:lifetime; $(
        $hook:ident {
            method: $method:ident, dyn_method: $dyn_method:ident, dyn_in: $dyn_in:ident,
            now: $now:ident, dyn_now: $dyn_now:ident,
            args: $args:ident, parts: $parts:ident, extractor: $extractor:ident,
            outcome: $outcome:ty,
            $($rest:tt)*
        }
    )*) => { $(
        fn $dyn_method<'a>(
            &'a self,
            args: $args<'a, dyn Any + Send>,
        ) -> BoxFuture<'a, Result<$outcome, ProcessorError>> {
            Box::pin(async move {
                match args.__map_state(|s| s.downcast_mut::<P::State>()) {
                    Some(args) => self.$method(args).await,
                    None => Err(state_mismatch(self)),
                }
            })
        }
        fn $dyn_in<'a>(
            &'a self,
            args: $args<'a, dyn Any + Send>,
            slot: &'a mut FutureSlot,
        ) -> InSlot<'a, Result<$outcome, ProcessorError>> {
            slot.put(async move {
                match args.__map_state(|s| s.downcast_mut::<P::State>()) {
                    Some(args) => self.$method(args).await,
                    None => Err(state_mismatch(self)),
                }
            })
        }
    )* };
}

/// Declares, from the list of hooks with a synchronous path, each one's type-erased call
/// without a future.
macro_rules! dyn_sync_hook_decls {
    ($( $hook:ident { now: $now:ident, dyn_now: $dyn_now:ident, args: $args:ident, outcome: $outcome:ty } )*) => { $(
        #[doc = concat!("The hook without a future, with the state behind `dyn Any`, when [`dyn_sync_hooks`](Self::dyn_sync_hooks) names `Hook::", stringify!($hook), "`.")]
        #[doc(hidden)]
        fn $dyn_now(&self, args: $args<'_, dyn Any + Send>) -> Result<$outcome, ProcessorError> {
            let _ = args;
            Err(super::error::not_sync(self.dyn_id(), Hook::$hook, stringify!($dyn_now)))
        }
    )* };
}

/// Implements, from the list of hooks with a synchronous path, each one's type-erased call
/// without a future: the state downcast to the processor's own.
macro_rules! dyn_sync_hook_impls {
    ($( $hook:ident { now: $now:ident, dyn_now: $dyn_now:ident, args: $args:ident, outcome: $outcome:ty } )*) => { $(
        #[inline]
        fn $dyn_now(&self, args: $args<'_, dyn Any + Send>) -> Result<$outcome, ProcessorError> {
            match args.__map_state(|s| s.downcast_mut::<P::State>()) {
                Some(args) => self.$now(args),
                None => Err(state_mismatch(self)),
            }
        }
    )* };
}

/// A processor behind a pointer, for lists built at run time and per-call overrides.
///
/// Implemented for every [`Processor`]. The runner calls a hook that never waits without a
/// future, and places the future of one that may wait in memory it reuses from call to call
/// ([`FutureSlot`]: one for the hooks of a run, one per position of the stream chain). A
/// [`DynPipeline`](super::DynPipeline) holds [`ProcessorRef`]s (`Arc<dyn DynProcessor>`), so
/// a list can be made from configuration read at run time, and replaced per call:
///
/// ```
/// # futures::executor::block_on(async {
/// use processors_runtime::prelude::*;
/// use processors_runtime::processor::ProcessorRef;
///
/// fn by_name(name: &str) -> Option<ProcessorRef> {
///     match name {
///         "upper" => Some(boxed(output_stream_fn("upper", |a: &mut OutputStreamArgs<'_, ()>| {
///             a.chunk.clone().map_text(|t| t.to_uppercase())
///         }))),
///         "exclaim" => Some(boxed(output_stream_fn("exclaim", |a: &mut OutputStreamArgs<'_, ()>| {
///             a.chunk.clone().map_text(|t| t.replace('.', "!"))
///         }))),
///         _ => None,
///     }
/// }
///
/// let configured = "upper,exclaim";
/// let list: DynPipeline = configured.split(',').filter_map(by_name).collect();
/// let ids: Vec<&str> = list.processors().iter().map(|p| p.dyn_id()).collect();
/// assert_eq!(ids, ["upper", "exclaim"]);
/// assert!(list.processors()[0].dyn_hooks().contains(Hook::OutputStream));
///
/// let agent = Agent::builder()
///     .model(ScriptedModel::cycle([Turn::text("hello.")]))
///     .output_pipeline(list)
///     .build()
///     .unwrap();
/// assert_eq!(agent.generate("hi").await.unwrap().text, "HELLO!");
///
/// // A list given for one call replaces the agent's for that call.
/// let plain = GenerateOptions::new().output_processors(DynPipeline::new());
/// assert_eq!(agent.generate_with("hi", plain).await.unwrap().text, "hello.");
/// # });
/// ```
pub trait DynProcessor: Send + Sync + 'static {
    /// [`Processor::id`].
    fn dyn_id(&self) -> &str;
    /// [`Processor::STATIC_ID`]: the id, when it is the same for every value of the type.
    fn dyn_static_id(&self) -> Option<&'static str> {
        None
    }
    /// [`Processor::READS_MESSAGES`].
    fn dyn_reads_messages(&self) -> Hooks {
        Hooks::ALL
    }
    /// [`Processor::hooks`].
    fn dyn_hooks(&self) -> Hooks;
    /// [`Processor::process_data_parts`].
    fn dyn_process_data_parts(&self) -> bool;
    /// [`Processor::keeps_stream_history`].
    fn dyn_keeps_stream_history(&self) -> bool;
    /// A fresh state value.
    fn dyn_new_state(&self) -> Box<dyn Any + Send>;
    /// The state's type and its name.
    fn dyn_state_type(&self) -> (TypeId, &'static str);
    /// The type whose hooks run: the processor's own, or the pointee's for `Arc<P>` and
    /// `&'static P`.
    fn dyn_type_id(&self) -> TypeId;
    for_each_hook!(dyn_hook_decls);
    /// `Processor::SYNC_HOOKS`: the hooks called through their `dyn_…_now` method.
    #[doc(hidden)]
    fn dyn_sync_hooks(&self) -> Hooks {
        Hooks::NONE
    }
    for_each_sync_hook!(dyn_sync_hook_decls);
    /// [`Processor::OUTPUT_STREAM_IS_SYNC`].
    fn dyn_output_stream_is_sync(&self) -> bool;
    /// [`Processor::process_output_stream_now`].
    fn dyn_process_output_stream_now(
        &self,
        args: OutputStreamArgs<'_, dyn Any + Send>,
    ) -> Result<StreamAction, ProcessorError>;
    /// Binds `state` (taken from this processor's slot) to the processor's stream step, for a
    /// run of chunks of a chain whose hooks never wait; gives it back when it is not the
    /// processor's type or the stream hook may wait (then the whole list runs unbound, each
    /// chunk through [`dyn_output_stream_step_now`](Self::dyn_output_stream_step_now)). The
    /// default binds nothing.
    #[doc(hidden)]
    fn dyn_bind_stream<'p>(
        &'p self,
        state: Box<dyn Any + Send>,
    ) -> Result<Box<dyn BoundStream + 'p>, Box<dyn Any + Send>> {
        Err(state)
    }
    /// One step of a stream chain whose hooks never wait: whether the processor takes the
    /// chunk, the call of [`dyn_process_output_stream_now`](Self::dyn_process_output_stream_now)
    /// and what its result does to the chunk. With `measure`, the call is counted and timed.
    ///
    /// The implementation for a [`Processor`] does the whole step in code compiled for its
    /// type: one virtual call per processor and chunk. The default goes through the other
    /// methods of this trait.
    #[doc(hidden)]
    fn dyn_output_stream_step_now(
        &self,
        cx: &mut StreamCx<'_>,
        chunk: &mut Chunk,
        pos: usize,
        measure: bool,
    ) -> Flow {
        let p = ViaDyn(self);
        match measure {
            true => step_now::<true, _>(&p, cx, chunk, pos),
            false => step_now::<false, _>(&p, cx, chunk, pos),
        }
    }
}

/// A shared, dynamically dispatched processor.
pub type ProcessorRef = Arc<dyn DynProcessor>;

/// Puts a processor behind an `Arc<dyn DynProcessor>`.
pub fn boxed(processor: impl Processor) -> ProcessorRef {
    Arc::new(processor)
}

pub(crate) fn state_mismatch<P: Processor>(p: &P) -> ProcessorError {
    ProcessorError::msg(format!(
        "processor `{}` got a state of another type than `{}`",
        p.id(),
        std::any::type_name::<P::State>()
    ))
}

impl<P: Processor> DynProcessor for P {
    fn dyn_id(&self) -> &str {
        self.id()
    }
    fn dyn_static_id(&self) -> Option<&'static str> {
        P::STATIC_ID
    }
    fn dyn_reads_messages(&self) -> Hooks {
        P::READS_MESSAGES
    }
    fn dyn_hooks(&self) -> Hooks {
        self.hooks()
    }
    fn dyn_process_data_parts(&self) -> bool {
        self.process_data_parts()
    }
    fn dyn_keeps_stream_history(&self) -> bool {
        self.keeps_stream_history()
    }
    fn dyn_new_state(&self) -> Box<dyn Any + Send> {
        Box::new(P::State::default())
    }
    fn dyn_state_type(&self) -> (TypeId, &'static str) {
        (TypeId::of::<P::State>(), std::any::type_name::<P::State>())
    }
    fn dyn_type_id(&self) -> TypeId {
        self.__type_id()
    }
    fn dyn_output_stream_is_sync(&self) -> bool {
        P::OUTPUT_STREAM_IS_SYNC
    }
    fn dyn_process_output_stream_now(
        &self,
        args: OutputStreamArgs<'_, dyn Any + Send>,
    ) -> Result<StreamAction, ProcessorError> {
        match args.__map_state(|s| s.downcast_mut::<P::State>()) {
            Some(args) => self.process_output_stream_now(args),
            None => Err(state_mismatch(self)),
        }
    }
    fn dyn_bind_stream<'p>(
        &'p self,
        state: Box<dyn Any + Send>,
    ) -> Result<Box<dyn BoundStream + 'p>, Box<dyn Any + Send>> {
        if !P::OUTPUT_STREAM_IS_SYNC {
            return Err(state);
        }
        let state = state.downcast::<P::State>()?;
        Ok(Box::new(BoundTo { p: self, state }))
    }
    #[inline]
    fn dyn_output_stream_step_now(
        &self,
        cx: &mut StreamCx<'_>,
        chunk: &mut Chunk,
        pos: usize,
        measure: bool,
    ) -> Flow {
        match measure {
            true => step_now::<true, Self>(self, cx, chunk, pos),
            false => step_now::<false, Self>(self, cx, chunk, pos),
        }
    }
    for_each_hook!(dyn_hook_impls);
    #[inline]
    fn dyn_sync_hooks(&self) -> Hooks {
        P::SYNC_HOOKS
    }
    for_each_sync_hook!(dyn_sync_hook_impls);
}
