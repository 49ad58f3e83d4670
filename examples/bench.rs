//! The cost of a processor pipeline against a hand-written loop doing the same work, as one
//! JSON line per configuration (see BENCHMARKS.md).
//!
//! Run with `cargo run --release --example bench` (`-- stream` or `-- generate` for one
//! scenario; `-- stream 0 5` for some processor counts only).
//!
//! - `stream`: N text deltas of four characters through K pass-through input processors and
//!   K character-counting output stream processors, consumed with `agent.stream(..)`;
//!   reports time per chunk, allocations per chunk and peak heap bytes.
//! - `generate`: R `generate()` calls of a one-chunk answer; reports calls per second.
//!
//! Each is measured for tuple pipelines declared with `agent!` (`static`), for `DynPipeline`s
//! (`dynamic`), and for the hand-written baseline (`baseline`): the model's stream consumed by
//! a plain loop. `ratio_to_baseline` compares medians taken in the same run. Both scenarios
//! also measure `adapter`, the agent's contract written by hand (for the stream, its
//! per-chunk work as a `Stream` adapter: a `Chunk` for the consumer, the answer's text kept;
//! for `generate`, what a call's result holds and the run needs on the way: messages with
//! ids and times, the prompt, the answer's text, its step), and `ratio_to_adapter`.

#[path = "../benches/support/mod.rs"]
mod support;

use futures::executor::block_on;
use processors::agent::AnyAgent;
use processors::model::{ScriptedModel, Turn};
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{DELTA, Dispatch, KS};

/// The system allocator, counting live bytes, their peak, and allocation calls while
/// [`COUNTING`] is on: only in the run that measures memory, so that the timed runs pay
/// nothing for the counters (their atomic updates cost about 0.2 µs of a `generate()` call).
struct Counting;

/// Whether allocations are counted.
static COUNTING: AtomicBool = AtomicBool::new(false);
/// Bytes allocated minus bytes freed since counting started (below zero when the run frees
/// memory allocated before).
static CURRENT: AtomicIsize = AtomicIsize::new(0);
/// The highest `CURRENT` reached.
static PEAK: AtomicIsize = AtomicIsize::new(0);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

fn counting() -> bool {
    COUNTING.load(Ordering::Relaxed)
}

fn grew(by: usize) {
    let by = isize::try_from(by).unwrap_or(isize::MAX);
    let now = CURRENT.fetch_add(by, Ordering::Relaxed).saturating_add(by);
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn shrank(by: usize) {
    CURRENT.fetch_sub(isize::try_from(by).unwrap_or(isize::MAX), Ordering::Relaxed);
}

/// Counts the allocations `f` makes and the peak of the bytes it holds above what was live
/// before it: `(what f returned, allocation calls, peak bytes)`.
fn counted<T>(f: impl FnOnce() -> T) -> (T, usize, usize) {
    CURRENT.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    ALLOCS.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    let out = f();
    COUNTING.store(false, Ordering::Relaxed);
    let peak = usize::try_from(PEAK.load(Ordering::Relaxed)).unwrap_or(0);
    (out, ALLOCS.load(Ordering::Relaxed), peak)
}

// SAFETY: every call forwards to `System` with the caller's arguments unchanged; the counters
// are plain atomics and never touch the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is; the caller upholds `GlobalAlloc::alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && counting() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() && counting() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through this wrapper) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        if counting() {
            shrank(layout.size());
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was allocated by `System` with `layout`; the caller upholds the rest.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() && counting() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
            shrank(layout.size());
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// What one configuration measured.
#[derive(Clone, Copy)]
struct Measured {
    /// Median wall time of one repetition.
    median: Duration,
    /// Items (chunks or calls) per repetition.
    items: usize,
    /// Allocation calls of one repetition.
    allocs: usize,
    /// Peak live heap bytes above what was live before the repetition.
    peak_bytes: usize,
}

/// A configuration's run: returns the number of items (chunks or calls) it produced.
type Job<'a> = Box<dyn FnMut() -> usize + 'a>;

/// Runs every job once to warm up, then `reps` rounds of each job in turn (so that all see the
/// same machine load), then each once more counting memory.
fn measure(reps: usize, jobs: &mut [Job<'_>]) -> Vec<Measured> {
    for f in jobs.iter_mut() {
        f();
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(reps); jobs.len()];
    for _ in 0..reps {
        for (f, t) in jobs.iter_mut().zip(&mut times) {
            let start = Instant::now();
            f();
            t.push(start.elapsed());
        }
    }
    jobs.iter_mut()
        .zip(&mut times)
        .map(|(f, t)| {
            t.sort();
            let (items, allocs, peak_bytes) = counted(&mut *f);
            Measured {
                median: t[t.len() / 2],
                items,
                allocs,
                peak_bytes,
            }
        })
        .collect()
}

fn ns_per_item(m: &Measured) -> f64 {
    m.median.as_nanos() as f64 / m.items as f64
}

fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

/// Each scenario's configurations: both yardsticks, then both dispatch paths.
const DISPATCHES: [&str; 4] = ["baseline", "adapter", "static", "dynamic"];

/// The jobs of one configuration, in the order of [`DISPATCHES`]: both yardsticks on the
/// model, then the run on both agents.
fn jobs<'a>(
    model: &'a ScriptedModel,
    agents: &'a [Arc<dyn AnyAgent>; 2],
    base: impl Fn(&ScriptedModel) -> usize + 'a,
    adapter: impl Fn(&ScriptedModel) -> usize + 'a,
    run: impl Fn(&dyn AnyAgent) -> usize + Copy + 'a,
) -> Vec<Job<'a>> {
    vec![
        Box::new(move || base(model)),
        Box::new(move || adapter(model)),
        Box::new(move || run(&*agents[0])),
        Box::new(move || run(&*agents[1])),
    ]
}

