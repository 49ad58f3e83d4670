//! The timeline as a self-contained HTML page: no script, no outside resource.

use super::{Entry, EntryKind, Timeline};
use std::fmt::Write;

const STYLE: &str = r#"
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem; color: #1d232a; background: #fbfbfc; }
h1 { font-size: 1.4rem; margin: 0 0 .3rem; }
h2 { font-size: 1.1rem; margin: 0 0 .6rem; }
h3 { font-size: .95rem; margin: 1rem 0 .3rem; color: #4a5560; }
code { font: 12px ui-monospace, monospace; }
.summary { color: #4a5560; margin: 0 0 1.2rem; }
section { background: #fff; border: 1px solid #dde2e7; border-radius: 6px; padding: 1rem 1.2rem; margin: 0 0 1rem; }
section.step { border-left: 4px solid #3b82f6; }
section.step.retry { border-left-color: #f59e0b; }
section.step.tripwire { border-left-color: #dc2626; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid #eef1f4; vertical-align: top; }
th { color: #4a5560; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 9px; font-size: 12px; background: #eef1f4; }
.o-pass { background: #eef1f4; }
.o-replaced, .o-responded { background: #fef3c7; }
.o-dropped, .o-aborted, .o-failed, .o-panicked, .o-tripwire { background: #fee2e2; }
.o-retried, .o-warned, .o-retry { background: #ffedd5; }
.o-completed, .o-stop, .o-tool-calls { background: #dcfce7; }
.model { margin: 0 0 .4rem; }
.event { margin: .2rem 0; }
details pre { white-space: pre-wrap; font: 12px ui-monospace, monospace; }
.empty { color: #8a949e; }
"#;

/// Escapes text for HTML.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn field(e: &Entry, name: &str) -> String {
    e.field(name).unwrap_or_default()
}

fn badge(outcome: &str) -> String {
    let class: String = outcome
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!(r#"<span class="badge o-{class}">{}</span>"#, esc(outcome))
}

fn duration(e: &Entry) -> String {
    let us = e
        .fields
        .get("duration_us")
        .and_then(serde_json::Value::as_u64)
        .or_else(|| e.duration_us());
    match us {
        Some(us) if us >= 1_000 => format!("{:.1} ms", us as f64 / 1_000.0),
        Some(us) => format!("{us} µs"),
        None => String::new(),
    }
}

/// The page.
pub(super) fn page(t: &Timeline) -> String {
    let mut out = String::new();
    let title = t
        .runs()
        .next()
        .map_or_else(|| "a run".to_owned(), |r| field(r, "run_id"));
    let _ = writeln!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Run {}</title><style>{STYLE}</style></head><body>",
        esc(&title)
    );
    let runs: Vec<&Entry> = t.runs().collect();
    // A wrapped model's calls made outside any run (a gateway's): each a card of its own,
    // the calls of wrappers inside it included in it.
    let calls: Vec<&Entry> = t
        .spans(CALL)
        .filter(|c| {
            !t.runs().any(|r| t.is_within(c.index, r.index))
                && !t.spans(CALL).any(|o| t.is_within(c.index, o.index))
        })
        .collect();
    if runs.is_empty() && calls.is_empty() {
        out.push_str("<h1>No run recorded</h1>\n");
    }
    for run in runs {
        write_run(&mut out, t, run);
    }
    for call in calls {
        write_call(&mut out, t, call);
    }
    if t.dropped > 0 {
        let _ = writeln!(
            out,
            "<p class=\"summary\">{} more spans and events came after the recorder's limit and were not kept: the page stops where the limit was reached.</p>",
            t.dropped
        );
    }
    let json = serde_json::to_string_pretty(&t.to_json()).unwrap_or_default();
    let _ = writeln!(
        out,
        "<details><summary>Timeline as JSON</summary><pre>{}</pre></details>\n</body></html>",
        esc(&json)
    );
    out
}

/// The span of a wrapped model's call (`processed.call`).
const CALL: &str = "processed.call";

fn write_call(out: &mut String, t: &Timeline, call: &Entry) {
    let _ = writeln!(
        out,
        "<h1>Model call <code>{}</code> {}</h1>\n<p class=\"summary\">a model wrapped with processors · {}</p>",
        esc(&field(call, "model")),
        badge(&field(call, "outcome")),
        duration(call),
    );
    let _ = writeln!(
        out,
        "<section class=\"step {}\" id=\"call\"><h2>The call</h2>",
        esc(&field(call, "outcome"))
    );
    let inside: Vec<&Entry> = t.within(call.index).collect();
    write_step_body(out, t, &inside);
}

fn write_run(out: &mut String, t: &Timeline, run: &Entry) {
    let outcome = field(run, "outcome");
    let _ = writeln!(
        out,
        "<h1>Run <code>{}</code> {}</h1>\n<p class=\"summary\">agent <b>{}</b> · {} steps · {} tokens in, {} out · {}</p>",
        esc(&field(run, "run_id")),
        badge(&outcome),
        esc(&field(run, "agent")),
        esc(&field(run, "steps")),
        esc(&field(run, "gen_ai.usage.input_tokens")),
        esc(&field(run, "gen_ai.usage.output_tokens")),
        duration(run),
    );
    let steps: Vec<&Entry> = t
        .children(Some(run.index))
        .filter(|e| e.name == "agent.step")
        .collect();
    let first = steps.first().map_or(u64::MAX, |s| s.start_us);
    let last = steps.last().and_then(|s| s.end_us).unwrap_or(0);
    // What runs around the steps: entries of the run that are not inside a step.
    let outside: Vec<&Entry> = t
        .within(run.index)
        .filter(|e| {
            !steps
                .iter()
                .any(|s| t.is_within(e.index, s.index) || e.index == s.index)
        })
        .collect();
    let before: Vec<&Entry> = outside
        .iter()
        .copied()
        .filter(|e| e.start_us < first)
        .collect();
    let after: Vec<&Entry> = outside
        .iter()
        .copied()
        .filter(|e| e.start_us >= first && e.start_us >= last)
        .collect();
    write_phase(out, t, "Before the steps", &before);
    for step in &steps {
        write_step(out, t, step);
    }
    write_phase(out, t, "After the steps", &after);
}

fn write_phase(out: &mut String, t: &Timeline, title: &str, entries: &[&Entry]) {
    if entries.is_empty() {
        return;
    }
    let _ = writeln!(out, "<section class=\"phase\"><h2>{}</h2>", esc(title));
    write_hooks(out, entries.iter().copied());
    write_chunks(out, entries.iter().copied());
    write_events(out, t, entries.iter().copied());
    out.push_str("</section>\n");
}

/// The message of the event a model call that failed and is tried again logs
/// (`agent::run::model`).
const API_RETRY: &str = "retrying the model call after an API error";

fn write_step(out: &mut String, t: &Timeline, step: &Entry) {
    let inside: Vec<&Entry> = t.within(step.index).collect();
    // A model call the provider refused, and that was tried again within this step's span,
    // is a step of the run's own (with finish reason `retry`): a card of its own, before.
    for retry in inside
        .iter()
        .filter(|e| e.kind == EntryKind::Event && e.name == API_RETRY)
    {
        let number = field(retry, "step");
        let _ = writeln!(
            out,
            r#"<section class="step retry" id="step-{}"><h2>Step {} {}</h2><p class="model">the model call failed: <code>{}</code>; <code>{}</code> asked for it again (attempt {})</p></section>"#,
            esc(&number),
            esc(&number),
            badge("retry"),
            esc(&field(retry, "error")),
            esc(&field(retry, "processor")),
            esc(&field(retry, "attempt")),
        );
    }
    let reason = field(step, "finish_reason");
    let _ = writeln!(
        out,
        "<section class=\"step {}\" id=\"step-{}\"><h2>Step {} {} <span class=\"badge\">{}</span></h2>",
        esc(&reason),
        esc(&field(step, "step")),
        esc(&field(step, "step")),
        badge(&reason),
        duration(step),
    );
    write_step_body(out, t, &inside);
}

/// What a step's card shows: its model calls, hook calls, stream processors, chunks, tools and
/// events; and the card's end.
fn write_step_body(out: &mut String, t: &Timeline, inside: &[&Entry]) {
    for chat in inside.iter().filter(|e| e.name == "chat") {
        let _ = writeln!(
            out,
            "<p class=\"model\">model <code>{}</code> ({}) · {} · {} tokens in, {} out{} · {}</p>",
            esc(&field(chat, "gen_ai.request.model")),
            esc(&field(chat, "gen_ai.provider.name")),
            badge(&field(chat, "gen_ai.response.finish_reasons")),
            esc(&field(chat, "gen_ai.usage.input_tokens")),
            esc(&field(chat, "gen_ai.usage.output_tokens")),
            if field(chat, "from_cache") == "true" {
                " · replayed"
            } else {
                ""
            },
            duration(chat),
        );
    }
    write_hooks(out, inside.iter().copied());
    write_summaries(out, inside.iter().copied());
    write_chunks(out, inside.iter().copied());
    write_tools(out, inside.iter().copied());
    write_events(out, t, inside.iter().copied());
    out.push_str("</section>\n");
}

fn write_hooks<'a>(out: &mut String, entries: impl Iterator<Item = &'a Entry>) {
    let rows: Vec<&Entry> = entries
        .filter(|e| e.kind == EntryKind::Span && e.name == "processor")
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push_str("<h3>Hook calls</h3><table><tr><th>processor</th><th>hook</th><th>outcome</th><th>time</th></tr>\n");
    for e in rows {
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
            esc(&field(e, "id")),
            esc(&field(e, "hook")),
            badge(&field(e, "outcome")),
            duration(e),
        );
    }
    out.push_str("</table>\n");
}

fn write_summaries<'a>(out: &mut String, entries: impl Iterator<Item = &'a Entry>) {
    let rows: Vec<&Entry> = entries
        .filter(|e| e.kind == EntryKind::Event && e.target == "processors::stream")
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push_str("<h3>Stream processors</h3><table><tr><th>processor</th><th>chunks</th><th>replaced</th><th>dropped</th><th>warned</th><th>aborted</th><th>failed</th><th>time</th></tr>\n");
    for e in rows {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td>",
            esc(&field(e, "processor"))
        );
        for f in [
            "chunks", "replaced", "dropped", "warned", "aborted", "failed",
        ] {
            let _ = write!(out, "<td class=\"num\">{}</td>", esc(&field(e, f)));
        }
        let _ = writeln!(out, "<td class=\"num\">{}</td></tr>", duration(e));
    }
    out.push_str("</table>\n");
}

fn write_chunks<'a>(out: &mut String, entries: impl Iterator<Item = &'a Entry>) {
    let rows: Vec<&Entry> = entries
        .filter(|e| e.kind == EntryKind::Event && e.target == "processors::chunks")
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push_str("<h3>Chunks through the stream processors</h3><table><tr><th>processor</th><th>chunk</th><th>text in</th><th>text out</th><th>outcome</th></tr>\n");
    for e in rows {
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>",
            esc(&field(e, "processor")),
            esc(&field(e, "chunk")),
            esc(&field(e, "text")),
            esc(&field(e, "text_out")),
            badge(&field(e, "outcome")),
        );
    }
    out.push_str("</table>\n");
}

fn write_tools<'a>(out: &mut String, entries: impl Iterator<Item = &'a Entry>) {
    let rows: Vec<&Entry> = entries
        .filter(|e| e.kind == EntryKind::Span && e.name == "tool")
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push_str("<h3>Tools</h3><table><tr><th>tool</th><th>time</th></tr>\n");
    for e in rows {
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td class=\"num\">{}</td></tr>",
            esc(&field(e, "name")),
            duration(e),
        );
    }
    out.push_str("</table>\n");
}

/// Events that are neither stream summaries nor chunks: retries, trip wires, warnings.
fn write_events<'a>(out: &mut String, _t: &Timeline, entries: impl Iterator<Item = &'a Entry>) {
    let rows: Vec<&Entry> = entries
        .filter(|e| {
            e.kind == EntryKind::Event
                && e.target != "processors::stream"
                && e.target != "processors::chunks"
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push_str("<h3>Events</h3>\n");
    for e in rows {
        let details: Vec<String> = e
            .fields
            .keys()
            .map(|k| format!("{k}={}", e.field(k).unwrap_or_default()))
            .collect();
        let _ = writeln!(
            out,
            "<p class=\"event\"><span class=\"badge\">{}</span> {} <code>{}</code></p>",
            esc(&e.level),
            esc(&e.name),
            esc(&details.join(" ")),
        );
    }
}
