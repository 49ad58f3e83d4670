//! The context modifiers: system-prompt injector, history window, environment context and
//! `@file` expansion, on agents built with `Agent::builder()` and with `agent!`.

use crate::common;

use common::temp_dir;

use futures::executor::block_on;
use processors_builtins::environment::{git_branch, utc_date};
use processors_builtins::{
    AtFileExpansion, EnvironmentContext, HistoryWindow, OnRefusal, SystemPromptInjector,
    at_file::references,
};
use processors_macros::agent;
use processors_runtime::prelude::*;
use serde_json::json;
use std::time::{Duration, UNIX_EPOCH};

fn texts(ms: &[Message], role: Role) -> Vec<String> {
    ms.iter()
        .filter(|m| m.role == role)
        .map(Message::text)
        .collect()
}

fn thread() -> GenerateOptions {
    GenerateOptions::new().request_context(RequestContext::new().with_thread("t", "u"))
}

// ---------------------------------------------------------------------------------------------
// SystemPromptInjector

#[test]
fn injected_instructions_follow_or_precede_the_agents_at_every_step() {
    let m = ScriptedModel::new([
        Turn::empty().tool_call("c1", "echo", json!({})),
        Turn::text("done"),
    ]);
    let echo = tool(
        "echo",
        "Echoes",
        json!({"type": "object"}),
        |a| async move { Ok(a) },
    );
    let agent = agent! {
        crate: processors_runtime,
        instructions: "Be brief.",
        model: m.clone(),
        tools: [echo],
        input: [SystemPromptInjector::new("Never reveal secrets.")],
    };
    block_on(agent.generate("hi")).unwrap();
    for request in m.requests() {
        assert_eq!(
            texts(&request.prompt, Role::System),
            ["Be brief.", "Never reveal secrets."]
        );
    }
    let first = Agent::builder()
        .instructions("Be brief.")
        .model(ScriptedModel::new([Turn::text("ok")]))
        .input(SystemPromptInjector::new("Policy first.").first())
        .build()
        .unwrap();
    let r = block_on(first.generate("hi")).unwrap();
    assert_eq!(r.text, "ok");
}

#[test]
fn an_injector_from_context_adds_nothing_when_it_has_nothing_and_nothing_is_saved() {
    let store = InMemoryStore::new();
    let m = ScriptedModel::cycle([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(m.clone())
        .memory(Memory::new(store.clone()))
        .input(SystemPromptInjector::from_context(|cx| {
            cx.value("policy")?.as_str().map(str::to_owned)
        }))
        .build()
        .unwrap();
    block_on(agent.generate_with("hi", thread())).unwrap();
    assert!(texts(&m.requests()[0].prompt, Role::System).is_empty());
    let cx = RequestContext::new()
        .with_thread("t", "u")
        .with_value("policy", json!("Formal tone."));
    block_on(agent.generate_with("again", GenerateOptions::new().request_context(cx))).unwrap();
    assert_eq!(
        texts(&m.requests()[1].prompt, Role::System),
        ["Formal tone."]
    );
    let saved = block_on(store.list_messages("t", None)).unwrap();
    assert!(saved.iter().all(|msg| msg.role != Role::System));
}

// ---------------------------------------------------------------------------------------------
// HistoryWindow

fn conversation(turns: usize) -> Vec<Message> {
    let mut ms = Vec::new();
    for i in 0..turns {
        ms.push(Message::user(format!("question {i}")));
        ms.push(Message::assistant(format!("answer {i}")));
    }
    ms.push(Message::user("last question"));
    ms
}

#[test]
fn the_window_keeps_the_last_turns_and_the_system_messages() {
    let mut prompt = vec![Message::system("rules")];
    prompt.extend(conversation(3));
    let kept: Vec<String> = HistoryWindow::last_turns(2)
        .apply(&prompt)
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(kept, ["rules", "question 2", "answer 2", "last question"]);
    // Fewer turns than the window: everything.
    assert_eq!(
        HistoryWindow::last_turns(10).apply(&prompt).len(),
        prompt.len()
    );
}

#[test]
fn the_window_never_begins_with_an_orphan_tool_result() {
    let call = Message::new(
        Role::Assistant,
        vec![Part::ToolCall(ToolCall {
            tool_call_id: "c".into(),
            tool_name: "t".into(),
            args: json!({}),
        })],
    );
    let result = Message::new(
        Role::Tool,
        vec![Part::ToolResult(ToolResult {
            tool_call_id: "c".into(),
            tool_name: "t".into(),
            result: json!("x".repeat(400)),
            is_error: false,
            model_output: None,
        })],
    );
    let prompt = vec![
        Message::user("look it up"),
        call,
        result,
        Message::assistant("found it"),
        Message::user("thanks"),
    ];
    // A budget that cuts between the call and its result.
    let cost: usize = prompt[3..]
        .iter()
        .map(processors_builtins::history_window::estimate_tokens)
        .sum();
    let budget = cost + processors_builtins::history_window::estimate_tokens(&prompt[2]) - 1;
    let kept = HistoryWindow::max_tokens(budget).apply(&prompt);
    let roles: Vec<Role> = kept.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::Assistant, Role::User]);
}

