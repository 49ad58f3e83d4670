//! Criterion suite: the cost of a processor pipeline against a hand-written loop.
//!
//! `cargo bench --bench pipeline`; see BENCHMARKS.md. The JSON bench binary
//! (`cargo run --release --example bench`) measures the same scenarios, with memory.

mod support;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::executor::block_on;
use processors::model::Turn;
use std::time::Duration;
use support::{DELTA, Dispatch, KS};

/// Chunks per streamed run.
const N: usize = 10_000;

fn stream(c: &mut Criterion) {
    let chars = N * DELTA.len();
    let mut g = c.benchmark_group(format!("stream/n={N}"));
    g.throughput(Throughput::Elements(N as u64));
    for k in KS {
        let model = support::model(Turn::repeated(DELTA, N));
        g.bench_with_input(BenchmarkId::new("baseline", k), &k, |b, &k| {
            b.iter(|| block_on(support::baseline(&model, k, chars)))
        });
        g.bench_with_input(BenchmarkId::new("adapter", k), &k, |b, &k| {
            b.iter(|| block_on(support::adapter(&model, k, chars)))
        });
        for d in [Dispatch::Static, Dispatch::Dynamic] {
            let agent = support::agent(d, k, Turn::repeated(DELTA, N));
            g.bench_with_input(BenchmarkId::new(d.name(), k), &k, |b, &k| {
                b.iter(|| block_on(support::run_stream(&*agent, k, chars)))
            });
            let model = support::wrapped(d, k, Turn::repeated(DELTA, N));
            let id = BenchmarkId::new(format!("wrapped-{}", d.name()), k);
            g.bench_with_input(id, &k, |b, _| {
                b.iter(|| block_on(support::run_wrapped(&*model, chars)))
            });
        }
    }
    g.finish();
}

fn generate(c: &mut Criterion) {
    let mut g = c.benchmark_group("generate");
    g.throughput(Throughput::Elements(1));
    for k in [0, 5] {
        let model = support::model(Turn::text(DELTA));
        g.bench_with_input(BenchmarkId::new("baseline", k), &k, |b, &k| {
            b.iter(|| block_on(support::baseline(&model, k, DELTA.len())))
        });
        g.bench_with_input(BenchmarkId::new("adapter", k), &k, |b, &k| {
            b.iter(|| block_on(support::run_generate_adapter(&model, k, DELTA.len())))
        });
        for d in [Dispatch::Static, Dispatch::Dynamic] {
            let agent = support::agent(d, k, Turn::text(DELTA));
            g.bench_with_input(BenchmarkId::new(d.name(), k), &k, |b, &k| {
                b.iter(|| block_on(support::run_generate(&*agent, k, DELTA.len())))
            });
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = stream, generate
}
criterion_main!(benches);