fn agents(k: usize, turn: &Turn) -> [Arc<dyn AnyAgent>; 2] {
    [Dispatch::Static, Dispatch::Dynamic].map(|d| support::agent(d, k, turn.clone()))
}

fn stream(ks: &[usize]) {
    const NS: [usize; 2] = [10_000, 100_000];
    for &k in ks {
        // Per N: baseline, adapter, static, dynamic.
        let per_n = NS.map(|n| {
            let chars = n * DELTA.len();
            let turn = Turn::repeated(DELTA, n);
            let model = support::model(turn.clone());
            let agents = agents(k, &turn);
            let mut jobs = jobs(
                &model,
                &agents,
                |m| block_on(support::baseline(m, k, chars)),
                |m| block_on(support::adapter(m, k, chars)),
                |a| block_on(support::run_stream(a, k, chars)),
            );
            measure((1_000_000 / n).max(9), &mut jobs)
        });
        for (d, dispatch) in DISPATCHES.iter().enumerate() {
            // Allocations each extra chunk costs: the slope between the two N.
            let (small, large) = (per_n[0][d], per_n[1][d]);
            let marginal = (large.allocs as f64 - small.allocs as f64)
                / (large.items as f64 - small.items as f64);
            for (i, m) in [small, large].iter().enumerate() {
                let ns = ns_per_item(m);
                println!(
                    "{}",
                    json!({
                        "scenario": "stream",
                        "dispatch": dispatch,
                        "n": NS[i],
                        "k": k,
                        "chunks": m.items,
                        "ns_per_chunk": round(ns, 1),
                        "chunks_per_sec": round(1e9 / ns, 0),
                        "allocs_per_chunk": round(m.allocs as f64 / m.items as f64, 3),
                        "marginal_allocs_per_chunk": round(marginal, 3),
                        "peak_bytes": m.peak_bytes,
                        "text_bytes": NS[i] * DELTA.len(),
                        "ratio_to_baseline": round(ns / ns_per_item(&per_n[i][0]), 3),
                        "ratio_to_adapter": round(ns / ns_per_item(&per_n[i][1]), 3),
                    })
                );
            }
        }
    }
}

fn generate() {
    const R: usize = 2_000;
    for k in [0, 5] {
        let turn = Turn::text(DELTA);
        let model = support::model(turn.clone());
        let agents = agents(k, &turn);
        let mut jobs = jobs(
            &model,
            &agents,
            |m| {
                for _ in 0..R {
                    block_on(support::baseline(m, k, DELTA.len()));
                }
                R
            },
            |m| {
                for _ in 0..R {
                    block_on(support::run_generate_adapter(m, k, DELTA.len()));
                }
                R
            },
            |a| {
                for _ in 0..R {
                    block_on(support::run_generate(a, k, DELTA.len()));
                }
                R
            },
        );
        let measured = measure(9, &mut jobs);
        for (m, dispatch) in measured.iter().zip(DISPATCHES) {
            let ns = ns_per_item(m);
            println!(
                "{}",
                json!({
                    "scenario": "generate",
                    "dispatch": dispatch,
                    "r": R,
                    "k": k,
                    "us_per_call": round(ns / 1e3, 3),
                    "calls_per_sec": round(1e9 / ns, 0),
                    "allocs_per_call": round(m.allocs as f64 / m.items as f64, 1),
                    "ratio_to_baseline": round(ns / ns_per_item(&measured[0]), 3),
                    "ratio_to_adapter": round(ns / ns_per_item(&measured[1]), 3),
                })
            );
        }
    }
}

