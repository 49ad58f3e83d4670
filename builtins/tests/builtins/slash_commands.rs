//! SlashCommands (behaviour 83 of docs/builtins.md): templates and their arguments, commands from a folder, unknown commands,
//! what is not a command, and bad configurations.

use crate::common;

use common::temp_dir;

use futures::executor::block_on;
use processors_builtins::ConfigError;
use processors_builtins::SlashCommands;
use processors_builtins::slash_commands::{Expansion, OnUnknown};
use processors_macros::agent;
use processors_runtime::prelude::*;

fn command(c: &SlashCommands, text: &str) -> String {
    match block_on(c.expand(text)) {
        Expansion::Command(t) => t,
        other => panic!("{text:?} is not a command: {other:?}"),
    }
}

#[test]
fn bi_83_arguments_go_where_the_template_says_or_after_it() {
    let c = SlashCommands::builder()
        .command(
            "translate",
            "Translate {{args}} into French. Keep {{args}} short.",
        )
        .command("tldr", "Summarise in one line.\n")
        .build()
        .unwrap();
    assert_eq!(
        command(&c, "  /translate  good morning \n"),
        "Translate good morning into French. Keep good morning short."
    );
    assert_eq!(
        command(&c, "/translate"),
        "Translate  into French. Keep  short."
    );
    assert_eq!(command(&c, "/tldr"), "Summarise in one line.");
    assert_eq!(
        command(&c, "/tldr\nline one\nline two"),
        "Summarise in one line.\n\nline one\nline two"
    );
    // What the user types is put in as typed, not read as a template again.
    assert_eq!(
        command(&c, "/translate {{args}}"),
        "Translate {{args}} into French. Keep {{args}} short."
    );
    // The name ends at whitespace: `/tldrs` is another name.
    assert_eq!(
        block_on(c.expand("/tldrs")),
        Expansion::Unknown("tldrs".into())
    );
}

#[test]
fn what_is_not_a_command_passes_as_it_is() {
    let c = SlashCommands::builder()
        .command("tldr", "Summarise.")
        .on_unknown(OnUnknown::Abort)
        .build()
        .unwrap();
    for text in [
        "tldr",
        "please /tldr",
        "/etc/hosts is missing",
        "/ 2",
        "/",
        "",
        "// a comment",
        "//nope",
        "1/2",
    ] {
        assert_eq!(block_on(c.expand(text)), Expansion::Text, "{text:?}");
    }
    assert_eq!(
        block_on(c.expand("//tldr is how you call it")),
        Expansion::Escaped("/tldr is how you call it".into())
    );
}

#[test]
fn a_command_is_expanded_in_the_newest_user_message_only() {
    let model = ScriptedModel::cycle([Turn::text("ok")]);
    let agent = agent! {
        crate: processors_runtime,
        model: model.clone(),
        input: [SlashCommands::builder()
            .command("tldr", "Summarise: {{args}}")
            .on_unknown(OnUnknown::Abort)
            .build()
            .unwrap()],
    };
    // A history sent again: its old command (and an old typo) are not read again.
    let result = block_on(agent.generate(vec![
        Message::system("/tldr system"),
        Message::user("/tldr the old report"),
        Message::user("/tdlr typo"),
        Message::assistant("/tldr said before"),
        Message::user("/tldr the report"),
    ]))
    .unwrap();
    assert!(result.tripwire.is_none());
    let sent: Vec<String> = model.requests()[0]
        .prompt
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(
        sent,
        [
            "/tldr system",
            "/tldr the old report",
            "/tdlr typo",
            "/tldr said before",
            "Summarise: the report"
        ]
    );

    // An escaped command goes as text, one slash less.
    block_on(agent.generate("//tldr means summarise")).unwrap();
    assert_eq!(
        model.requests()[1].prompt[0].text(),
        "/tldr means summarise"
    );
}

#[test]
fn an_unknown_command_passes_or_ends_the_run_naming_the_commands() {
    let model = ScriptedModel::cycle([Turn::text("ok")]);
    let builder = SlashCommands::builder()
        .described("review", "Review: {{args}}", Some("finds bugs"))
        .command("tldr", "Summarise.");
    let lenient = Agent::builder()
        .model(model.clone())
        .input(builder.clone().build().unwrap())
        .build()
        .unwrap();
    block_on(lenient.generate("/reveiw this")).unwrap();
    assert_eq!(model.requests()[0].prompt[0].text(), "/reveiw this");

    let strict = Agent::builder()
        .model(model.clone())
        .input(builder.on_unknown(OnUnknown::Abort).build().unwrap())
        .build()
        .unwrap();
    let result = block_on(strict.generate("/reveiw this")).unwrap();
    let trip = result.tripwire.expect("a trip wire");
    assert_eq!(
        trip.reason,
        "/reveiw is not a command; the commands are /review (finds bugs), /tldr"
    );
    assert_eq!(trip.processor_id, "slash-commands");
    assert_eq!(
        trip.metadata.expect("metadata")["known"],
        serde_json::json!(["review", "tldr"])
    );
    assert_eq!(
        model.calls(),
        1,
        "the refused message never reached the model"
    );
}

