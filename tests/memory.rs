//! What a run keeps of its answer: one buffer, shared by the response message, the step and
//! the result (`Text`), so a long answer's peak memory is its text once plus a fixed amount
//! (BENCHMARKS.md, "One copy of the text").

use futures::executor::block_on;
use processors::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts the live bytes of the current thread and their peak.
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn moved(by: isize) {
    // `try_with`: the thread's own counters may already be gone while it exits.
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + by);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is the system allocator's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            moved(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) };
        moved(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            moved(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The peak of live bytes while `f` runs (and holds what it returns), above those before.
fn peak_of<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let out = f();
    (PEAK.with(Cell::get).saturating_sub(before) as usize, out)
}

/// Counts the characters it passes on, so that the stream goes through a processor.
struct Count;

#[processor(id = "count")]
impl Count {
    fn process_output_stream(&self, chunk: &Chunk) {
        std::hint::black_box(chunk.text_delta());
    }
}

/// 280,000 bytes of text: just over a power of two, where a buffer that doubles would hold
/// almost twice the text.
const DELTAS: usize = 70_000;
const DELTA: &str = "abcd";
/// What a run holds beyond its text, whatever the text's length: its messages, chunks in
/// flight, states, the result's other fields.
const FIXED: usize = 64 * 1024;

fn long_answer() -> ScriptedModel {
    ScriptedModel::cycle([Turn::repeated(DELTA, DELTAS)]).without_recording()
}

fn assert_one_copy(result: &GenerateResult) {
    assert_eq!(result.text.len(), DELTAS * DELTA.len());
    assert!(
        result.text.shares(&result.steps[0].text),
        "the step's text is the result's buffer"
    );
    let answer = result
        .response_messages
        .iter()
        .flat_map(|m| &m.content.parts)
        .find_map(|p| match p {
            Part::Text { text } => Some(text),
            _ => None,
        })
        .expect("the answer's message has its text");
    assert!(
        result.text.shares(answer),
        "the message's text is the result's buffer"
    );
}

fn assert_peak_is_one_text(peak: usize, what: &str) {
    let text = DELTAS * DELTA.len();
    let bound = text + text * 3 / 10 + FIXED;
    assert!(
        peak <= bound,
        "{what}: peak {peak} B for {text} B of text (bound {bound} B: 1.3x the text and {FIXED} B)"
    );
}

#[test]
fn generate_keeps_the_answer_once() {
    let agent = agent! { model: long_answer(), output: [Count] };
    block_on(agent.generate("go")).expect("runs"); // warm up
    let (peak, result) = peak_of(|| block_on(agent.generate("go")).expect("runs"));
    assert_one_copy(&result);
    assert_peak_is_one_text(peak, "generate");
}

#[test]
fn stream_keeps_the_answer_once() {
    let agent = agent! { model: long_answer(), output: [Count] };
    block_on(agent.generate("go")).expect("runs"); // warm up
    let (peak, result) = peak_of(|| {
        block_on(async {
            let mut stream = agent.stream("go");
            let mut chunks = 0;
            while let Some(chunk) = futures::StreamExt::next(&mut stream).await {
                std::hint::black_box(&chunk);
                chunks += 1;
            }
            assert!(chunks > DELTAS);
            stream.finish().await.expect("runs")
        })
    });
    assert_one_copy(&result);
    assert_peak_is_one_text(peak, "stream");
}

#[test]
fn a_changed_answer_is_the_changed_text_once() {
    // An output-step processor that rewrites the answer: the step and the result hold the
    // new text, shared, and the streamed one is gone.
    struct Upper;

    #[processor(id = "upper")]
    impl Upper {
        fn process_output_step(&self, list: &mut MessageList) {
            if let Some(mut m) = list.response().last().cloned() {
                for part in &mut m.content.parts {
                    if let Part::Text { text } = part {
                        *text = text.to_uppercase().into();
                    }
                }
                assert!(list.replace(m), "the answer is in the list");
            }
        }
    }

    let agent = agent! { model: long_answer(), output: [Upper] };
    block_on(agent.generate("go")).expect("runs"); // warm up
    let (peak, result) = peak_of(|| block_on(agent.generate("go")).expect("runs"));
    assert!(result.text.starts_with("ABCDABCD"));
    assert_one_copy(&result);
    // The streamed text and its upper-case copy were both alive for a moment.
    assert_peak_is_one_text(peak / 2, "a changed answer, per copy");
}
