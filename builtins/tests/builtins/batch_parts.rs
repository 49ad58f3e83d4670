//! BatchParts on agents: batches by count, size and wait, the order of every chunk, and bad
//! input.

use crate::common;

use common::*;
use futures::StreamExt;
use futures::future::BoxFuture;
use processors_builtins::BatchParts;
use processors_builtins::ConfigError;
use processors_macros::{agent, processor};
use processors_runtime::model::{ModelRequest, ModelStream};
use processors_runtime::prelude::*;
use processors_runtime::processor::DataWriter;
use serde_json::json;
use std::time::Duration;

fn batches(size: usize) -> BatchParts {
    BatchParts::builder()
        .batch_size(size)
        .build()
        .expect("a valid size")
}

/// A model that streams these chunks, pausing before each as long as it says.
struct Script(Vec<(Duration, ChunkKind)>);

impl LanguageModel for Script {
    fn provider(&self) -> &str {
        "test"
    }
    fn model_id(&self) -> &str {
        "script"
    }
    fn stream(&self, _: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        let items = self.0.clone();
        Box::pin(async move {
            let stream = futures::stream::iter(items).map(|(pause, kind)| {
                std::thread::sleep(pause);
                Ok(kind)
            });
            Ok(Box::pin(stream) as ModelStream)
        })
    }
}

fn delta(id: &str, text: &str) -> ChunkKind {
    ChunkKind::TextDelta {
        id: id.into(),
        text: text.into(),
    }
}

fn finish() -> ChunkKind {
    ChunkKind::Finish {
        finish_reason: FinishReason::Stop,
        usage: Usage::default(),
    }
}

#[test]
fn deltas_go_in_batches_and_the_text_end_sends_the_last() {
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "a", "b", "c", "d", "e", "f", "g",
        ])]))
        .output(batches(3))
        .build()
        .expect("builds");
    let (chunks, result) = stream(&agent, "hi", GenerateOptions::new());
    assert_eq!(deltas(&chunks), ["abc", "def", "g"]);
    let text: Vec<String> = types(&chunks)
        .into_iter()
        .filter(|t| t.starts_with("text-"))
        .collect();
    assert_eq!(
        text,
        [
            "text-start",
            "text-delta",
            "text-delta",
            "text-delta",
            "text-end"
        ]
    );
    assert_eq!(result.expect("runs").text, "abcdefg");
}

#[test]
fn with_agent_macro_the_saved_answer_is_the_whole_text() {
    let store = InMemoryStore::new();
    let agent = agent! {
        crate: processors_runtime,
        model: ScriptedModel::new([Turn::deltas(["one ", "two ", "three ", "four"])]),
        memory: Memory::new(store.clone()),
        output: [BatchParts::new()],
    };
    let (chunks, result) = stream(&agent, "count", thread());
    assert_eq!(deltas(&chunks), ["one two three four"]);
    assert_eq!(result.expect("runs").text, "one two three four");
    assert_eq!(saved(&store)[1].text(), "one two three four");
}

#[test]
fn max_chars_sends_a_batch_once_it_is_long_enough() {
    let batcher = BatchParts::builder()
        .batch_size(100)
        .max_chars(3)
        .build()
        .expect("valid");
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "éé",
            "é",
            "a",
            "b",
            "long delta",
            "z",
        ])]))
        .output(batcher)
        .build()
        .expect("builds");
    let (chunks, _) = stream(&agent, "hi", GenerateOptions::new());
    // Characters, not bytes; a delta as long as the limit goes alone.
    assert_eq!(deltas(&chunks), ["ééé", "ablong delta", "z"]);

    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas(["long delta", "x"])]))
        .output(batcher)
        .build()
        .expect("builds");
    let (chunks, _) = stream(&agent, "hi", GenerateOptions::new());
    assert_eq!(deltas(&chunks), ["long delta", "x"]);
}

#[test]
fn max_wait_is_checked_when_the_next_delta_comes() {
    let fast = Duration::ZERO;
    let pause = Duration::from_millis(80);
    let model = Script(vec![
        (fast, ChunkKind::TextStart { id: "t".into() }),
        (fast, delta("t", "a")),
        (fast, delta("t", "b")),
        (pause, delta("t", "c")),
        (fast, delta("t", "d")),
        (fast, ChunkKind::TextEnd { id: "t".into() }),
        (fast, finish()),
    ]);
    let batcher = BatchParts::builder()
        .batch_size(10)
        .max_wait(Duration::from_millis(40))
        .build()
        .expect("valid");
    let agent = Agent::builder()
        .model(model)
        .output(batcher)
        .build()
        .expect("builds");
    let (chunks, _) = stream(&agent, "hi", GenerateOptions::new());
    // "a" and "b" waited through the pause; "c" found them late and went with them.
    assert_eq!(deltas(&chunks), ["abc", "d"]);
}

