//! [`MemoryImport`]: instruction files such as `AGENTS.md`, with their `@path` imports, given
//! to the model as system context.

use crate::at_file::{OnRefusal, Refusal, under_root};
use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::message::{Message, MessageList};
use processors_runtime::processor::{Abort, ProcessorError};
use serde_json::json;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The tag of the system message [`MemoryImport`] adds.
pub const MEMORY_IMPORT_TAG: &str = "memory-import";

/// The file read when none is named.
pub const DEFAULT_FILE: &str = "AGENTS.md";

/// Configures [`MemoryImport`]; [`build`](MemoryImportBuilder::build) checks it.
#[derive(Debug, Clone)]
#[must_use]
pub struct MemoryImportBuilder {
    root: PathBuf,
    files: Vec<String>,
    max_bytes: u64,
    max_depth: usize,
    on_refusal: OnRefusal,
}

impl MemoryImportBuilder {
    /// Reads `path` (relative to the root); may be called for several files, read in order.
    /// Without it, [`DEFAULT_FILE`].
    pub fn file(mut self, path: impl Into<String>) -> Self {
        self.files.push(path.into());
        self
    }

    /// The most bytes read for a run, all files and imports together (default 256 KiB).
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// How deep imports may nest (default 5; with 0, every `@path` line is refused as nested
    /// too deep: only the files themselves are read).
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// What to do with an import that cannot be read (default: end the run).
    pub fn on_refusal(mut self, on_refusal: OnRefusal) -> Self {
        self.on_refusal = on_refusal;
        self
    }

    /// Checks the configuration: the root must exist.
    ///
    /// ```
    /// use processors::builtins::MemoryImport;
    /// assert!(MemoryImport::builder(".").build().is_ok());
    /// assert!(MemoryImport::builder("/no/such/root").build().is_err());
    /// assert!(MemoryImport::builder(".").max_bytes(0).build().is_err());
    /// ```
    pub fn build(self) -> Result<MemoryImport, ConfigError> {
        let root = self.root.canonicalize().map_err(|e| ConfigError::File {
            path: self.root.display().to_string(),
            reason: format!("the root of memory imports must be a folder that exists ({e})"),
        })?;
        if self.max_bytes == 0 {
            return Err(ConfigError::Zero {
                option: "max_bytes",
                why: "nothing could be read; give the most bytes a run may read",
            });
        }
        let files = match self.files.is_empty() {
            true => vec![DEFAULT_FILE.to_owned()],
            false => self.files,
        };
        Ok(MemoryImport {
            root,
            files,
            max_bytes: self.max_bytes,
            max_depth: self.max_depth,
            on_refusal: self.on_refusal,
        })
    }
}

/// Gives the model instruction files (`AGENTS.md` by default) as a system message, with
/// their imports in place.
///
/// A line that is `@path` alone (around it only whitespace; a path has a `.` or a `/`, so
/// `@alice` is not one) is replaced by the file it names, relative to the file that imports it, whose own imports are read in turn, up to
/// [`max_depth`](MemoryImportBuilder::max_depth) deep. Lines inside fenced code blocks
/// (```` ``` ```` or `~~~`) are left as they are, and so is `@` within a line, such as an
/// address. An import is refused, and never read, when its path is absolute, leads outside
/// the root (`..`, or a symbolic link out of it), is not a regular file or not UTF-8 text,
/// would take the run past [`max_bytes`](MemoryImportBuilder::max_bytes), nests too deep, or
/// imports a file that is importing it (a cycle). A file imported a second time is not
/// repeated: a note says it is above. A refusal ends the run with a trip wire naming the
/// import and why, or leaves a note in its place ([`OnRefusal`]). A file the builder names
/// that does not exist is skipped: a project need not have one.
///
/// The files are read at the start of each run (edits apply to the next run), with blocking
/// calls bounded by the byte limit. Each becomes `<memory path="…">…</memory>` in one system
/// message, tagged [`MEMORY_IMPORT_TAG`], sent at every step and never saved to memory.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::MemoryImport;
/// use processors::prelude::*;
///
/// let root = std::env::temp_dir().join(format!("memory-import-doc-{}", std::process::id()));
/// std::fs::create_dir_all(root.join("docs")).unwrap();
/// std::fs::write(root.join("AGENTS.md"), "Use British spelling.\n@docs/style.md\n").unwrap();
/// std::fs::write(root.join("docs/style.md"), "Short sentences.").unwrap();
///
/// let model = ScriptedModel::new([Turn::text("Understood.")]);
/// let agent = Agent::builder()
///     .model(model.clone())
///     .input(MemoryImport::builder(&root).build().unwrap())
///     .build()
///     .unwrap();
/// agent.generate("hello").await.unwrap();
/// assert_eq!(
///     model.requests()[0].prompt[0].text(),
///     "<memory path=\"AGENTS.md\">\nUse British spelling.\nShort sentences.\n</memory>"
/// );
/// # std::fs::remove_dir_all(&root).ok();
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct MemoryImport {
    root: PathBuf,
    files: Vec<String>,
    max_bytes: u64,
    max_depth: usize,
    on_refusal: OnRefusal,
}

