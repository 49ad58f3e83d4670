//! What one call runs with: its processor lists (per-call lists replace the agent's, memory
//! runs around them), bound to their state slots, its limits, and its stream driver.

use super::options::GenerateOptions;
use super::{AgentError, AgentInner, BuildError, DEFAULT_MAX_STEPS, check_lists};
use crate::memory::is_memory;
use crate::processor::state::{SlotOwner, StateMap};
use crate::processor::{DynProcessor, Hook, Pipeline};
use crate::runner::stream::StreamList;
use crate::runner::{Asked, Chain, Entry, HookError};
use std::borrow::Cow;

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

/// The processors of one call in one list, each with its state slot: the input processors,
/// `prepare_step`, the output processors, then the error processors. The call's [`Lists`]
/// are ranges of it.
pub(super) struct Bound<'p> {
    entries: Vec<Entry<'p>>,
    /// Where the input processors end; then `prepare_step` (the step list is both).
    input_end: usize,
    step_end: usize,
    /// Where the output processors end; the error processors follow.
    output_end: usize,
}

impl Bound<'_> {
    /// The call's lists.
    pub(super) fn lists(&self) -> Lists<'_> {
        let e = &self.entries[..];
        Lists {
            input: Chain::new(&e[..self.input_end]),
            step: Chain::new(&e[..self.step_end]),
            output: Chain::new(&e[self.step_end..self.output_end]),
            error: Chain::new(&e[self.output_end..]),
        }
    }
}

/// Everything a call runs with: its processors bound to their slots, its limits, and what
/// its stream driver is made of.
pub(super) struct Call<'p, O> {
    pub(super) bound: Bound<'p>,
    pub(super) limits: Limits,
    pub(super) stream: StreamList<'p, O>,
    /// The state slots of the stream chain's processors.
    pub(super) stream_slots: Cow<'p, [usize]>,
    /// Whether a processor of the stream chain has the stream hook.
    pub(super) active: bool,
}

impl<'p, O: Pipeline> Call<'p, O> {
    /// The call's lists, checked and bound to `states`, and its limits.
    pub(super) fn prepare<I: Pipeline, E: Pipeline>(
        agent: &'p AgentInner<I, O, E>,
        options: &'p GenerateOptions,
        states: &mut StateMap,
    ) -> Result<Self, AgentError> {
        // The agent's own lists are the same on every call: so are their check and their
        // length.
        let own_lists =
            options.input.is_none() && options.output.is_none() && options.error.is_none();
        let known = match own_lists {
            true => agent.layout.get().and_then(Option::as_ref),
            false => None,
        };
        // Every list in one vector: input, output, error (memory and `prepare_step` are put
        // in their places after the check).
        let mut procs: Vec<&'p dyn DynProcessor> = Vec::with_capacity(
            known.map_or(0, |l| l.slots.len()) + usize::from(options.prepare_step.is_some()),
        );
        match &options.input {
            Some(p) => p.collect(&mut procs),
            None => agent.input.collect(&mut procs),
        }
        let mut input_end = procs.len();
        match &options.output {
            Some(p) => p.collect(&mut procs),
            None => agent.output.collect(&mut procs),
        }
        let mut output_end = procs.len();
        match &options.error {
            Some(p) => p.collect(&mut procs),
            None => agent.error.collect(&mut procs),
        }
        let check = || {
            let (inputs, rest) = procs.split_at(input_end);
            let (outputs, errors) = rest.split_at(output_end - input_end);
            check_lists(agent.memory.is_some(), inputs, outputs, errors)
        };
        match own_lists {
            true => agent.checked.get_or_init(check).clone()?,
            false => check()?,
        }
        let stream = match &options.output {
            Some(p) => StreamList::Dynamic(p),
            None => StreamList::Static(&agent.output),
        };
        // The stream chain is the list as given: memory has no stream hook.
        let stream_len = output_end - input_end;
        if let Some(memory) = &agent.memory {
            if !procs[input_end..output_end].iter().any(|p| is_memory(*p)) {
                procs.insert(output_end, memory);
                output_end += 1;
            }
            if !procs[..input_end].iter().any(|p| is_memory(*p)) {
                procs.insert(0, memory);
                input_end += 1;
                output_end += 1;
            }
        }
        let mut step_end = input_end;
        if let Some(p) = &options.prepare_step {
            procs.insert(input_end, p);
            step_end += 1;
            output_end += 1;
        }
        // The stream chain leads the output list: memory, if it was added, follows it.
        let stream_at = step_end;
        // Where the processors of the agent's own lists keep their states (with no
        // `prepare_step` processor among them) is the same on every call too: found once (by
        // id, across the lists), then only created.
        let own = own_lists && options.prepare_step.is_none() && states.len() == 0;
        let layout = match own {
            true => agent.layout.get_or_init(|| Layout::of(&procs)).as_ref(),
            false => None,
        };
        let stream_range = stream_at..stream_at + stream_len;
        let (entries, stream_slots) = bind(&procs, states, layout, stream_range.clone())?;
        let active = entries[stream_range]
            .iter()
            .any(|e| e.has(Hook::OutputStream));
        let bound = Bound {
            entries,
            input_end,
            step_end,
            output_end,
        };

        let limits = limits(agent, options, &bound.lists())?;
        Ok(Call {
            bound,
            limits,
            stream,
            stream_slots,
            active,
        })
    }
}