#[test]
fn a_delta_of_another_block_sends_the_batch_first() {
    let model = Script(vec![
        (Duration::ZERO, delta("t1", "a")),
        (Duration::ZERO, delta("t1", "b")),
        (Duration::ZERO, delta("t2", "c")),
        (Duration::ZERO, delta("t2", "d")),
        (Duration::ZERO, finish()),
    ]);
    let agent = Agent::builder()
        .model(model)
        .output(batches(5))
        .build()
        .expect("builds");
    let (chunks, _) = stream(&agent, "hi", GenerateOptions::new());
    let ids: Vec<(String, String)> = chunks
        .iter()
        .filter_map(|c| match &c.kind {
            ChunkKind::TextDelta { id, text } => Some((id.to_string(), text.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        ids,
        [("t1".into(), "ab".into()), ("t2".into(), "cd".into())]
    );
}

/// Writes a data chunk after every delta that ends a sentence.
#[processor(output_stream, crate = processors_runtime)]
fn mark_sentences(chunk: &Chunk, mut writer: DataWriter) {
    if chunk.text_delta().is_some_and(|t| t.ends_with('.')) {
        writer.write("sentence", json!(null));
    }
}

#[test]
fn other_chunks_keep_their_place() {
    let echo = tool(
        "echo",
        "echo",
        json!({ "type": "object" }),
        |a| async move { Ok(a) },
    );
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            Turn::deltas(["One", ".", " Two", " three"])
                .reasoning("thinking")
                .tool_call("c1", "echo", json!({})),
            Turn::deltas(["done", "."]),
        ]))
        .tool(echo)
        .output(MarkSentences)
        .output(batches(10))
        .build()
        .expect("builds");
    let (chunks, result) = stream(&agent, "hi", GenerateOptions::new());
    let seen: Vec<String> = chunks
        .iter()
        .filter_map(|c| match &c.kind {
            ChunkKind::TextDelta { text, .. } => Some(format!("text {text}")),
            ChunkKind::ReasoningDelta { .. } => Some("reasoning".into()),
            ChunkKind::Data { name, .. } => Some(format!("data-{name}")),
            ChunkKind::ToolCall(_) => Some("tool-call".into()),
            ChunkKind::ToolResult(_) => Some("tool-result".into()),
            ChunkKind::TextEnd { .. } => Some("text-end".into()),
            _ => None,
        })
        .collect();
    assert_eq!(
        seen,
        [
            "reasoning",
            "text One.",
            "data-sentence",
            "text  Two three",
            "text-end",
            "tool-call",
            "tool-result",
            "text done.",
            "data-sentence",
            "text-end",
        ]
    );
    assert_eq!(result.expect("runs").text, "One. Two threedone.");
}

#[test]
fn batch_size_one_passes_every_delta() {
    let parts = ["a", "b", "c"];
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas(parts)]))
        .output(batches(1))
        .build()
        .expect("builds");
    let (chunks, _) = stream(&agent, "hi", GenerateOptions::new());
    assert_eq!(deltas(&chunks), parts);
}

#[test]
fn empty_deltas_and_empty_answers() {
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            Turn::deltas(["", "", "x", ""]),
            Turn::empty(),
        ]))
        .output(batches(2))
        .build()
        .expect("builds");
    let (chunks, result) = stream(&agent, "hi", GenerateOptions::new());
    assert_eq!(deltas(&chunks), ["", "x"]);
    assert_eq!(result.expect("runs").text, "x");
    let (chunks, result) = stream(&agent, "again", GenerateOptions::new());
    assert!(deltas(&chunks).is_empty());
    assert_eq!(result.expect("runs").text, "");
}

#[test]
fn a_long_stream_is_batched_whole() {
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::repeated("añ🙂", 100_003)]))
        .output(batches(10))
        .build()
        .expect("builds");
    let (chunks, result) = stream(&agent, "hi", GenerateOptions::new());
    let d = deltas(&chunks);
    assert_eq!(d.len(), 10_001);
    assert_eq!(d[0], "añ🙂".repeat(10));
    assert_eq!(d[10_000], "añ🙂".repeat(3));
    assert_eq!(result.expect("runs").text, "añ🙂".repeat(100_003));
}

