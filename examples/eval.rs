//! How often the built-in guards that need no model are right, on labelled corpora.
//!
//! `cargo run --release --example eval -- eval/*.jsonl eval/heldout/*.jsonl` runs each guard
//! on each corpus of its kind (each sample on its own, as a fresh request), prints a table of
//! the confusion counts, precision, recall, F1, the false-positive rate on the samples that
//! should pass, and the latency of a check (per check, and per KB of text), then the same
//! figures by source, by language and by (first) category for the corpora whose samples
//! name them, and writes it
//! all, the misses included, to `target/eval.json`.
//!
//! The guards, by the corpus's name: `prompt_injection` and `injection-*`:
//! `PromptInjectionDetector` judged by `InjectionHeuristics` alone and by the trained
//! `LinearClassifier::injection` alone; `toxicity` and `toxicity-*`: `Moderation` judged by
//! `ToxicityWords` alone and by `LinearClassifier::toxicity` alone; `pii` and `pii-*`:
//! `RegexFilter` with the `pii` preset on the input and on the answer (a redaction counts as
//! flagged). A corpus of another name is run by every guard.

use processors::builtins::RegexFilter;
use processors::builtins::detector::{
    InjectionHeuristics, Judge, LinearClassifier, Moderation, PromptInjectionDetector,
    ToxicityWords,
};
use processors::builtins::regex_filter::Preset;
use processors::eval::{Corpus, Counts, Evaluation, Sample, Site, evaluate};
use serde_json::Value;

/// What groups a corpus's samples: their source, or their language.
type GroupKey = fn(&Sample) -> Option<&str>;

/// The kinds of guard, by what they look for.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Injection,
    Toxicity,
    Pii,
}

/// The kind of guard a corpus is for, by its name; `None` for every kind.
fn kind_of(name: &str) -> Option<Kind> {
    let is = |base: &str| name == base || name.starts_with(&format!("{base}-"));
    if is("prompt_injection") || is("injection") {
        Some(Kind::Injection)
    } else if is("toxicity") {
        Some(Kind::Toxicity)
    } else if is("pii") {
        Some(Kind::Pii)
    } else {
        None
    }
}

async fn run(corpus: &Corpus, kind: Kind) -> Result<Vec<Evaluation>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    match kind {
        Kind::Injection => {
            let heuristics =
                PromptInjectionDetector::builder(Judge::local(InjectionHeuristics::new()))
                    .build()?;
            out.push(evaluate("injection heuristics", heuristics, corpus, Site::Input).await);
            let classifier =
                PromptInjectionDetector::builder(Judge::local(LinearClassifier::injection()))
                    .build()?;
            out.push(evaluate("injection classifier", classifier, corpus, Site::Input).await);
        }
        Kind::Toxicity => {
            let words = Moderation::builder(Judge::local(ToxicityWords::new())).build()?;
            out.push(evaluate("toxicity words", words, corpus, Site::Input).await);
            let classifier =
                Moderation::builder(Judge::local(LinearClassifier::toxicity())).build()?;
            out.push(evaluate("toxicity classifier", classifier, corpus, Site::Input).await);
        }
        Kind::Pii => {
            let pii = RegexFilter::builder().preset(Preset::Pii).build()?;
            out.push(evaluate("regex-filter (pii)", pii, corpus, Site::Input).await);
            let pii = RegexFilter::builder().preset(Preset::Pii).build()?;
            out.push(
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
    Ok(out)
}

/// One row's figures: the counts, precision, recall, F1 and the false-positive rate.
fn figures(c: &Counts) -> String {
    format!(
        "{} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3}",
        c.true_positives,
        c.false_positives,
        c.true_negatives,
        c.false_negatives,
        c.precision(),
        c.recall(),
        c.f1(),
        c.false_positive_rate(),
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        return Err("name one corpus or more: cargo run --example eval -- eval/*.jsonl".into());
    }
    let mut runs: Vec<(Corpus, Vec<Evaluation>)> = Vec::new();
    for path in &paths {
        let corpus = Corpus::load(path)?;
        let mut all = Vec::new();
        let kinds = match kind_of(corpus.name()) {
            Some(kind) => vec![kind],
            None => vec![Kind::Injection, Kind::Toxicity, Kind::Pii],
        };
        for kind in kinds {
            all.extend(run(&corpus, kind).await?);
        }
        runs.push((corpus, all));
    }
    println!(
        "| guard | corpus | flag / pass | TP | FP | TN | FN | precision | recall | F1 | FPR | check p50 / p99 (µs) | per KB p50 / p99 (µs) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (corpus, evaluations) in &runs {
        let (flags, passes) = corpus.counts();
        for e in evaluations {
            println!(
                "| {} | {} | {flags} / {passes} | {} | {:.1} / {:.1} | {:.1} / {:.1} |",
                e.guard,
                e.corpus,
                figures(&e.counts()),
                e.latency(0.5).as_secs_f64() * 1e6,
                e.latency(0.99).as_secs_f64() * 1e6,
                e.latency_per_kb(0.5).as_secs_f64() * 1e6,
                e.latency_per_kb(0.99).as_secs_f64() * 1e6,
            );
        }
    }
    let groups: [(&str, GroupKey); 3] = [
        ("source", |s| s.source.as_deref()),
        ("language", |s| s.language.as_deref()),
        ("category", |s| s.categories.first().map(String::as_str)),
    ];
    let mut header = false;
    for (corpus, evaluations) in &runs {
        for e in evaluations {
            for (what, key) in groups {
                for (group, c) in e.by(corpus, key) {
                    if !header {
                        println!();
                        println!(
                            "| guard | corpus | by | group | flag / pass | TP | FP | TN | FN | precision | recall | F1 | FPR |"
                        );
                        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
                        header = true;
                    }
                    let (flags, passes) = c.totals();
                    println!(
                        "| {} | {} | {what} | {group} | {flags} / {passes} | {} |",
                        e.guard,
                        e.corpus,
                        figures(&c)
                    );
                }
            }
        }
    }
    let json = Value::Array(
        runs.iter()
            .flat_map(|(_, es)| es.iter().map(Evaluation::to_json))
            .collect(),
    );
    std::fs::create_dir_all("target")?;
    std::fs::write("target/eval.json", serde_json::to_string_pretty(&json)?)?;
    println!("figures and misses written to target/eval.json");
    Ok(())
}
