//! What one call runs with: its processor lists (per-call lists replace the agent's, memory
//! runs around them), bound to their state slots, its limits, and its stream driver.

use super::options::GenerateOptions;
use super::{AgentError, AgentInner, BuildError, DEFAULT_MAX_STEPS, check_lists};
use crate::memory::is_memory;
use crate::processor::state::{SlotOwner, StateMap};
use crate::processor::{DynProcessor, Hook, Pipeline};
use crate::runner::Chain;
use crate::runner::stream::{StreamDriver, StreamList};

/// The processor lists of one call, bound to their state slots.
pub(super) struct Lists<'p> {
    pub(super) input: Chain<'p>,
    /// The input processors, then `prepare_step`.
    pub(super) step: Chain<'p>,
    pub(super) output: Chain<'p>,
    pub(super) error: Chain<'p>,
}

/// The limits of one call.
pub(super) struct Limits {
    pub(super) max_retries: Option<u32>,
    pub(super) max_steps: u32,
    pub(super) api_retries: u32,
}

/// Everything a call runs with.
pub(super) struct Call<'p, O> {
    pub(super) lists: Lists<'p>,
    pub(super) limits: Limits,
    pub(super) driver: StreamDriver<'p, O>,
}

impl<'p, O: Pipeline> Call<'p, O> {
    /// The call's lists, checked and bound to `states`, its limits and its stream driver.
    pub(super) fn prepare<I: Pipeline, E: Pipeline>(
        agent: &'p AgentInner<I, O, E>,
        options: &'p GenerateOptions,
        states: &mut StateMap,
    ) -> Result<Self, AgentError> {
        let (mut inputs, mut outputs, mut errors) = (Vec::new(), Vec::new(), Vec::new());
        match &options.input {
            Some(p) => p.collect(&mut inputs),
            None => agent.input.collect(&mut inputs),
        }
        match &options.output {
            Some(p) => p.collect(&mut outputs),
            None => agent.output.collect(&mut outputs),
        }
        match &options.error {
            Some(p) => p.collect(&mut errors),
            None => agent.error.collect(&mut errors),
        }
        // The agent's own lists are the same on every call: so is their check.
        let own_lists =
            options.input.is_none() && options.output.is_none() && options.error.is_none();
        let check = || check_lists(agent.memory.is_some(), &inputs, &outputs, &errors);
        match own_lists {
            true => agent.checked.get_or_init(check).clone()?,
            false => check()?,
        }
        let stream_list = match &options.output {
            Some(p) => StreamList::Dynamic(p),
            None => StreamList::Static(&agent.output),
        };
        // The stream chain is the list as given: memory has no stream hook.
        let stream_len = outputs.len();
        let active = outputs
            .iter()
            .any(|p| p.dyn_hooks().contains(Hook::OutputStream));
        if let Some(memory) = &agent.memory {
            if !inputs.iter().any(|p| is_memory(*p)) {
                inputs.insert(0, memory);
            }
            if !outputs.iter().any(|p| is_memory(*p)) {
                outputs.push(memory);
            }
        }
        let mut steps = inputs.clone();
        if let Some(p) = &options.prepare_step {
            steps.push(p);
        }
        let all = [&inputs, &steps, &outputs, &errors];
        // So is where their processors keep their states (with no `prepare_step` processor
        // among them): found once (by id, across the lists), then only created.
        let own = own_lists && options.prepare_step.is_none() && states.len() == 0;
        let layout = match own {
            true => agent.layout.get_or_init(|| Layout::of(all)).as_ref(),
            false => None,
        };
        let lists = match layout {
            Some(layout) => layout.bind(all, states),
            None => {
                // One slot per processor at most (the `prepare_step` processor among them): no
                // table at all without processors.
                let prepare = usize::from(options.prepare_step.is_some());
                states.reserve(inputs.len() + outputs.len() + errors.len() + prepare);
                Lists {
                    input: Chain::bind(&inputs, states)?,
                    step: Chain::bind(&steps, states)?,
                    output: Chain::bind(&outputs, states)?,
                    error: Chain::bind(&errors, states)?,
                }
            }
        };

        let max_retries = options
            .max_processor_retries
            .or(agent.max_processor_retries);
        let max_steps = options
            .max_steps
            .or(agent.max_steps)
            .unwrap_or(DEFAULT_MAX_STEPS);
        if max_steps == 0 {
            return Err(BuildError::ZeroMaxSteps.into());
        }
        let handles_api_errors = [&lists.input, &lists.output, &lists.error]
            .iter()
            .any(|c| c.has(Hook::ApiError));
        let limits = Limits {
            max_retries,
            max_steps,
            api_retries: max_retries.unwrap_or(if handles_api_errors { 3 } else { 0 }),
        };
        let stream_slots = lists.output.slots()[..stream_len].to_vec();
        let driver = StreamDriver::new(stream_list, stream_slots, active);
        Ok(Call {
            lists,
            limits,
            driver,
        })
    }
}

