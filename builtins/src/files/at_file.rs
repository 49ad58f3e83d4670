//! [`AtFileExpansion`]: `@path` references in the user's messages become the files' contents.

use processors_macros::processor;
use processors_runtime::message::{Message, Part, Role};
use processors_runtime::processor::{Abort, ProcessorError};
use serde_json::json;
use std::path::{Path, PathBuf};

/// What to do with a reference that cannot be expanded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnRefusal {
    /// End the run with a trip wire that names the reference and why (the default).
    #[default]
    Abort,
    /// Keep the message and append a note that says which reference was left out and why.
    Note,
}

/// Expands `@path` references in the user's messages into the files' contents, for paths
/// under a configured root only.
///
/// A reference is `@` at the start of a word followed by a relative path (`@notes/plan.md`);
/// trailing punctuation is not part of it, and `name@example.com` is not a reference. Each
/// file found is appended to its message as a text part `<file path="…">…</file>`. A reference
/// is refused, and the file never read, when its path is absolute, does not exist, resolves
/// outside the root (`..`, or a symbolic link pointing out of it), is not a regular file, is
/// larger than the size cap (256 KiB by default), or is not UTF-8 text; so is any reference past
/// the per-run file limit (10 by default). A refusal ends the run with a trip wire, or leaves a
/// note ([`OnRefusal`]).
///
/// Files are read with blocking calls bounded by the size cap, at the start of the run.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::AtFileExpansion;
/// use processors::prelude::*;
///
/// let root = std::env::temp_dir().join(format!("at-file-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&root).unwrap();
/// std::fs::write(root.join("plan.md"), "1. Ship it").unwrap();
///
/// let model = ScriptedModel::new([Turn::text("Looks good")]);
/// let agent = Agent::builder()
///     .model(model.clone())
///     .input(AtFileExpansion::new(&root).unwrap())
///     .build()
///     .unwrap();
/// agent.generate("Review @plan.md please").await.unwrap();
/// let sent = model.requests()[0].prompt[0].text();
/// assert_eq!(sent, "Review @plan.md please\n\n<file path=\"plan.md\">\n1. Ship it\n</file>");
/// # std::fs::remove_dir_all(&root).ok();
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct AtFileExpansion {
    root: PathBuf,
    max_bytes: u64,
    max_files: usize,
    on_refusal: OnRefusal,
}

/// Why a reference was not expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The reference, as written after `@`.
    pub reference: String,
    /// Why.
    pub why: String,
}

impl AtFileExpansion {
    /// Expands references to files under `root`, which must exist.
    pub fn new(root: impl AsRef<Path>) -> std::io::Result<Self> {
        let root = root.as_ref().canonicalize().map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "the root of @file references, {}, cannot be used: {e}",
                    root.as_ref().display()
                ),
            )
        })?;
        if !root.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "the root of @file references, {}, is not a directory",
                    root.display()
                ),
            ));
        }
        Ok(AtFileExpansion {
            root,
            max_bytes: 256 * 1024,
            max_files: 10,
            on_refusal: OnRefusal::Abort,
        })
    }

    /// Refuses files larger than `bytes`.
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Expands at most `n` references in a run.
    pub fn max_files(mut self, n: usize) -> Self {
        self.max_files = n;
        self
    }

    /// What to do with a reference that cannot be expanded.
    pub fn on_refusal(mut self, on_refusal: OnRefusal) -> Self {
        self.on_refusal = on_refusal;
        self
    }

    /// The contents of the file a reference names, or why it cannot be read.
    pub fn read(&self, reference: &str) -> Result<String, Refusal> {
        let refuse = |why: String| Refusal {
            reference: reference.to_owned(),
            why,
        };
        let resolved = under_root(&self.root, &self.root, reference).map_err(refuse)?;
        let meta =
            std::fs::metadata(&resolved).map_err(|e| refuse(format!("cannot be read: {e}")))?;
        if !meta.is_file() {
            return Err(refuse("not a regular file".into()));
        }
        if meta.len() > self.max_bytes {
            return Err(refuse(format!(
                "{} bytes, over the limit of {} bytes",
                meta.len(),
                self.max_bytes
            )));
        }
        let bytes = std::fs::read(&resolved).map_err(|e| refuse(format!("cannot be read: {e}")))?;
        String::from_utf8(bytes).map_err(|_| refuse("not UTF-8 text".into()))
    }
}

/// Where `reference`, relative to `dir`, leads, if it stays under `root` (canonical): not
/// absolute, existing, and not out of the root through `..` or a symbolic link.
pub(crate) fn under_root(root: &Path, dir: &Path, reference: &str) -> Result<PathBuf, String> {
    if Path::new(reference).is_absolute() {
        return Err("absolute paths are not allowed; use a path under the root".into());
    }
    let resolved = dir
        .join(reference)
        .canonicalize()
        .map_err(|_| "no such file under the root".to_owned())?;
    if !resolved.starts_with(root) {
        return Err("the path leads outside the root".into());
    }
    Ok(resolved)
}

/// The `@` references in a text, in order.
pub fn references(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut previous: Option<char> = None;
    for (i, c) in text.char_indices() {
        if c == '@' && previous.is_none_or(char::is_whitespace) {
            let rest = &text[i + 1..];
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let reference =
                rest[..end].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '\'']);
            if !reference.is_empty() {
                out.push(reference);
            }
        }
        previous = Some(c);
    }
    out
}

#[processor(crate = processors_runtime, id = "at-file-expansion")]
impl AtFileExpansion {
    fn process_input(
        &self,
        mut messages: Vec<Message>,
        abort: Abort,
    ) -> Result<Vec<Message>, ProcessorError> {
        let mut expanded = 0;
        for message in messages.iter_mut().filter(|m| m.role == Role::User) {
            let text = message.text();
            let mut added = Vec::new();
            for reference in references(&text) {
                let read = match expanded < self.max_files {
                    true => self.read(reference),
                    false => Err(Refusal {
                        reference: reference.to_owned(),
                        why: format!("over the limit of {} files a run", self.max_files),
                    }),
                };
                match read {
                    Ok(contents) => {
                        expanded += 1;
                        added.push(format!(
                            "\n\n<file path=\"{reference}\">\n{}\n</file>",
                            contents.trim_end_matches('\n')
                        ));
                    }
                    Err(refusal) if self.on_refusal == OnRefusal::Abort => {
                        return Err(abort
                            .reason(format!("@{}: {}", refusal.reference, refusal.why))
                            .metadata(json!({ "reference": refusal.reference, "why": refusal.why }))
                            .into());
                    }
                    Err(refusal) => added.push(format!(
                        "\n\n[@{} was not included: {}]",
                        refusal.reference, refusal.why
                    )),
                }
            }
            message.content.parts.extend(
                added
                    .into_iter()
                    .map(|text| Part::Text { text: text.into() }),
            );
        }
        Ok(messages)
    }
}
