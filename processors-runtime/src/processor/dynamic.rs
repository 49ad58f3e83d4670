//! Processors behind a pointer: [`DynProcessor`], what the runner asks of any processor
//! besides its hooks (the hooks themselves are called through `erased`).

use super::erased::Erased;
use super::state::{SlotOwner, StateConflict, StateMap};
use super::*;
use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::sync::Arc;

/// A processor behind a pointer, for lists built at run time and per-call overrides.
///
/// Implemented for every [`Processor`], and only for them: the runner calls a processor's
/// hooks behind `dyn` through the crate's own erased calls, one per hook, which poll a hook
/// that never waits in place ([`Processor::SYNC_HOOKS`]) and keep the future of one that may
/// wait in memory reused from call to call. This trait gives what the runner asks of a
/// processor besides its hooks: its id, its hooks and its state's type. A
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
pub trait DynProcessor: Erased + Send + Sync + 'static {
    /// [`Processor::id`].
    fn dyn_id(&self) -> &str;
    /// [`Processor::STATIC_ID`]: the id, when it is the same for every value of the type.
    fn dyn_static_id(&self) -> Option<&'static str>;
    /// [`Processor::READS_MESSAGES`].
    fn dyn_reads_messages(&self) -> Hooks;
    /// [`Processor::hooks`].
    fn dyn_hooks(&self) -> Hooks;
    /// [`Processor::SYNC_HOOKS`].
    fn dyn_sync_hooks(&self) -> Hooks;
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
}

/// A shared, dynamically dispatched processor.
pub type ProcessorRef = Arc<dyn DynProcessor>;

/// Puts a processor behind an `Arc<dyn DynProcessor>`.
pub fn boxed(processor: impl Processor) -> ProcessorRef {
    Arc::new(processor)
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
    #[inline]
    fn dyn_sync_hooks(&self) -> Hooks {
        P::SYNC_HOOKS
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
}

/// A processor's state slot in a request's [`StateMap`]: found by its id, made from the
/// processor on first use.
impl StateMap {
    /// The slot of `p`'s id, created on first use. Processors with one id share one slot.
    pub(crate) fn slot_for(&mut self, p: &dyn DynProcessor) -> Result<usize, StateConflict> {
        let id = p.dyn_id();
        let (ty, ty_name) = p.dyn_state_type();
        if let Some((i, owner)) = self.find(id) {
            let (first, first_name) = owner.state_type();
            if first != ty {
                return Err(StateConflict {
                    id: id.to_owned(),
                    first: first_name,
                    second: ty_name,
                });
            }
            return Ok(i);
        }
        let id = match p.dyn_static_id() {
            Some(fixed) if fixed == id => Cow::Borrowed(fixed),
            _ => Cow::Owned(id.to_owned()),
        };
        self.create_for(&SlotOwner::new(id, ty, ty_name), p);
        Ok(self.len() - 1)
    }

    /// A new slot for `owner`, whom [`owners`](Self::owners) gave for `p`, with a fresh state
    /// (from `p`, or the unit for a unit state): what [`slot_for`](Self::slot_for) makes,
    /// without asking `p` for its id and type.
    pub(crate) fn create_for(&mut self, owner: &SlotOwner, p: &dyn DynProcessor) {
        // A unit state (a processor without one) is the unit: not asked of the processor.
        let value: Box<dyn Any + Send> = match owner.state_type().0 == TypeId::of::<()>() {
            true => Box::new(()),
            false => p.dyn_new_state(),
        };
        self.push(owner.clone(), value);
    }
}
