//! What a `generate()` call allocates: the conversation is copied into a hook's arguments
//! only for processors that read it (`Processor::READS_MESSAGES`), and a call's own
//! allocations stay within a pinned bound (BENCHMARKS.md, "generate()").

use futures::executor::block_on;
use processors::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// Passes the input on without looking at it.
macro_rules! passes {
    ($($name:ident $id:literal),*) => { $(
        struct $name;

        #[processor(id = $id)]
        impl $name {
            fn process_input(&self) {}
        }
    )* };
}

passes!(Pass0 "pass-0", Pass1 "pass-1", Pass2 "pass-2", Pass3 "pass-3", Pass4 "pass-4");

/// Passes the input on without looking at it, from an `async` hook: called with its future.
macro_rules! waits {
    ($($name:ident $id:literal),*) => { $(
        struct $name;

        #[processor(id = $id)]
        impl $name {
            async fn process_input(&self) {}
        }
    )* };
}

waits!(Wait0 "wait-0", Wait1 "wait-1", Wait2 "wait-2", Wait3 "wait-3", Wait4 "wait-4");

static READ: AtomicUsize = AtomicUsize::new(0);

/// Reads the input's messages.
struct Reader;

#[processor(id = "reader")]
impl Reader {
    fn process_input(&self, messages: Vec<Message>) {
        READ.fetch_add(
            messages.iter().map(|m| m.text().len()).sum(),
            Ordering::Relaxed,
        );
    }
}

type Input = Vec<Message>;

/// Reads them through an alias, in two hooks, one of which reads the system messages only.
struct AliasReader;

#[processor(id = "alias-reader")]
impl AliasReader {
    fn process_input(&self, messages: Input) {
        let _ = messages;
    }

    fn process_input_step(&self, system: SystemMessages) {
        let _ = system;
    }

    fn process_output_result(&self) {}
}

fn model() -> ScriptedModel {
    ScriptedModel::cycle([Turn::text("Hello there.")]).without_recording()
}

/// The allocations of one `generate()` call, after one call to warm up.
fn allocations<I: Pipeline, O: Pipeline, E: Pipeline>(agent: &Agent<I, O, E>) -> usize {
    block_on(agent.generate("What is the weather like?")).expect("runs");
    let before = ALLOCATIONS.with(Cell::get);
    block_on(agent.generate("What is the weather like?")).expect("runs");
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn hooks_are_given_copies_of_the_messages_only_where_they_read_them() {
    assert_eq!(<Pass0 as Processor>::READS_MESSAGES, Hooks::NONE);
    assert_eq!(<Reader as Processor>::READS_MESSAGES, Hooks::INPUT);
    assert_eq!(
        <AliasReader as Processor>::READS_MESSAGES,
        Hooks::INPUT.with(Hooks::INPUT_STEP)
    );
    // Through a pointer, as the pointee.
    assert_eq!(
        <std::sync::Arc<Reader> as Processor>::READS_MESSAGES,
        Hooks::INPUT
    );
}

#[test]
fn processors_that_read_no_messages_cost_no_copy_of_them() {
    let one = allocations(&agent! { model: model(), input: [Pass0] });
    let five = allocations(&agent! {
        model: model(),
        input: [Pass0, Pass1, Pass2, Pass3, Pass4],
    });
    // Not a copy of the conversation per processor (a vector, and per message its id, parts
    // and text).
    assert!(five <= one + 4, "one passing: {one}, five passing: {five}");

    // A processor that reads them gets them, copied: the count above would see it.
    READ.store(0, Ordering::Relaxed);
    let reading = allocations(&agent! { model: model(), input: [Reader] });
    assert_eq!(
        READ.load(Ordering::Relaxed),
        2 * "What is the weather like?".len()
    );
    assert!(
        reading >= one + 4,
        "one passing: {one}, one reading: {reading}"
    );
}

#[test]
fn hook_calls_reuse_the_memory_of_their_futures() {
    let one = allocations(&agent! { model: model(), input: [Wait0] });
    let five = allocations(&agent! {
        model: model(),
        input: [Wait0, Wait1, Wait2, Wait3, Wait4],
    });
    // Each `async` hook call's future (behind `dyn`) goes where the one before it was: five
    // calls allocate what one does.
    assert_eq!(five, one, "one waiting: {one}, five waiting: {five}");
}

#[test]
fn a_call_allocates_within_its_pinned_bound() {
    // One user message in, one answer out, no processor: the message, the answer, the
    // model's request and stream, the result (BENCHMARKS.md has the breakdown).
    let bare = allocations(&agent! { model: model() });
    assert!(bare <= BARE_BOUND, "{bare} allocations, bound {BARE_BOUND}");
}

/// 25 when pinned: 4 for the input (`"…".into()`: the vector, the message's parts, text and
/// id), 9 the scripted model's own, the other 12 the run's (the prompt given to the model,
/// the answer, the step, the result).
const BARE_BOUND: usize = 25;

#[test]
fn text_read_from_json_is_copied_once() {
    let read = |json: &str| {
        let before = ALLOCATIONS.with(Cell::get);
        let text: Text = serde_json::from_str(json).expect("a JSON string");
        (text, ALLOCATIONS.with(Cell::get) - before)
    };
    // Into its shared buffer, with no `String` first.
    let (text, allocations) = read(r#""a short answer""#);
    assert_eq!((text.as_ref(), allocations), ("a short answer", 1));
    // (An escape makes serde_json decode the string into a scratch buffer of its own first.)
    let (text, _) = read(r#""with an\nescape""#);
    assert_eq!(text, "with an\nescape");
}

/// Counts streamed characters in an `async` stream hook (one that could wait, and does not).
struct AsyncCount;

#[processor(id = "async-count")]
impl AsyncCount {
    async fn process_output_stream(&self, chunk: &Chunk, state: &mut usize) -> StreamAction {
        if let Some(t) = chunk.text_delta() {
            *state += t.len();
        }
        StreamAction::Pass
    }
}

/// The allocations of one `generate()` call streaming `n` deltas through `list`, after one
/// call to warm up.
fn stream_allocations(list: DynPipeline, n: usize) -> usize {
    let agent = Agent::builder()
        .model(ScriptedModel::cycle([Turn::repeated("abcd", n)]).without_recording())
        .output_pipeline(list)
        .build()
        .expect("builds");
    block_on(agent.generate("hi")).expect("runs");
    let before = ALLOCATIONS.with(Cell::get);
    block_on(agent.generate("hi")).expect("runs");
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn an_async_stream_hook_behind_dyn_allocates_no_future_per_chunk() {
    let per_chunk = |list: fn() -> DynPipeline| {
        let (few, many) = (
            stream_allocations(list(), 10),
            stream_allocations(list(), 110),
        );
        (many - few) as f64 / 100.0
    };
    let without = per_chunk(DynPipeline::new);
    let with = per_chunk(|| DynPipeline::new().with(AsyncCount).with(AsyncCount2));
    // The future of each call goes where the one before it was.
    assert!(
        with <= without,
        "per chunk: {without} allocations without the processors, {with} with them"
    );
}

/// A second one, with an id of its own.
struct AsyncCount2;

#[processor(id = "async-count-2")]
impl AsyncCount2 {
    async fn process_output_stream(&self, chunk: &Chunk, state: &mut usize) -> StreamAction {
        if let Some(t) = chunk.text_delta() {
            *state += t.len();
        }
        StreamAction::Pass
    }
}
