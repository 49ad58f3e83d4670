//! Per-request processor state, keyed by processor id.

use super::HookError;
use std::any::{Any, TypeId};
use std::borrow::Cow;

/// Whose a slot is: the processor id and the state's type.
#[derive(Clone)]
pub(crate) struct SlotOwner {
    /// Borrowed when the id is static (as `#[processor]` declares it): no copy per run.
    id: Cow<'static, str>,
    ty: TypeId,
    ty_name: &'static str,
}

impl SlotOwner {
    /// The owner of a state of type `ty` (named `ty_name`) for the id `id`.
    pub(crate) fn new(id: Cow<'static, str>, ty: TypeId, ty_name: &'static str) -> Self {
        SlotOwner { id, ty, ty_name }
    }

    /// The state's type, and its name.
    pub(crate) fn state_type(&self) -> (TypeId, &'static str) {
        (self.ty, self.ty_name)
    }
}

struct StateEntry {
    owner: SlotOwner,
    value: Box<dyn Any + Send>,
}

/// One state value per processor id for one request.
#[doc(hidden)]
#[derive(Default)]
pub struct StateMap {
    slots: Vec<StateEntry>,
}

/// Two processors share an id but not a state type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StateConflict {
    pub id: String,
    pub first: &'static str,
    pub second: &'static str,
}

impl From<StateConflict> for HookError {
    fn from(c: StateConflict) -> Self {
        HookError::StateConflict {
            id: c.id,
            first: c.first,
            second: c.second,
        }
    }
}

impl StateMap {
    /// Room for `n` more processors' states.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.slots.reserve(n);
    }

    /// Whose each slot is, in order.
    pub(crate) fn owners(&self) -> impl Iterator<Item = &SlotOwner> {
        self.slots.iter().map(|s| &s.owner)
    }

    /// The slot of the id `id`, and whose it is.
    pub(crate) fn find(&self, id: &str) -> Option<(usize, &SlotOwner)> {
        let i = self.slots.iter().position(|s| s.owner.id == id)?;
        Some((i, &self.slots[i].owner))
    }

    /// A new slot for `owner`, holding `value`.
    pub(crate) fn push(&mut self, owner: SlotOwner, value: Box<dyn Any + Send>) {
        self.slots.push(StateEntry { owner, value });
    }

    /// The value of `slot`, if there is such a slot.
    pub(crate) fn get(&self, slot: usize) -> Option<&(dyn Any + Send)> {
        self.slots.get(slot).map(|s| &*s.value)
    }

    pub(crate) fn get_mut(&mut self, slot: usize) -> &mut (dyn Any + Send) {
        &mut *self.slots[slot].value
    }

    /// The number of slots.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Takes a slot's value out (a unit stands in), so that several processors' states can be
    /// lent at once; [`put`](Self::put) gives it back.
    pub(crate) fn take(&mut self, slot: usize) -> Box<dyn Any + Send> {
        std::mem::replace(&mut self.slots[slot].value, Box::new(()))
    }

    /// Gives back a value [`take`](Self::take) took.
    pub(crate) fn put(&mut self, slot: usize, value: Box<dyn Any + Send>) {
        self.slots[slot].value = value;
    }
}