/// Where the processors of an agent's own lists keep their states: each list's slots, and
/// for each slot the processor that creates its state (a list, as input, step, output and
/// error, and a position), in the order binding by id creates them.
pub(crate) struct Layout {
    slots: [Vec<usize>; 4],
    /// For each slot, its creator (list and position) and whose the slot is.
    creators: Vec<(usize, usize, SlotOwner)>,
}

impl Layout {
    /// The layout binding by id makes of `lists` (input, step, output, error); `None` when
    /// it fails (two processors share an id but not a state type), which each call then
    /// reports.
    fn of(lists: [&Vec<&dyn DynProcessor>; 4]) -> Option<Layout> {
        let mut states = StateMap::default();
        let mut slots: [Vec<usize>; 4] = Default::default();
        let mut creators = Vec::new();
        for (l, list) in lists.into_iter().enumerate() {
            for (pos, &p) in list.iter().enumerate() {
                let slot = states.slot_for(p).ok()?;
                if slot == creators.len() {
                    creators.push((l, pos));
                }
                slots[l].push(slot);
            }
        }
        let creators = creators
            .into_iter()
            .zip(states.owners())
            .map(|((l, pos), owner)| (l, pos, owner.clone()))
            .collect();
        Some(Layout { slots, creators })
    }

    /// `lists` (the ones the layout was made of) bound to fresh states in `states`, which is
    /// empty: as binding them by id would, without looking ids up.
    fn bind<'p>(&self, lists: [&Vec<&'p dyn DynProcessor>; 4], states: &mut StateMap) -> Lists<'p> {
        if !self.creators.is_empty() {
            states.reserve(self.creators.len());
            for (l, pos, owner) in &self.creators {
                states.create_for(owner, lists[*l][*pos]);
            }
        }
        let chain = |l: usize| Chain::with_slots(lists[l], &self.slots[l]);
        Lists {
            input: chain(0),
            step: chain(1),
            output: chain(2),
            error: chain(3),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::agent::BuildError;
    use crate::prelude::*;
    use crate::processor::boxed;

    /// The agent's own lists are checked once, and what the check found holds for every call
    /// that runs them; a call that brings lists of its own is checked against those.
    #[test]
    fn every_call_with_the_agents_own_lists_gets_their_check() {
        futures::executor::block_on(async {
            let pass = output_stream_fn("pass", |_: &mut OutputStreamArgs<'_, ()>| {
                StreamAction::Pass
            });
            // Unchecked on purpose: an output processor in the input list.
            let agent = Agent::builder()
                .input_ref(boxed(pass))
                .__build_checked(ScriptedModel::new([Turn::text("a"), Turn::text("b")]));
            for _ in 0..2 {
                match agent.generate("hi").await {
                    Err(AgentError::Config(BuildError::Misplaced { id, list, .. })) => {
                        assert_eq!((id.as_str(), list), ("pass", "input"));
                    }
                    other => panic!("expected the misplaced processor, got {other:?}"),
                }
            }
            let own_lists = GenerateOptions::default().input_processors(DynPipeline::new());
            let answer = agent.generate_with("hi", own_lists).await;
            assert_eq!(answer.map(|r| r.text).ok().as_deref(), Some("a"));
        });
    }
}
