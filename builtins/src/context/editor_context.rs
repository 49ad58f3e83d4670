//! [`EditorContext`]: what the user has open in their editor (file, cursor, selection), given
//! to the model with their message when it changed.

use processors_macros::processor;
use processors_runtime::RequestContext;
use processors_runtime::message::{Message, MessageList, Part, Role};
use serde::Deserialize;
use std::fmt::Write as _;

/// The request context's key for an [`EditorState`] given as JSON (from a client of the
/// gateway, say), when no typed one is there.
pub const EDITOR_KEY: &str = "editor";

/// The first line of the text part [`EditorContext`] adds.
pub const OPENING: &str = "<editor>";

/// The closing line of the text [`EditorContext`] adds.
const CLOSING: &str = "</editor>";

/// What the user's editor shows, as the application knows it. Put it in the request context
/// as a value (`RequestContext::with(state)`), or as JSON under [`EDITOR_KEY`], with the
/// fields in camelCase (`activeFile`, `cursor`, `selectedText`, `openFiles`) or snake_case.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditorState {
    /// The file being edited, as the application names it (a path relative to the project).
    #[serde(default, alias = "active_file")]
    pub active_file: Option<String>,
    /// Where the cursor is in it.
    #[serde(default)]
    pub cursor: Option<Cursor>,
    /// The text selected in it.
    #[serde(default, alias = "selected_text")]
    pub selected_text: Option<String>,
    /// The other files open, most recent first.
    #[serde(default, alias = "open_files")]
    pub open_files: Vec<String>,
}

/// A place in a file, counted from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Cursor {
    /// The line.
    pub line: u32,
    /// The column, in characters.
    #[serde(alias = "character")]
    pub column: u32,
}

/// Adds the user's editor state ([`EditorState`], from the request context) to their
/// message, as a text part before what they typed:
///
/// ```text
/// <editor>
/// active file: src/billing.rs
/// cursor: line 42, column 9
/// selected text:
/// fn total(&self) -> u64 {
/// open files: src/lib.rs, Cargo.toml
/// </editor>
/// ```
///
/// Only when it changed: when the conversation (the history memory loaded, or the messages
/// the client sent) already has the same state in an earlier user message, nothing is added,
/// since the model has it there; a state that differs is given whole. A run without a state
/// adds nothing. The selection is cut at [`max_selection`](Self::max_selection) characters
/// (4,000 by default), and at most 20 open files are listed. Its text is the user's message,
/// saved with it by memory, which is how the next run knows what the model was told.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::EditorContext;
/// use processors::builtins::editor_context::{Cursor, EditorState};
/// use processors::prelude::*;
///
/// let model = ScriptedModel::new([Turn::text("It adds the lines.")]);
/// let agent = Agent::builder().model(model.clone()).input(EditorContext::new()).build().unwrap();
/// let editor = EditorState {
///     active_file: Some("src/billing.rs".into()),
///     cursor: Some(Cursor { line: 42, column: 9 }),
///     ..EditorState::default()
/// };
/// let options = GenerateOptions::new().request_context(RequestContext::new().with(editor));
/// agent.generate_with("what does this do?", options).await.unwrap();
/// assert_eq!(
///     model.requests()[0].prompt[0].text(),
///     "<editor>\nactive file: src/billing.rs\ncursor: line 42, column 9\n</editor>\n\nwhat does this do?"
/// );
/// # });
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct EditorContext {
    max_selection: usize,
}

impl Default for EditorContext {
    fn default() -> Self {
        Self::new()
    }
}

/// How many open files are listed.
const MAX_OPEN_FILES: usize = 20;

impl EditorContext {
    /// Adds the editor's state when it changed, the selection cut at 4,000 characters.
    pub fn new() -> Self {
        Self {
            max_selection: 4_000,
        }
    }

    /// How many characters of the selection are given (0 leaves it out).
    pub fn max_selection(mut self, chars: usize) -> Self {
        self.max_selection = chars;
        self
    }

