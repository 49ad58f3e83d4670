//! How often the built-in guards that need no model are right, on labelled corpora.
//!
//! `cargo run --release --example eval -- eval/prompt_injection.jsonl eval/pii.jsonl
//! eval/toxicity.jsonl` runs
//! each guard on each corpus given (each sample on its own, as a fresh request), prints a
//! table of precision, recall, F1 and the latency of a check, and writes the figures, the
//! misses included, to `target/eval.json`. The guards: `PromptInjectionDetector` judged by
//! `InjectionHeuristics` alone, on the input, for `prompt_injection.jsonl`; `RegexFilter` with
//! the `pii` preset on the input and on the answer (a redaction counts as flagged), for
//! `pii.jsonl`; `Moderation` judged by `ToxicityWords` alone, on the input, for
//! `toxicity.jsonl`; a corpus of another name is run by every guard.

use processors::builtins::RegexFilter;
use processors::builtins::detector::{
    InjectionHeuristics, Judge, Moderation, PromptInjectionDetector, ToxicityWords,
};
use processors::builtins::regex_filter::Preset;
use processors::eval::{Corpus, Evaluation, Site, evaluate};
use serde_json::Value;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        return Err("name one corpus or more: cargo run --example eval -- eval/*.jsonl".into());
    }
    let mut corpora = Vec::new();
    for path in &paths {
        corpora.push(Corpus::load(path)?);
    }
    let mut all: Vec<Evaluation> = Vec::new();
    for corpus in &corpora {
        // Each guard on the corpora of its kind; a corpus of another kind, by every guard.
        let known = ["prompt_injection", "pii", "toxicity"].contains(&corpus.name());
        if !known || corpus.name() == "prompt_injection" {
            let heuristics =
                PromptInjectionDetector::builder(Judge::local(InjectionHeuristics::new()))
                    .build()?;
            all.push(evaluate("injection heuristics", heuristics, corpus, Site::Input).await);
        }
        if !known || corpus.name() == "toxicity" {
            let words = Moderation::builder(Judge::local(ToxicityWords::new())).build()?;
            all.push(evaluate("toxicity words", words, corpus, Site::Input).await);
        }
        if !known || corpus.name() == "pii" {
            let pii = RegexFilter::builder().preset(Preset::Pii).build()?;
            all.push(evaluate("regex-filter (pii)", pii, corpus, Site::Input).await);
            let pii = RegexFilter::builder().preset(Preset::Pii).build()?;
            all.push(
                evaluate(
                    "regex-filter (pii), on the answer",
                    pii,
                    corpus,
                    Site::Output,
                )
                .await,
            );
        }
    }
    println!(
        "| guard | corpus | flag / pass | TP | FP | TN | FN | precision | recall | F1 | check p50 / p99 (µs) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for e in &all {
        let (flags, passes) = corpora
            .iter()
            .find(|c| c.name() == e.corpus)
            .map_or((0, 0), Corpus::counts);
        println!(
            "| {} | {} | {flags} / {passes} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.1} / {:.1} |",
            e.guard,
            e.corpus,
            e.true_positives,
            e.false_positives,
            e.true_negatives,
            e.false_negatives,
            e.precision(),
            e.recall(),
            e.f1(),
            e.latency(0.5).as_secs_f64() * 1e6,
            e.latency(0.99).as_secs_f64() * 1e6,
        );
    }
    let json = Value::Array(all.iter().map(Evaluation::to_json).collect());
    std::fs::create_dir_all("target")?;
    std::fs::write("target/eval.json", serde_json::to_string_pretty(&json)?)?;
    println!("figures and misses written to target/eval.json");
    Ok(())
}