/// One streamed run of one configuration, unmeasured, for a profiler:
/// `once baseline|adapter|static|dynamic|wrapped-static|wrapped-dynamic K N`.
fn once(args: Vec<String>) {
    let [dispatch, k, n] = args.as_slice() else {
        eprintln!(
            "usage: bench once baseline|adapter|static|dynamic|wrapped-static|wrapped-dynamic K N"
        );
        std::process::exit(2);
    };
    let (Ok(k), Ok(n)) = (k.parse::<usize>(), n.parse::<usize>()) else {
        eprintln!("K and N are numbers");
        std::process::exit(2);
    };
    let (turn, chars) = (Turn::repeated(DELTA, n), n * DELTA.len());
    let chunks = match dispatch.as_str() {
        "baseline" => block_on(support::baseline(&support::model(turn), k, chars)),
        "adapter" => block_on(support::adapter(&support::model(turn), k, chars)),
        "static" => block_on(support::run_stream(
            &*support::agent(Dispatch::Static, k, turn),
            k,
            chars,
        )),
        "dynamic" => block_on(support::run_stream(
            &*support::agent(Dispatch::Dynamic, k, turn),
            k,
            chars,
        )),
        "wrapped-static" => block_on(support::run_wrapped(
            &*support::wrapped(Dispatch::Static, k, turn),
            chars,
        )),
        "wrapped-dynamic" => block_on(support::run_wrapped(
            &*support::wrapped(Dispatch::Dynamic, k, turn),
            chars,
        )),
        other => {
            eprintln!("unknown dispatch `{other}`");
            std::process::exit(2);
        }
    };
    println!(
        "{}",
        json!({ "dispatch": dispatch, "k": k, "n": n, "chunks": chunks })
    );
}

/// R `generate()` calls of one configuration, unmeasured, for a profiler:
/// `once-generate adapter|static|dynamic K R`.
fn once_generate(args: Vec<String>) {
    let [dispatch, k, r] = args.as_slice() else {
        eprintln!("usage: bench once-generate adapter|static|dynamic K R");
        std::process::exit(2);
    };
    let (Ok(k), Ok(r)) = (k.parse::<usize>(), r.parse::<usize>()) else {
        eprintln!("K and R are numbers");
        std::process::exit(2);
    };
    let dispatch = match dispatch.as_str() {
        "adapter" => {
            let model = support::model(Turn::text(DELTA));
            for _ in 0..r {
                block_on(support::run_generate_adapter(&model, k, DELTA.len()));
            }
            println!("{}", json!({ "dispatch": "adapter", "k": k, "calls": r }));
            return;
        }
        "static" => Dispatch::Static,
        "dynamic" => Dispatch::Dynamic,
        other => {
            eprintln!("unknown dispatch `{other}`");
            std::process::exit(2);
        }
    };
    let agent = support::agent(dispatch, k, Turn::text(DELTA));
    for _ in 0..r {
        block_on(support::run_generate(&*agent, k, DELTA.len()));
    }
    println!(
        "{}",
        json!({ "dispatch": dispatch.name(), "k": k, "calls": r })
    );
}

fn main() {
    let which = std::env::args().nth(1);
    match which.as_deref() {
        None => {
            stream(&KS);
            generate();
        }
        Some("stream") => {
            let ks: Result<Vec<usize>, _> = std::env::args().skip(2).map(|k| k.parse()).collect();
            match ks {
                Ok(ks) if ks.is_empty() => stream(&KS),
                Ok(ks) if ks.iter().all(|k| KS.contains(k)) => stream(&ks),
                _ => {
                    eprintln!("usage: bench stream [K...], each K among {KS:?}");
                    std::process::exit(2);
                }
            }
        }
        Some("generate") => generate(),
        Some("once") => once(std::env::args().skip(2).collect()),
        Some("once-generate") => once_generate(std::env::args().skip(2).collect()),
        Some(other) => {
            eprintln!(
                "unknown scenario `{other}`; use `stream [K...]`, `generate`, `once DISPATCH K N`, `once-generate DISPATCH K R` or nothing"
            );
            std::process::exit(2);
        }
    }
}