/// The entries of a call's processors `procs`, each bound to its state slot in `states` (as
/// `layout` has them, when the call runs the agent's own lists), and the slots of the stream
/// chain's (`stream`, a range of `procs`).
fn bind<'p>(
    procs: &[&'p dyn DynProcessor],
    states: &mut StateMap,
    layout: Option<&'p Layout>,
    stream: std::ops::Range<usize>,
) -> Result<(Vec<Entry<'p>>, Cow<'p, [usize]>), AgentError> {
    if let Some(layout) = layout {
        let entries = layout.bind(procs, states);
        return Ok((entries, Cow::Borrowed(&layout.slots[stream])));
    }
    // One slot per processor at most: no table at all without processors.
    states.reserve(procs.len());
    let mut entries = Vec::with_capacity(procs.len());
    for &p in procs {
        let slot = states.slot_for(p).map_err(HookError::from)?;
        entries.push(Entry {
            p,
            id: p.dyn_id(),
            slot,
            asked: Asked::of(p),
        });
    }
    let slots = entries[stream].iter().map(|e| e.slot).collect();
    Ok((entries, Cow::Owned(slots)))
}

/// A call's limits: its options' over the agent's; API-error retries default to 3 when a
/// processor of the call handles API errors, and to none otherwise.
fn limits<I, O, E>(
    agent: &AgentInner<I, O, E>,
    options: &GenerateOptions,
    lists: &Lists<'_>,
) -> Result<Limits, AgentError> {
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
    Ok(Limits {
        max_retries,
        max_steps,
        api_retries: max_retries.unwrap_or(if handles_api_errors { 3 } else { 0 }),
    })
}

/// Where the processors of an agent's own lists keep their states: each processor's slot, in
/// the order of a call's [`Bound`] list, and for each slot the processor that creates its
/// state (its position in that list), in the order binding by id creates them. What the run
/// asks of each processor is asked once too, as the lists' check is.
pub(crate) struct Layout {
    slots: Vec<usize>,
    asked: Vec<Asked>,
    /// Each processor's id when its type fixes it (`STATIC_ID`): not asked again.
    ids: Vec<Option<&'static str>>,
    /// For each slot, its creator and whose the slot is.
    creators: Vec<(usize, SlotOwner)>,
}

impl Layout {
    /// The layout binding by id makes of `procs`; `None` when it fails (two processors share
    /// an id but not a state type), which each call then reports.
    fn of(procs: &[&dyn DynProcessor]) -> Option<Layout> {
        let mut states = StateMap::default();
        let mut slots = Vec::with_capacity(procs.len());
        let mut creators = Vec::new();
        for (pos, &p) in procs.iter().enumerate() {
            let slot = states.slot_for(p).ok()?;
            if slot == creators.len() {
                creators.push(pos);
            }
            slots.push(slot);
        }
        let creators = creators
            .into_iter()
            .zip(states.owners())
            .map(|(pos, owner)| (pos, owner.clone()))
            .collect();
        let asked = procs.iter().map(|&p| Asked::of(p)).collect();
        let ids = procs
            .iter()
            .map(|&p| p.dyn_static_id().filter(|&fixed| fixed == p.dyn_id()))
            .collect();
        Some(Layout {
            slots,
            asked,
            ids,
            creators,
        })
    }

    /// `procs` (the list the layout was made of) bound to fresh states in `states`, which is
    /// empty: as binding them by id would, without looking ids up.
    fn bind<'p>(&self, procs: &[&'p dyn DynProcessor], states: &mut StateMap) -> Vec<Entry<'p>> {
        if !self.creators.is_empty() {
            states.reserve(self.creators.len());
            for (pos, owner) in &self.creators {
                states.create_for(owner, procs[*pos]);
            }
        }
        procs
            .iter()
            .zip(&self.slots)
            .zip(&self.asked)
            .zip(&self.ids)
            .map(|(((&p, &slot), &asked), id)| Entry {
                p,
                id: id.unwrap_or_else(|| p.dyn_id()),
                slot,
                asked,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::agent::BuildError;
    use crate::prelude::*;
    use crate::processor::boxed;

    /// A processor whose type declares one id and whose value reports another.
    struct Misdeclared;

    impl Processor for Misdeclared {
        type State = ();
        const HOOKS: Hooks = Hooks::INPUT;
        const STATIC_ID: Option<&'static str> = Some("declared");
        fn id(&self) -> &str {
            "actual"
        }
        async fn process_input(
            &self,
            args: InputArgs<'_, ()>,
        ) -> Result<InputOutcome, ProcessorError> {
            Err(args.abort().reason("stop").into())
        }
    }

    /// A call's lists are built from the request context when `generate`/`generate_with` is
    /// called, before the run is polled; the run itself starts when it is.
    #[test]
    fn lists_from_the_request_context_are_built_at_the_call() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let built = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&built);
        let agent = Agent::builder()
            .input_from(move |_| {
                counter.fetch_add(1, Ordering::Relaxed);
                DynPipeline::new()
            })
            .model(ScriptedModel::new([Turn::text("a")]))
            .build()
            .expect("the agent builds");
        let run = agent.generate("hi");
        assert_eq!(built.load(Ordering::Relaxed), 1);
        let result = futures::executor::block_on(run).expect("the run ends");
        assert_eq!(result.text, "a");
        assert_eq!(built.load(Ordering::Relaxed), 1);
    }

    /// The layout keeps a processor's id only when its type's id is the one it reports: a
    /// trip wire names the processor by `id()`, on the first call and on later ones.
    #[test]
    fn the_layout_keeps_only_ids_the_processors_report() {
        futures::executor::block_on(async {
            let agent = Agent::builder()
                .input_ref(boxed(Misdeclared))
                .model(ScriptedModel::new([Turn::text("a")]))
                .build()
                .expect("the agent builds");
            for _ in 0..2 {
                let result = agent.generate("hi").await.expect("the run ends");
                let tw = result.tripwire.expect("the processor aborted");
                assert_eq!(tw.processor_id, "actual");
            }
        });
    }

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
