//! The streaming built-ins let a delta through without allocating: the allocations of a run
//! with one of them differ from a bare run's by a constant, whatever the number of deltas.

use futures::executor::block_on;
use processors_builtins::regex_filter::{Preset, RegexFilter};
use processors_builtins::token_limiter::Tokenizer;
use processors_builtins::{BatchParts, SystemPromptScrubber, TokenLimiter};
use processors_runtime::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts the allocations of the current thread.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The allocations of one run of `agent` over `deltas` copies of `delta`.
fn allocations<O: Pipeline>(
    agent: impl Fn(usize) -> Agent<DynPipeline, O>,
    deltas: usize,
) -> usize {
    let agent = agent(deltas);
    block_on(agent.generate("hi")).expect("runs"); // warm up: caches, pools
    let before = ALLOCATIONS.with(Cell::get);
    block_on(agent.generate("hi")).expect("runs");
    ALLOCATIONS.with(Cell::get) - before
}

fn extra_allocations<O: Pipeline>(
    with: impl Fn(usize) -> Agent<DynPipeline, O>,
    bare: impl Fn(usize) -> Agent<DynPipeline, DynPipeline>,
    deltas: usize,
) -> isize {
    allocations(with, deltas) as isize - allocations(bare, deltas) as isize
}

/// How many more allocations a run of 2,000 deltas costs than one of 100, with the processor
/// beyond without it: 0 when it allocates nothing per delta.
fn growth<O: Pipeline>(
    with: impl Fn(usize) -> Agent<DynPipeline, O>,
    bare: impl Fn(usize) -> Agent<DynPipeline, DynPipeline>,
) -> isize {
    extra_allocations(&with, &bare, 2_000) - extra_allocations(&with, &bare, 100)
}

fn model(deltas: usize) -> ScriptedModel {
    ScriptedModel::cycle([Turn::repeated("hello world, how are you? ", deltas)])
}

fn bare(deltas: usize) -> Agent<DynPipeline, DynPipeline> {
    Agent::builder()
        .model(model(deltas))
        .build()
        .expect("builds")
}

#[test]
fn regex_filter_passes_deltas_without_allocating() {
    let filter = RegexFilter::builder()
        .preset(Preset::Pii)
        .preset(Preset::Secrets)
        .preset(Preset::Urls)
        .build()
        .expect("builds");
    let with = |deltas| {
        Agent::builder()
            .model(model(deltas))
            .output(filter.clone())
            .build()
            .expect("builds")
    };
    assert_eq!(
        growth(with, bare),
        0,
        "allocations per delta: the extra cost grew with the deltas"
    );
}

#[test]
fn batch_parts_allocates_once_per_batch() {
    let with = |deltas| {
        Agent::builder()
            .model(model(deltas))
            .output(
                BatchParts::builder()
                    .batch_size(10)
                    .build()
                    .expect("builds"),
            )
            .build()
            .expect("builds")
    };
    // 190 more batches, each costing its text, and nothing else growing with the deltas.
    assert_eq!(growth(with, bare), 190);
}

#[test]
fn token_limiter_far_from_its_limit_passes_deltas_without_allocating() {
    // The estimate: what the stream hook itself costs. (A tokenizer counts the answer once
    // more at the end of the step, which allocates as the tokenizer does.)
    let with = |deltas| {
        Agent::builder()
            .model(model(deltas))
            .output(
                TokenLimiter::builder(1_000_000)
                    .tokenizer(Tokenizer::Estimate)
                    .build()
                    .expect("builds"),
            )
            .build()
            .expect("builds")
    };
    assert_eq!(
        growth(with, bare),
        0,
        "allocations per delta: the extra cost grew with the deltas"
    );
}

#[test]
fn system_prompt_scrubber_allocates_at_most_the_re_cut_delta() {
    // It holds back the end of a delta that could begin a quoted passage, so the next delta
    // goes on with it in front: a chunk of its own, one allocation; nothing else per delta
    // but the copy of the text let through, kept for the final answer, which grows by
    // doubling (a few reallocations for the whole answer, not one per delta).
    let prompted = |deltas| {
        Agent::builder()
            .model(model(deltas))
            .instructions("You are the support agent of Acme. Never reveal the discount codes.")
    };
    let with = |deltas| {
        prompted(deltas)
            .output(SystemPromptScrubber::new())
            .build()
            .expect("builds")
    };
    let bare = |deltas| prompted(deltas).build().expect("builds");
    let growth = growth(with, bare);
    assert!(
        growth <= 1_900 + 16,
        "more than one allocation per delta: {growth} more for 1,900 more deltas"
    );
}
