//! `token-limiter`, `batch-parts`, `loop-detection`, `ensure-final-response`, `cost-guard`,
//! `history-window`, `tool-call-filter`, `chat-compression`, `conversation-compactor`, `chat-recording`.

use super::{TokenizerName, set, tokenizer};
use crate::model::ModelSpec;
use crate::registry::{Cx, Refusal, Registry};
use processors_builtins::chat_compression::{ChatCompression, ConversationCompactor};
use processors_builtins::chat_recording::{ChatRecording, StoreRecordings};
use processors_builtins::cost_guard::{Budget, CostLedger, CostScope, Price, PriceTable};
use processors_builtins::loop_detection::LoopStrategy;
use processors_builtins::token_limiter::{CountMode, LimitStrategy, TrimMode};
use processors_builtins::{
    BatchParts, CostGuard, EnsureFinalResponse, HistoryWindow, LoopDetection, TokenLimiter,
    ToolCallFilter,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub(super) fn register(registry: Registry) -> Registry {
    registry
        .builtin("token-limiter", token_limiter)
        .builtin("batch-parts", batch_parts)
        .builtin("loop-detection", loop_detection)
        .builtin("ensure-final-response", ensure_final_response)
        .builtin("cost-guard", cost_guard)
        .builtin("history-window", history_window)
        .builtin("tool-call-filter", tool_call_filter)
        .builtin("chat-compression", chat_compression)
        .builtin("conversation-compactor", conversation_compactor)
        .builtin("chat-recording", chat_recording)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordingOptions {
    path: Option<PathBuf>,
    #[serde(default)]
    memory: bool,
}

fn chat_recording(o: RecordingOptions, cx: &Cx<'_>) -> Result<ChatRecording, Refusal> {
    let path = match (o.path, o.memory) {
        (Some(_), true) => {
            return Err(Refusal::Other(
                "it records to one place: give `path` (a JSON-lines file) or `memory = true` (the agent's memory store), not both".to_owned(),
            ));
        }
        (None, true) => return Ok(ChatRecording::new(StoreRecordings::new(cx.memory()?))),
        (None, false) => {
            return Err(Refusal::Other(
                "it needs a place to record to: `path` (a JSON-lines file) or `memory = true` (the agent's memory store)".to_owned(),
            ));
        }
        (Some(path), false) => cx.path(&path),
    };
    if path.is_dir() {
        return Err(Refusal::Option(
            "path",
            format!(
                "{} is a folder; name the file the recordings go to",
                path.display()
            ),
        ));
    }
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => Err(Refusal::Option(
            "path",
            format!(
                "{} is not a folder, so no recording could be written there",
                dir.display()
            ),
        )),
        _ => Ok(ChatRecording::to_file(path)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompressionOptions {
    model: ModelSpec,
    context_window: usize,
    threshold: Option<f64>,
    keep_recent: Option<f64>,
    tokenizer: Option<TokenizerName>,
    instructions: Option<String>,
    timeout_ms: Option<u64>,
    max_summary_tokens: Option<u32>,
    /// `conversation-compactor`'s alone.
    stub_results_over: Option<usize>,
}

/// The compression of a file's options, kept in the agent's memory when it has one.
fn compression(o: CompressionOptions, cx: &Cx<'_>) -> Result<ChatCompression, Refusal> {
    let summariser = o
        .model
        .build(cx.env)
        .map_err(|e| Refusal::Option("model", e))?;
    let mut b = ChatCompression::builder_shared(summariser, o.context_window);
    b = set(b, o.threshold, |b, t| b.threshold(t));
    b = set(b, o.keep_recent, |b, k| b.keep_recent(k));
    b = set(b, tokenizer(o.tokenizer)?, |b, t| b.tokenizer(t));
    b = set(b, o.instructions, |b, i| b.instructions(i));
    b = set(b, o.timeout_ms, |b, ms| {
        b.timeout(Duration::from_millis(ms))
    });
    b = set(b, o.max_summary_tokens, |b, n| b.max_summary_tokens(n));
    b = set(b, cx.memory, |b, m| b.memory(m));
    b.build().map_err(|e| rename(e, "timeout", "timeout_ms"))
}

fn chat_compression(o: CompressionOptions, cx: &Cx<'_>) -> Result<ChatCompression, Refusal> {
    if o.stub_results_over.is_some() {
        return Err(Refusal::Option(
            "stub_results_over",
            "`chat-compression` summarises without stubbing tool results; `conversation-compactor` stubs them first".to_owned(),
        ));
    }
    compression(o, cx)
}

fn conversation_compactor(
    o: CompressionOptions,
    cx: &Cx<'_>,
) -> Result<ConversationCompactor, Refusal> {
    let stub = o.stub_results_over;
    let c = ConversationCompactor::new(compression(o, cx)?);
    Ok(set(c, stub, |c, n| c.stub_results_over(n)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenLimiterOptions {
    limit: usize,
    tokenizer: Option<TokenizerName>,
    strategy: Option<LimitStrategy>,
    count_mode: Option<CountMode>,
    trim_mode: Option<TrimMode>,
}

fn token_limiter(o: TokenLimiterOptions, _: &Cx<'_>) -> Result<TokenLimiter, Refusal> {
    let mut b = TokenLimiter::builder(o.limit);
    b = set(b, tokenizer(o.tokenizer)?, |b, t| b.tokenizer(t));
    b = set(b, o.strategy, |b, s| b.strategy(s));
    b = set(b, o.count_mode, |b, m| b.count_mode(m));
    b = set(b, o.trim_mode, |b, m| b.trim_mode(m));
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchPartsOptions {
    batch_size: Option<usize>,
    max_chars: Option<usize>,
    max_wait_ms: Option<u64>,
    emit_on_non_text: Option<bool>,
}

fn batch_parts(o: BatchPartsOptions, _: &Cx<'_>) -> Result<BatchParts, Refusal> {
    let mut b = BatchParts::builder();
    b = set(b, o.batch_size, |b, n| b.batch_size(n));
    b = set(b, o.max_chars, |b, n| b.max_chars(n));
    b = set(b, o.max_wait_ms, |b, ms| {
        b.max_wait(Duration::from_millis(ms))
    });
    b = set(b, o.emit_on_non_text, |b, y| b.emit_on_non_text(y));
    b.build().map_err(|e| rename(e, "max_wait", "max_wait_ms"))
}

/// A refusal of the builder's option `from`, reported at the file's option `to`.
fn rename(error: processors_builtins::ConfigError, from: &str, to: &'static str) -> Refusal {
    match Refusal::from(error) {
        Refusal::Option(option, message) if option == from => Refusal::Option(to, message),
        other => other,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoopDetectionOptions {
    tool_call_repeats: Option<usize>,
    answer_repeats: Option<usize>,
    answer_similarity: Option<f64>,
    #[serde(default)]
    ignore_tool_calls: bool,
    #[serde(default)]
    ignore_answers: bool,
    strategy: Option<LoopStrategy>,
    steering_message: Option<String>,
    max_steers: Option<u32>,
}

fn loop_detection(o: LoopDetectionOptions, _: &Cx<'_>) -> Result<LoopDetection, Refusal> {
    let mut b = LoopDetection::builder();
    b = set(b, o.tool_call_repeats, |b, n| b.tool_call_repeats(n));
    b = set(b, o.answer_repeats, |b, n| b.answer_repeats(n));
    b = set(b, o.answer_similarity, |b, t| b.answer_similarity(t));
    b = set(b, o.ignore_tool_calls.then_some(()), |b, ()| {
        b.ignore_tool_calls()
    });
    b = set(b, o.ignore_answers.then_some(()), |b, ()| {
        b.ignore_answers()
    });
    b = set(b, o.strategy, |b, s| b.strategy(s));
    b = set(b, o.steering_message, |b, m| b.steering_message(m));
    b = set(b, o.max_steers, |b, n| b.max_steers(n));
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnsureFinalResponseOptions {
    max_steps: u32,
    message: Option<String>,
    hide_tools: Option<bool>,
}

fn ensure_final_response(
    o: EnsureFinalResponseOptions,
    _: &Cx<'_>,
) -> Result<EnsureFinalResponse, Refusal> {
    let mut b = EnsureFinalResponse::builder(o.max_steps);
    b = set(b, o.message, |b, m| b.message(m));
    b = set(b, o.hide_tools, |b, y| b.hide_tools(y));
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CostGuardOptions {
    max_tokens: Option<u64>,
    max_cost: Option<f64>,
    scope: Option<ScopeName>,
    warn_at_percent: Option<u8>,
    #[serde(default)]
    prices: BTreeMap<String, PriceOptions>,
    fallback_price: Option<PriceOptions>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ScopeName {
    Run,
    Resource,
    Thread,
}

/// Dollars per million tokens.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceOptions {
    input: f64,
    output: f64,
}

fn cost_guard(o: CostGuardOptions, _: &Cx<'_>) -> Result<CostGuard, Refusal> {
    let budget = match (o.max_tokens, o.max_cost) {
        (Some(tokens), None) => Budget::Tokens(tokens),
        (None, Some(cost)) => Budget::Cost(cost),
        _ => {
            return Err(Refusal::Other(
                "give one budget: `max_tokens` (tokens) or `max_cost` (dollars)".to_owned(),
            ));
        }
    };
    let mut b = CostGuard::builder(budget);
    b = set(b, o.scope, |b, s| {
        b.scope(match s {
            ScopeName::Run => CostScope::Run,
            ScopeName::Resource => CostScope::Resource(CostLedger::new()),
            ScopeName::Thread => CostScope::Thread(CostLedger::new()),
        })
    });
    b = set(b, o.warn_at_percent, |b, p| b.warn_at_percent(p));
    if !o.prices.is_empty() {
        let table = o
            .prices
            .into_iter()
            .fold(PriceTable::new(), |t, (model, p)| {
                t.with(model, Price::per_million(p.input, p.output))
            });
        b = b.prices(table);
    }
    b = set(b, o.fallback_price, |b, p| {
        b.fallback_price(Price::per_million(p.input, p.output))
    });
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryWindowOptions {
    last_turns: Option<usize>,
    max_tokens: Option<usize>,
}

fn history_window(o: HistoryWindowOptions, _: &Cx<'_>) -> Result<HistoryWindow, Refusal> {
    match (o.last_turns, o.max_tokens) {
        (Some(0), _) => Err(Refusal::Option(
            "last_turns",
            "`last_turns` is 0: the prompt would hold no turn; give at least 1".to_owned(),
        )),
        (Some(turns), tokens) => Ok(set(HistoryWindow::last_turns(turns), tokens, |w, t| {
            w.and_max_tokens(t)
        })),
        (None, Some(tokens)) => Ok(HistoryWindow::max_tokens(tokens)),
        (None, None) => Err(Refusal::Other(
            "give `last_turns`, `max_tokens` or both, so the window has a size".to_owned(),
        )),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolCallFilterOptions {
    tools: Option<Vec<String>>,
    filter_after_tool_steps: Option<usize>,
}

fn tool_call_filter(o: ToolCallFilterOptions, _: &Cx<'_>) -> Result<ToolCallFilter, Refusal> {
    let mut b = ToolCallFilter::builder();
    b = set(b, o.tools, |b, t| b.tools(t));
    b = set(b, o.filter_after_tool_steps, |b, n| {
        b.filter_after_tool_steps(n)
    });
    Ok(b.build()?)
}
