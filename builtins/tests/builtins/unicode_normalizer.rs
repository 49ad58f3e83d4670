//! UnicodeNormalizer on agents: each step and its switch, the parts it leaves alone, and bad
//! input.

use crate::common;

use common::*;
use futures::executor::block_on;
use processors_builtins::UnicodeNormalizer;
use processors_builtins::unicode_normalizer::{Form, UnicodeNormalizerBuilder};
use processors_macros::agent;
use processors_runtime::prelude::*;
use serde_json::json;

fn with(f: impl FnOnce(UnicodeNormalizerBuilder) -> UnicodeNormalizerBuilder) -> UnicodeNormalizer {
    f(UnicodeNormalizer::builder())
        .build()
        .expect("a valid configuration")
}

/// What the model was sent as the last message, through an agent built at run time.
fn sent_dynamic(normalizer: UnicodeNormalizer, input: Message) -> Message {
    let model = ScriptedModel::new([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(normalizer)
        .build()
        .expect("builds");
    block_on(agent.generate(input)).expect("runs");
    model.requests()[0]
        .prompt
        .last()
        .cloned()
        .expect("a prompt")
}

#[test]
fn the_model_and_memory_get_the_normalised_input() {
    let store = InMemoryStore::new();
    let model = ScriptedModel::new([Turn::text("ok")]);
    let agent = agent! {
        crate: processors_runtime,
        model: model.clone(),
        memory: Memory::new(store.clone()),
        input: [UnicodeNormalizer::new()],
    };
    block_on(agent.generate_with(
        "  ｆｕｌｌ\u{200B}width\u{202E}  text\r\n\r\n\r\n\r\nend  ",
        thread(),
    ))
    .expect("runs");
    let expected = "fullwidth text\n\nend";
    assert_eq!(
        model.requests()[0]
            .prompt
            .last()
            .map(Message::text)
            .as_deref(),
        Some(expected)
    );
    assert_eq!(saved(&store)[0].text(), expected);
}

#[test]
fn forms_nfkc_nfc_and_keep() {
    let text = "ﬁle e\u{301} ²";
    assert_eq!(with(|b| b.form(Form::Nfkc)).normalize(text), "file é 2");
    assert_eq!(with(|b| b.form(Form::Nfc)).normalize(text), "ﬁle é ²");
    assert_eq!(with(|b| b.form(Form::Keep)).normalize(text), text);
    // Hangul jamo compose under both forms.
    assert_eq!(
        with(|b| b.form(Form::Nfc)).normalize("\u{1112}\u{1161}\u{11AB}"),
        "한"
    );
}

#[test]
fn control_characters_go_but_tabs_and_line_breaks_stay() {
    // Collapsing makes a tab inside a line one space; without it, tabs stay.
    assert_eq!(UnicodeNormalizer::new().normalize("a\u{7}\tb"), "a b");
    let on = with(|b| b.collapse_whitespace(false));
    assert_eq!(
        on.normalize("a\u{0}b\u{7}c\u{1B}[0m\td\r\ne\rf\u{C}g"),
        "abc[0m\td\ne\nf\ng"
    );
    let off = with(|b| b.strip_control(false).collapse_whitespace(false));
    assert_eq!(off.normalize("a\u{7}b\r\nc"), "a\u{7}b\r\nc");
}

#[test]
fn invisible_characters_go_unless_switched_off() {
    let text = "pay\u{200B}pal \u{202E}txt.exe\u{202C} so\u{AD}ft \u{FEFF}bom \u{2066}x\u{2069}";
    assert_eq!(
        UnicodeNormalizer::new().normalize(text),
        "paypal txt.exe soft bom x"
    );
    let off = with(|b| b.strip_invisible(false));
    assert_eq!(off.normalize(text), text);
}

#[test]
fn emoji_stay_or_go() {
    let text = "great 👍🏽 job 🎉!";
    assert_eq!(UnicodeNormalizer::new().normalize(text), text);
    assert_eq!(with(|b| b.keep_emoji(false)).normalize(text), "great job !");
    // Symbols that are text by default stay: only their emoji form goes.
    assert_eq!(
        with(|b| b.keep_emoji(false)).normalize("© 2024 ↔ ©\u{FE0F}"),
        "© 2024 ↔"
    );
}

#[test]
fn whitespace_collapses_inside_lines_and_indentation_stays() {
    let code = "fn main() {\n    let  x =   1;   \n\n\n\n    println!(\"{x}\");\n}";
    assert_eq!(
        UnicodeNormalizer::new().normalize(code),
        "fn main() {\n    let x = 1;\n\n    println!(\"{x}\");\n}"
    );
    let off = with(|b| b.collapse_whitespace(false));
    assert_eq!(off.normalize(code), code);
    // Unicode spaces count: NFKC makes them spaces, and runs collapse.
    assert_eq!(
        UnicodeNormalizer::new().normalize("a\u{A0}\u{3000} b\u{2029}c"),
        "a b\nc"
    );
}

#[test]
fn trim_is_a_switch() {
    assert_eq!(UnicodeNormalizer::new().normalize("\n  hi  \n"), "hi");
    assert_eq!(with(|b| b.trim(false)).normalize("  hi  \n"), "  hi\n");
}

#[test]
fn only_text_parts_change() {
    let call = ToolCall {
        tool_call_id: "c1".into(),
        tool_name: "echo".into(),
        args: json!({ "q": "  Ｘ\u{200B}  " }),
    };
    let result = ToolResult {
        tool_call_id: "c1".into(),
        tool_name: "echo".into(),
        result: json!("  Ｙ  "),
        is_error: false,
        model_output: None,
    };
    let parts = vec![
        Part::Text {
            text: "  Ｈｉ  ".into(),
        },
        Part::ToolCall(call.clone()),
        Part::Reasoning {
            text: "  Ｒ  ".into(),
        },
        Part::File {
            mime_type: "text/plain".into(),
            data: "  Ｆ  ".into(),
        },
        Part::Data {
            name: "d".into(),
            data: json!("  Ｄ  "),
        },
        Part::Text {
            text: "\u{200B}x  ".into(),
        },
    ];
    let sent = sent_dynamic(
        UnicodeNormalizer::new(),
        Message::new(Role::User, parts.clone()),
    );
    let mut expected = parts;
    expected[0] = Part::Text { text: "Hi".into() };
    expected[5] = Part::Text { text: "x".into() };
    assert_eq!(sent.content.parts, expected);

    // A tool message of the input keeps its result as it is.
    let tool = Message::new(Role::Tool, vec![Part::ToolResult(result.clone())]);
    let n = UnicodeNormalizer::new();
    let model = ScriptedModel::new([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(n)
        .build()
        .expect("builds");
    let assistant = Message::new(Role::Assistant, vec![Part::ToolCall(call)]);
    block_on(agent.generate(vec![Message::user("q"), assistant, tool])).expect("runs");
    let prompt = &model.requests()[0].prompt;
    assert_eq!(
        prompt.last().map(|m| m.content.parts.clone()),
        Some(vec![Part::ToolResult(result)])
    );
}

#[test]
fn empty_and_whitespace_only_messages() {
    let n = UnicodeNormalizer::new();
    assert_eq!(n.normalize(""), "");
    assert_eq!(n.normalize(" \u{200B}\t\n "), "");
    let sent = sent_dynamic(n, Message::new(Role::User, vec![]));
    assert!(sent.content.parts.is_empty());
    let sent = sent_dynamic(n, Message::user(""));
    assert_eq!(sent.text(), "");
}

#[test]
fn unchanged_text_is_left_alone() {
    let n = UnicodeNormalizer::new();
    let text = "Plain text, nothing to do.\n\n- a list\n  - indented";
    assert!(matches!(n.normalize(text), std::borrow::Cow::Borrowed(_)));
    let m = Message::user(text);
    assert_eq!(sent_dynamic(n, m.clone()), m);
}

#[test]
fn huge_input_is_normalised_whole() {
    let line = "ｗｉｄｅ  text\u{200B} with\t\tspaces  \n";
    let text = line.repeat(30_000); // ~1 MB
    let out = UnicodeNormalizer::new().normalize(&text);
    let expected_line = "wide text with spaces\n";
    assert_eq!(out.len(), expected_line.len() * 30_000 - 1);
    assert!(out.starts_with(expected_line));
}

#[test]
fn unicode_edge_cases() {
    let n = UnicodeNormalizer::new();
    // Right-to-left text, combining marks, astral characters, and a lone combining mark.
    assert_eq!(n.normalize("שלום עולם"), "שלום עולם");
    assert_eq!(n.normalize("\u{301}a"), "\u{301}a");
    assert_eq!(n.normalize("𝐁𝐨𝐥𝐝 𝔉𝔯𝔞𝔨"), "Bold Frak");
    assert_eq!(n.normalize("Å"), "Å"); // the Angstrom sign becomes the letter
    // A joiner between letters of Devanagari stays; between punctuation it goes.
    assert_eq!(n.normalize("क्\u{200D}ष"), "क्\u{200D}ष");
    assert_eq!(n.normalize(".\u{200D}."), "..");
}

#[test]
fn a_normalizer_that_does_nothing_is_refused() {
    let err = UnicodeNormalizer::builder()
        .form(Form::Keep)
        .strip_control(false)
        .strip_invisible(false)
        .collapse_whitespace(false)
        .trim(false)
        .build()
        .unwrap_err();
    assert!(matches!(
        err,
        processors_builtins::ConfigError::NothingToDo(_)
    ));
    assert_eq!(UnicodeNormalizer::ID, "unicode-normalizer");
}
