//! The erased call of each hook: how the runner calls a processor it holds behind
//! `dyn DynProcessor`, with the state behind `dyn Any`.
//!
//! One call per hook, generated from the hook table. The implementation for a [`Processor`]
//! downcasts the state to the processor's own, then either polls the hook's future once where
//! it stands, when [`Processor::SYNC_HOOKS`] says the hook never waits ([`Called::Ready`]: no
//! future is kept), or places the future in the caller's [`FutureSlot`], memory reused from
//! call to call ([`Called::Waiting`]); a caller that knows the hook never waits gives no slot. The trait is the crate's own: it is a supertrait of
//! [`DynProcessor`] that no code outside the crate can name.

use super::call::{Called, result_now, state_mismatch};
use super::chain::{BoundStream, BoundTo, Flow, StreamCx, step_now};
use super::future_slot::FutureSlot;
use super::table::for_each_hook;
use super::*;
use crate::chunk::Chunk;
use std::any::Any;

/// Declares, from the hook table, each hook's erased call.
macro_rules! erased_decls {
    ($a:lifetime; $(
        $hook:ident {
            method: $method:ident, dyn_method: $dyn_method:ident,
            args: $args:ident, parts: $parts:ident, extractor: $extractor:ident,
            outcome: $outcome:ty, context: $context:ident,
            $($rest:tt)*
        }
    )*) => { $(
        #[doc = concat!("[`Processor::", stringify!($method), "`], with the state behind `dyn Any`.")]
        fn $dyn_method<'a>(
            &'a self,
            args: $args<'a, dyn Any + Send>,
            slot: Option<&'a mut FutureSlot>,
        ) -> Called<'a, $outcome>;
    )* };
}

/// Implements, from the hook table, each hook's erased call for a [`Processor`].
macro_rules! erased_impls {
    ($a:lifetime; $(
        $hook:ident {
            method: $method:ident, dyn_method: $dyn_method:ident,
            args: $args:ident, parts: $parts:ident, extractor: $extractor:ident,
            outcome: $outcome:ty, context: $context:ident,
            $($rest:tt)*
        }
    )*) => { $(
        #[inline]
        fn $dyn_method<'a>(
            &'a self,
            args: $args<'a, dyn Any + Send>,
            slot: Option<&'a mut FutureSlot>,
        ) -> Called<'a, $outcome> {
            let Some(args) = args.__map_state(|s| s.downcast_mut::<P::State>()) else {
                return Called::Ready(Err(state_mismatch(self)));
            };
            match (P::SYNC_HOOKS.contains(Hook::$hook), slot) {
                (true, _) => Called::Ready(result_now(self, Hook::$hook, self.$method(args))),
                (false, Some(slot)) => Called::Waiting(slot.put(self.$method(args))),
                (false, None) => Called::Ready(Err(error::waited(self.id(), Hook::$hook))),
            }
        }
    )* };
}

/// The calls the runner makes on a processor behind `dyn`: one per hook, and the binding of
/// a stream processor's state for a run of chunks.
pub trait Erased {
    for_each_hook!(erased_decls);

    // The stream chain's two specialisations: a chunk through a processor behind `dyn` costs
    // one call, compiled for its type.

    /// One step of a stream chain whose hooks never wait, for this processor at `pos`:
    /// whether it takes the chunk, its arguments, its hook and what the result does to the
    /// chunk. With `measure`, the call is counted and timed.
    fn dyn_stream_step(
        &self,
        cx: &mut StreamCx<'_>,
        chunk: &mut Chunk,
        pos: usize,
        measure: bool,
    ) -> Flow;

    /// Binds `state` (taken from this processor's slot) to the processor's stream hook, for a
    /// run of chunks of a chain whose hooks never wait; gives it back when it is not the
    /// processor's type or the stream hook may wait.
    fn dyn_bind_stream<'p>(
        &'p self,
        state: Box<dyn Any + Send>,
    ) -> Result<Box<dyn BoundStream + 'p>, Box<dyn Any + Send>>;
}

impl<P: Processor> Erased for P {
    for_each_hook!(erased_impls);

    #[inline]
    fn dyn_stream_step(
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

    fn dyn_bind_stream<'p>(
        &'p self,
        state: Box<dyn Any + Send>,
    ) -> Result<Box<dyn BoundStream + 'p>, Box<dyn Any + Send>> {
        if !P::SYNC_HOOKS.contains(Hook::OutputStream) {
            return Err(state);
        }
        let state = state.downcast::<P::State>()?;
        Ok(Box::new(BoundTo { p: self, state }))
    }
}