#[test]
fn the_newest_user_message_is_kept_over_any_budget() {
    let prompt = conversation(2);
    let kept = HistoryWindow::max_tokens(1).apply(&prompt);
    assert_eq!(
        kept.iter().map(Message::text).collect::<Vec<_>>(),
        ["last question"]
    );
}

#[test]
fn the_window_changes_the_prompt_only_and_memory_keeps_everything() {
    let store = InMemoryStore::new();
    let m = ScriptedModel::cycle([Turn::text("ok")]);
    let agent = agent! {
        crate: processors_runtime,
        model: m.clone(),
        memory: Memory::new(store.clone()),
        input: [memory, HistoryWindow::last_turns(1)],
    };
    for q in ["one", "two", "three"] {
        block_on(agent.generate_with(q, thread())).unwrap();
    }
    let last = &m.requests()[2].prompt;
    assert_eq!(texts(last, Role::User), ["three"]);
    assert_eq!(block_on(store.list_messages("t", None)).unwrap().len(), 6);
}

// ---------------------------------------------------------------------------------------------
// EnvironmentContext

#[test]
fn dates_are_civil_utc_dates() {
    assert_eq!(utc_date(UNIX_EPOCH), "1970-01-01");
    assert_eq!(
        utc_date(UNIX_EPOCH + Duration::from_secs(951_782_400)),
        "2000-02-29"
    );
    assert_eq!(
        utc_date(UNIX_EPOCH + Duration::from_secs(1_735_689_599)),
        "2024-12-31"
    );
}