#[test]
fn bad_configurations_are_errors_from_build() {
    assert!(matches!(
        BatchParts::builder().batch_size(0).build(),
        Err(ConfigError::Zero {
            option: "batch_size",
            ..
        })
    ));
    assert!(matches!(
        BatchParts::builder().max_chars(0).build(),
        Err(ConfigError::Zero {
            option: "max_chars",
            ..
        })
    ));
    let error = BatchParts::builder()
        .max_wait(Duration::ZERO)
        .build()
        .unwrap_err();
    assert!(matches!(
        error,
        ConfigError::Zero {
            option: "max_wait",
            ..
        }
    ));
    assert_eq!(
        error.to_string(),
        "`max_wait` is 0: to send every delta at once, use `batch_size(1)`"
    );
}

/// With `emit_on_non_text(false)`, reasoning and `data-*` chunks join the batch in their
/// place and count as a part each (as the reference's batcher counts parts), instead of
/// sending it: the order is kept. A `text-end` still sends the batch.
#[test]
fn bi_50_without_emit_on_non_text_reasoning_joins_the_batch_in_order() {
    let reasoning = |text: &str| ChunkKind::ReasoningDelta {
        id: "r".into(),
        text: text.into(),
    };
    let run = |emit: bool| {
        let model = Script(vec![
            (Duration::ZERO, ChunkKind::TextStart { id: "t".into() }),
            (Duration::ZERO, delta("t", "a")),
            (Duration::ZERO, reasoning("hm")),
            (Duration::ZERO, delta("t", "b")),
            (Duration::ZERO, delta("t", "c")),
            (Duration::ZERO, reasoning("ok")),
            (Duration::ZERO, delta("t", "d")),
            (Duration::ZERO, ChunkKind::TextEnd { id: "t".into() }),
            (Duration::ZERO, finish()),
        ]);
        let batcher = BatchParts::builder()
            .batch_size(3)
            .emit_on_non_text(emit)
            .build()
            .unwrap();
        let agent = Agent::builder()
            .model(model)
            .output(batcher)
            .build()
            .expect("builds");
        let (chunks, result) = stream(&agent, "hi", GenerateOptions::new());
        assert_eq!(result.unwrap().text, "abcd", "emit_on_non_text({emit})");
        chunks
            .iter()
            .filter_map(|c| match &c.kind {
                ChunkKind::TextDelta { text, .. } => Some(format!("text {text}")),
                ChunkKind::ReasoningDelta { text, .. } => Some(format!("reasoning {text}")),
                _ => None,
            })
            .collect::<Vec<String>>()
    };
    assert_eq!(
        run(true),
        [
            "text a",
            "reasoning hm",
            "text bc",
            "reasoning ok",
            "text d"
        ]
    );
    // `a`, `hm` and `b` make the first batch; `c`, `ok` and `d` the second.
    assert_eq!(
        run(false),
        [
            "text a",
            "reasoning hm",
            "text b",
            "text c",
            "reasoning ok",
            "text d"
        ]
    );
}

/// A batcher that also sends its batch after a sentence, through the explicit flush.
struct FlushOnPeriod(BatchParts);

#[processor(crate = processors_runtime, id = "flush-on-period")]
impl FlushOnPeriod {
    fn process_output_stream(
        &self,
        chunk: &Chunk,
        state: &mut processors_builtins::batch_parts::BatchPartsState,
    ) -> StreamAction {
        match self.0.batch(chunk, state) {
            StreamAction::Drop if chunk.text_delta().is_some_and(|t| t.ends_with('.')) => {
                StreamAction::Many(self.0.flush(state, chunk))
            }
            action => action,
        }
    }
}

/// `BatchParts::flush` sends what the batch holds at once, from a processor that wraps the
/// batcher; the batch starts over.
#[test]
fn bi_51_an_explicit_flush_sends_the_batch_at_once() {
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "One", ".", " Two", " three", " four", " five", " six", ".",
        ])]))
        .output(FlushOnPeriod(batches(4)))
        .build()
        .expect("builds");
    let (chunks, result) = stream(&agent, "hi", GenerateOptions::new());
    assert_eq!(result.unwrap().text, "One. Two three four five six.");
    assert_eq!(deltas(&chunks), ["One.", " Two three four five", " six."]);
}