    /// The state the request context holds: a typed [`EditorState`], or JSON under
    /// [`EDITOR_KEY`] (`None` when there is neither, or the JSON is not a state).
    pub fn state(cx: &RequestContext) -> Option<EditorState> {
        if let Some(state) = cx.get::<EditorState>() {
            return Some(state.clone());
        }
        serde_json::from_value(cx.value(EDITOR_KEY)?.clone()).ok()
    }

    /// The text given for `state` (`None` when it holds nothing).
    pub fn render(&self, state: &EditorState) -> Option<String> {
        let mut lines = String::new();
        if let Some(file) = &state.active_file {
            let _ = writeln!(lines, "active file: {file}");
        }
        if let Some(Cursor { line, column }) = state.cursor {
            let _ = writeln!(lines, "cursor: line {line}, column {column}");
        }
        if let Some(selected) = state.selected_text.as_deref().filter(|s| !s.is_empty())
            && self.max_selection > 0
        {
            let cut: String = selected.chars().take(self.max_selection).collect();
            let more = selected.chars().count() - cut.chars().count();
            let _ = writeln!(lines, "selected text:\n{}", cut.trim_end_matches('\n'));
            if more > 0 {
                let _ = writeln!(lines, "[{more} more characters selected]");
            }
        }
        if !state.open_files.is_empty() {
            let listed = &state.open_files[..state.open_files.len().min(MAX_OPEN_FILES)];
            let more = state.open_files.len() - listed.len();
            let _ = write!(lines, "open files: {}", listed.join(", "));
            let _ = match more {
                0 => writeln!(lines),
                n => writeln!(lines, " and {n} more"),
            };
        }
        (!lines.is_empty()).then(|| format!("{OPENING}\n{lines}{CLOSING}"))
    }
}

/// The editor state at the start of `text`, if it has one.
fn given(text: &str) -> Option<&str> {
    let end = text.strip_prefix(OPENING)?.find(CLOSING)? + OPENING.len() + CLOSING.len();
    Some(&text[..end])
}

/// The text part of the user's `messages` that gave the editor state last, if any.
fn last_given<'a>(messages: impl Iterator<Item = &'a Message>) -> Option<&'a str> {
    messages
        .filter(|m| m.role == Role::User)
        .flat_map(|m| &m.content.parts)
        .filter_map(|p| match p {
            Part::Text { text } if text.starts_with(OPENING) => Some(&**text),
            _ => None,
        })
        .last()
}

/// Whether `part` gives exactly the state `text` (then a blank line, or nothing).
fn gives(part: &str, text: &str) -> bool {
    part.strip_prefix(text)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("\n\n"))
}

#[processor(crate = processors_runtime, id = "editor-context")]
impl EditorContext {
    fn process_input(&self, list: &mut MessageList, cx: &RequestContext) {
        let Some(text) = Self::state(cx).and_then(|s| self.render(&s)) else {
            return;
        };
        let Some(newest) = list.all().filter(|m| m.role == Role::User).last().cloned() else {
            return;
        };
        let earlier = list.all().take_while(|m| m.id != newest.id);
        if last_given(earlier).is_some_and(|part| gives(part, &text)) {
            return;
        }
        let mut message = newest;
        let parts = &mut message.content.parts;
        let at = parts.iter().position(|p| matches!(p, Part::Text { .. }));
        match at.and_then(|at| parts.get_mut(at)) {
            // One text: the state (in place of one given before), a blank line, what the
            // user typed.
            Some(Part::Text { text: typed }) => {
                let rest = given(typed).map_or(&**typed, |old| {
                    typed[old.len()..]
                        .strip_prefix("\n\n")
                        .unwrap_or(&typed[old.len()..])
                });
                *typed = format!("{text}\n\n{rest}").into();
            }
            _ => parts.insert(0, Part::Text { text: text.into() }),
        }
        list.replace(message);
    }
}