#[test]
fn the_git_branch_is_read_from_head_without_git() {
    let dir = temp_dir("git");
    assert_eq!(git_branch(&dir.join("nowhere")), None);
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::create_dir_all(dir.join("src/deep")).unwrap();
    std::fs::write(dir.join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
    assert_eq!(
        git_branch(&dir.join("src/deep")).as_deref(),
        Some("feature/x")
    );
    std::fs::write(
        dir.join(".git/HEAD"),
        "0123456789abcdef0123456789abcdef01234567\n",
    )
    .unwrap();
    assert_eq!(git_branch(&dir).as_deref(), Some("(detached at 0123456)"));
    std::fs::write(dir.join(".git/HEAD"), "garbage").unwrap();
    assert_eq!(git_branch(&dir), None);
    let lines = EnvironmentContext::new().cwd_at(&dir).git_branch().lines();
    assert_eq!(lines, [format!("cwd: {}", dir.display())]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_environment_is_one_system_message_of_the_chosen_fields() {
    let dir = temp_dir("env");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let m = ScriptedModel::new([Turn::text("ok"), Turn::text("ok")]);
    let agent = Agent::builder()
        .model(m.clone())
        .input(EnvironmentContext::new().cwd_at(&dir).git_branch())
        .build()
        .unwrap();
    block_on(agent.generate("where am I?")).unwrap();
    let system = texts(&m.requests()[0].prompt, Role::System);
    assert_eq!(
        system,
        [format!(
            "<environment>\ncwd: {}\ngit branch: main\n</environment>",
            dir.display()
        )]
    );
    // Nothing chosen, nothing added.
    let none = Agent::builder()
        .model(m.clone())
        .input(EnvironmentContext::new())
        .build()
        .unwrap();
    block_on(none.generate("hi")).unwrap();
    assert!(texts(&m.requests()[1].prompt, Role::System).is_empty());
    std::fs::remove_dir_all(&dir).ok();
}

// ---------------------------------------------------------------------------------------------
// AtFileExpansion

#[test]
fn references_are_words_that_start_with_at() {
    assert_eq!(
        references("see @a.md, @dir/b.txt. and (@c) but not me@example.com or @"),
        ["a.md", "dir/b.txt"]
    );
    assert_eq!(references("@first then\t@second!"), ["first", "second"]);
    assert!(references("").is_empty());
    assert_eq!(references("é@x @ü/ß.md"), ["ü/ß.md"]);
}

#[test]
fn a_root_that_does_not_exist_is_refused_at_construction() {
    let err = AtFileExpansion::new("/no/such/root/anywhere").unwrap_err();
    assert!(err.to_string().contains("/no/such/root/anywhere"), "{err}");
}

#[test]
fn files_outside_the_root_too_large_or_not_text_are_never_read() {
    let dir = temp_dir("at-file");
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(dir.join("secret.txt"), "top secret").unwrap();
    std::fs::write(root.join("docs/ok.md"), "fine\n").unwrap();
    std::fs::write(root.join("big.txt"), "x".repeat(2_000)).unwrap();
    std::fs::write(root.join("binary.bin"), [0xff, 0xfe, 0x00]).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.join("secret.txt"), root.join("link.txt")).unwrap();
    let files = AtFileExpansion::new(&root).unwrap().max_bytes(1_000);
    assert_eq!(files.read("docs/ok.md").unwrap(), "fine\n");
    let why = |r: &str| files.read(r).unwrap_err().why;
    assert_eq!(why("../secret.txt"), "the path leads outside the root");
    #[cfg(unix)]
    assert_eq!(why("link.txt"), "the path leads outside the root");
    assert!(why("big.txt").contains("over the limit of 1000 bytes"));
    assert_eq!(why("binary.bin"), "not UTF-8 text");
    assert_eq!(why("docs"), "not a regular file");
    assert_eq!(why("missing.md"), "no such file under the root");
    let absolute = dir.join("secret.txt");
    assert!(why(absolute.to_str().unwrap()).starts_with("absolute paths are not allowed"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_refused_reference_ends_the_run_or_leaves_a_note() {
    let dir = temp_dir("at-file-run");
    std::fs::write(dir.join("a.md"), "A").unwrap();
    let m = ScriptedModel::cycle([Turn::text("ok")]);
    let strict = agent! {
        crate: processors_runtime,
        model: m.clone(),
        input: [AtFileExpansion::new(&dir).unwrap()],
    };
    let r = block_on(strict.generate("read @a.md and @../etc/passwd")).unwrap();
    let tw = r.tripwire.expect("a trip wire");
    assert_eq!(tw.reason, "@../etc/passwd: no such file under the root");
    assert_eq!(tw.processor_id, "at-file-expansion");
    assert_eq!(m.calls(), 0);

    let lenient = Agent::builder()
        .model(m.clone())
        .input(
            AtFileExpansion::new(&dir)
                .unwrap()
                .on_refusal(OnRefusal::Note)
                .max_files(1),
        )
        .build()
        .unwrap();
    block_on(lenient.generate("read @nope, @a.md and @a.md")).unwrap();
    let sent = m.requests()[0].prompt[0].text();
    assert_eq!(
        sent,
        "read @nope, @a.md and @a.md\n\n[@nope was not included: no such file under the root]\n\n<file path=\"a.md\">\nA\n</file>\n\n[@a.md was not included: over the limit of 1 files a run]"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn only_user_messages_are_expanded() {
    let dir = temp_dir("at-file-roles");
    std::fs::write(dir.join("a.md"), "A").unwrap();
    let m = ScriptedModel::new([Turn::text("ok")]);
    let agent = Agent::builder()
        .instructions("Mention @a.md freely.")
        .model(m.clone())
        .input(AtFileExpansion::new(&dir).unwrap())
        .build()
        .unwrap();
    block_on(agent.generate(vec![Message::assistant("@a.md"), Message::user("no refs")])).unwrap();
    let prompt = &m.requests()[0].prompt;
    assert!(prompt.iter().all(|msg| !msg.text().contains("<file")));
    std::fs::remove_dir_all(&dir).ok();
}
