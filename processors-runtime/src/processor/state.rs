//! Per-request processor state, keyed by processor id.

use super::DynProcessor;
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

impl StateMap {
    /// Room for `n` more processors' states.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.slots.reserve(n);
    }

    /// The slot of `p`'s id, created on first use. Processors with one id share one slot.
    pub(crate) fn slot_for(&mut self, p: &dyn DynProcessor) -> Result<usize, StateConflict> {
        let id = p.dyn_id();
        let (ty, ty_name) = p.dyn_state_type();
        if let Some(i) = self.slots.iter().position(|s| s.owner.id == id) {
            let s = &self.slots[i].owner;
            if s.ty != ty {
                return Err(StateConflict {
                    id: id.to_owned(),
                    first: s.ty_name,
                    second: ty_name,
                });
            }
            return Ok(i);
        }
        let id = match p.dyn_static_id() {
            Some(fixed) if fixed == id => Cow::Borrowed(fixed),
            _ => Cow::Owned(id.to_owned()),
        };
        self.create_for(&SlotOwner { id, ty, ty_name }, p);
        Ok(self.slots.len() - 1)
    }

    /// Whose each slot is, in order.
    pub(crate) fn owners(&self) -> impl Iterator<Item = &SlotOwner> {
        self.slots.iter().map(|s| &s.owner)
    }

    /// A new slot for `owner`, whom [`owners`](Self::owners) gave for `p`, with a fresh state
    /// (from `p`, or the unit for a unit state): what [`slot_for`](Self::slot_for) makes,
    /// without asking `p` for its id and type.
    pub(crate) fn create_for(&mut self, owner: &SlotOwner, p: &dyn DynProcessor) {
        // A unit state (a processor without one) is the unit: not asked of the processor.
        let value: Box<dyn Any + Send> = match owner.ty == TypeId::of::<()>() {
            true => Box::new(()),
            false => p.dyn_new_state(),
        };
        self.slots.push(StateEntry {
            owner: owner.clone(),
            value,
        });
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