/// One run's reading: the files on the way to the current one, those read, the bytes left.
struct Reading {
    chain: Vec<PathBuf>,
    read: HashSet<PathBuf>,
    budget: u64,
}

impl MemoryImport {
    /// Imports from files under `root`.
    pub fn builder(root: impl Into<PathBuf>) -> MemoryImportBuilder {
        MemoryImportBuilder {
            root: root.into(),
            files: Vec::new(),
            max_bytes: 256 * 1024,
            max_depth: 5,
            on_refusal: OnRefusal::default(),
        }
    }

    /// The system message's text (`None` when no file exists), or the first refusal under
    /// [`OnRefusal::Abort`].
    pub fn load(&self) -> Result<Option<String>, Refusal> {
        let mut reading = Reading {
            chain: Vec::new(),
            read: HashSet::new(),
            budget: self.max_bytes,
        };
        let mut blocks = Vec::new();
        for file in &self.files {
            if !self.root.join(file).exists() {
                continue;
            }
            let text = match self.import(&self.root, file, 0, &mut reading) {
                Ok(text) => text,
                Err(refusal) if self.on_refusal == OnRefusal::Abort => return Err(refusal),
                Err(refusal) => format!("[@{} was not read: {}]", refusal.reference, refusal.why),
            };
            blocks.push(format!(
                "<memory path=\"{file}\">\n{}\n</memory>",
                text.trim_end_matches('\n')
            ));
        }
        Ok((!blocks.is_empty()).then(|| blocks.join("\n\n")))
    }

    /// The text of `reference` (relative to `dir`) with its imports in place.
    fn import(
        &self,
        dir: &Path,
        reference: &str,
        depth: usize,
        reading: &mut Reading,
    ) -> Result<String, Refusal> {
        let refuse = |why: String| Refusal {
            reference: reference.to_owned(),
            why,
        };
        let path = self.resolve(dir, reference).map_err(refuse)?;
        if reading.chain.contains(&path) {
            return Err(refuse(
                "it imports itself through the files that import it".into(),
            ));
        }
        if depth > self.max_depth {
            return Err(refuse(format!(
                "imports nest deeper than {}",
                self.max_depth
            )));
        }
        if !reading.read.insert(path.clone()) {
            return Ok(format!("[@{reference}: imported above]"));
        }
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        if size > reading.budget {
            return Err(refuse(format!(
                "{size} bytes, over what is left of the limit of {} bytes for all imports",
                self.max_bytes
            )));
        }
        reading.budget -= size;
        let bytes = std::fs::read(&path).map_err(|e| refuse(format!("cannot be read: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|_| refuse("not UTF-8 text".into()))?;
        let here = path.parent().unwrap_or(&self.root).to_owned();
        reading.chain.push(path);
        let mut out = String::with_capacity(text.len());
        let mut fence: Option<&str> = None;
        for line in text.split_inclusive('\n') {
            let trimmed = line.trim();
            let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
            match (fence, marker) {
                (None, Some(m)) => fence = Some(m),
                (Some(open), Some(m)) if open == m => fence = None,
                _ => {}
            }
            let nested = trimmed.strip_prefix('@').filter(|r| {
                fence.is_none() && !r.contains(char::is_whitespace) && r.contains(['.', '/'])
            });
            let Some(nested) = nested else {
                out.push_str(line);
                continue;
            };
            match self.import(&here, nested, depth + 1, reading) {
                Ok(text) => out.push_str(text.trim_end_matches('\n')),
                Err(refusal) if self.on_refusal == OnRefusal::Abort => return Err(refusal),
                Err(refusal) => out.push_str(&format!(
                    "[@{} was not imported: {}]",
                    refusal.reference, refusal.why
                )),
            }
            out.push('\n');
        }
        reading.chain.pop();
        Ok(out)
    }

    /// The file `reference` names from `dir`, under the root.
    fn resolve(&self, dir: &Path, reference: &str) -> Result<PathBuf, String> {
        let path = under_root(&self.root, dir, reference)?;
        if !path.is_file() {
            return Err("not a regular file".into());
        }
        Ok(path)
    }
}

#[processor(crate = processors_runtime, id = "memory-import")]
impl MemoryImport {
    fn process_input(&self, list: &mut MessageList, abort: Abort) -> Result<(), ProcessorError> {
        let text = match self.load() {
            Ok(text) => text,
            Err(refusal) => {
                return Err(abort
                    .reason(format!("@{}: {}", refusal.reference, refusal.why))
                    .metadata(json!({ "import": refusal.reference, "why": refusal.why }))
                    .into());
            }
        };
        list.clear_tag(MEMORY_IMPORT_TAG);
        if let Some(text) = text {
            list.add_system(Message::system(text), Some(MEMORY_IMPORT_TAG));
        }
        Ok(())
    }
}