#[test]
fn commands_are_read_from_a_folder_and_its_subfolders() {
    let dir = temp_dir("dir");
    std::fs::create_dir_all(dir.join("git")).unwrap();
    std::fs::write(
        dir.join("review.md"),
        "description: finds bugs\nReview this:\n{{args}}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("git/commit.txt"),
        "Write a commit message for {{args}}.",
    )
    .unwrap();
    std::fs::write(dir.join("notes.json"), "{}").unwrap();
    let c = SlashCommands::builder()
        .dir(&dir)
        .command("tldr", "Summarise.")
        .build()
        .unwrap();
    let names: Vec<&str> = c.commands().keys().map(String::as_str).collect();
    assert_eq!(names, ["git:commit", "review", "tldr"]);
    assert_eq!(
        c.commands()["review"].description.as_deref(),
        Some("finds bugs")
    );
    assert_eq!(command(&c, "/review x = 1"), "Review this:\nx = 1");
    assert_eq!(
        command(&c, "/git:commit the fix"),
        "Write a commit message for the fix."
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_configurations_are_errors_from_build() {
    let dir = temp_dir("bad");
    let err = |b: processors_builtins::slash_commands::SlashCommandsBuilder| b.build().unwrap_err();
    assert!(matches!(
        err(SlashCommands::builder()),
        ConfigError::NothingToDo(_)
    ));
    for name in ["", "two words", "a/b", "a:", ":a", "a::b"] {
        assert!(
            matches!(
                err(SlashCommands::builder().command(name, "x")),
                ConfigError::InvalidName { .. }
            ),
            "{name:?}"
        );
    }
    assert!(matches!(
        err(SlashCommands::builder().command("a", " \n")),
        ConfigError::Empty { .. }
    ));
    assert!(matches!(
        err(SlashCommands::builder().command("a", "x").command("a", "y")),
        ConfigError::Duplicate { .. }
    ));

    // From a folder: a name in code and in the folder, a file too large, not text, missing.
    std::fs::write(dir.join("a.md"), "A").unwrap();
    let e = err(SlashCommands::builder().command("a", "x").dir(&dir));
    assert_eq!(
        e.to_string(),
        "two commands are named `a`; give each its own name"
    );
    std::fs::write(dir.join("big.md"), "x".repeat(70_000)).unwrap();
    let e = err(SlashCommands::builder().dir(&dir));
    assert!(
        e.to_string()
            .ends_with("big.md cannot be used: 70000 bytes, over 65536"),
        "{e}"
    );
    std::fs::remove_file(dir.join("big.md")).unwrap();
    std::fs::write(dir.join("bin.txt"), [0xff, 0xfe]).unwrap();
    let e = err(SlashCommands::builder().dir(&dir));
    assert!(
        e.to_string()
            .ends_with("bin.txt cannot be used: not UTF-8 text"),
        "{e}"
    );
    let e = err(SlashCommands::builder().dir(dir.join("missing")));
    assert!(matches!(e, ConfigError::File { .. }), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

// ShellInjection: `!{…}` in templates.

#[cfg(unix)]
mod shell {
    use super::*;
    use processors_builtins::shell_injection::ShellInjection;
    use std::time::Duration;

    fn with(template: &str, shell: ShellInjection) -> SlashCommands {
        SlashCommands::builder()
            .command("run", template)
            .shell(shell)
            .build()
            .unwrap()
    }

    #[test]
    fn bi_83_a_template_runs_an_allowed_program_without_a_shell() {
        let c = with(
            "Files: !{ls {{args}}}. Said: !{echo \"a  b\" {{args}}}",
            ShellInjection::allow(["ls", "echo"]),
        );
        let dir = std::env::temp_dir().join(format!("processors-shell-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("one.txt"), "").unwrap();
        let arg = dir.display().to_string();
        assert_eq!(
            command(&c, &format!("/run {arg}")),
            format!("Files: one.txt. Said: a  b {arg}")
        );
        // The arguments are one word each time, never read by a shell.
        let c = with("!{echo {{args}}}", ShellInjection::allow(["echo"]));
        assert_eq!(
            command(&c, "/run $(id); rm -rf / | cat"),
            "$(id); rm -rf / | cat"
        );
        // Arguments that would be read as an option are not passed; none leave no empty word.
        assert_eq!(
            command(&c, "/run --output=/tmp/owned"),
            "[echo {{args}}: the arguments may not start with `-` here, where they would be read as an option]"
        );
        let c = with("[!{ls {{args}}}]", ShellInjection::allow(["ls"]).dir(&dir));
        assert_eq!(command(&c, "/run"), "[one.txt]");
        // What the user types is never run, nor is a template without a shell.
        let c = with("Hello {{args}}", ShellInjection::allow(["echo"]));
        assert_eq!(command(&c, "/run !{echo pwned}"), "Hello !{echo pwned}");
        let plain = SlashCommands::builder()
            .command("run", "!{echo hi}")
            .build()
            .unwrap();
        assert_eq!(command(&plain, "/run"), "!{echo hi}");
        // In the folder it is given.
        let c = with("!{pwd}", ShellInjection::allow(["pwd"]).dir(&dir));
        assert_eq!(
            command(&c, "/run"),
            dir.canonicalize().unwrap().display().to_string()
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_program_that_fails_runs_long_or_writes_much_leaves_a_note() {
        let c = with("!{ls /no/such/dir}", ShellInjection::allow(["ls"]));
        let failed = command(&c, "/run");
        assert!(
            failed.starts_with("[ls /no/such/dir: exit status: 2: ls: "),
            "{failed}"
        );
        let c = with(
            "before !{sleep 5} after",
            ShellInjection::allow(["sleep"]).timeout(Duration::from_millis(100)),
        );
        let started = std::time::Instant::now();
        assert_eq!(
            command(&c, "/run"),
            "before [sleep 5: timed out after 100ms] after"
        );
        assert!(started.elapsed() < Duration::from_secs(4));
        // A process the program leaves behind holding its output is not waited for.
        let c = with(
            "!{sh -c \"sleep 5 & echo started\"}",
            ShellInjection::allow(["sh"]).timeout(Duration::from_secs(1)),
        );
        let started = std::time::Instant::now();
        command(&c, "/run");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        let c = with(
            "!{seq 1 100000}",
            ShellInjection::allow(["seq"]).max_output(20),
        );
        let cut = command(&c, "/run");
        assert!(
            cut.starts_with("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n[588875 more bytes of output cut]"),
            "{cut:?}"
        );
        let c = with(
            "!{no-such-program-here}",
            ShellInjection::allow(["no-such-program-here"]),
        );
        assert!(command(&c, "/run").starts_with("[no-such-program-here: could not start: "));
    }

    #[test]
    fn the_model_sees_the_output() {
        let model = ScriptedModel::new([Turn::text("ok")]);
        let agent = Agent::builder()
            .model(model.clone())
            .input(with(
                "Summarise: !{echo {{args}}}",
                ShellInjection::allow(["echo"]),
            ))
            .build()
            .unwrap();
        block_on(agent.generate("/run the log")).unwrap();
        assert_eq!(model.requests()[0].prompt[0].text(), "Summarise: the log");
    }

    #[test]
    fn bad_shells_and_templates_are_errors_from_build() {
        let err = |template: &str, shell: ShellInjection| {
            SlashCommands::builder()
                .command("run", template)
                .shell(shell)
                .build()
                .unwrap_err()
        };
        let e = err("!{rm -rf /}", ShellInjection::allow(["ls"]));
        assert_eq!(
            e.to_string(),
            "`rm` is not a program the processor knows; /run may run only what the shell allows: ls"
        );
        assert!(matches!(
            err("x", ShellInjection::allow(Vec::<String>::new())),
            ConfigError::Empty { .. }
        ));
        assert!(matches!(
            err("x", ShellInjection::allow(["ls"]).timeout(Duration::ZERO)),
            ConfigError::Zero { .. }
        ));
        assert!(matches!(
            err("x", ShellInjection::allow(["ls"]).max_output(0)),
            ConfigError::Zero { .. }
        ));
        for template in ["!{ls", "!{ }", "!{ls \"x}"] {
            assert!(
                matches!(
                    err(template, ShellInjection::allow(["ls"])),
                    ConfigError::Template { .. }
                ),
                "{template}"
            );
        }
    }
}
