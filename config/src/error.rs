//! What loading a file can refuse: every mistake of the file at once, each with its place.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

/// One mistake in a file: where it is and what to do about it.
///
/// ```
/// use processors_config::Loader;
/// let error = Loader::new().agent_str("agent.toml", "modle = \"openai/gpt-4o\"\n").err().unwrap();
/// let first = &error.diagnostics()[0];
/// assert_eq!((first.file.as_str(), first.line, first.column), ("agent.toml", 1, 1));
/// assert!(first.message.starts_with("unknown key `modle` (did you mean `model`?)"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file, as given to the loader.
    pub file: String,
    /// The line, from 1.
    pub line: usize,
    /// The column, from 1, in characters.
    pub column: usize,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.message
        )
    }
}

/// Why a file could not be loaded: it could not be read, or it holds mistakes, all of them
/// listed (one a line, `file:line:column: message`).
///
/// ```
/// use processors_config::{Loader, LoadError};
/// let text = "model = { scripted = [\"hi\"] }\ninput = [\"regex-filtr\"]\nmax_steps = 0\n";
/// let error = Loader::new().agent_str("agent.toml", text).err().unwrap();
/// assert_eq!(error.diagnostics().len(), 2);
/// assert!(error.to_string().starts_with("agent.toml:2:10: unknown processor `regex-filtr`"));
/// ```
///
/// Its `Debug` is the same report, as a `main` that returns the error with `?` prints it
/// (`Error: agent.toml:2:10: …`); `{:#?}` shows the structure.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// The file holds mistakes; every one found is here, in the order of the file.
    #[error("{}", Lines(.0))]
    Invalid(Vec<Diagnostic>),
}

impl LoadError {
    /// The mistakes found (none when the file could not be read).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            LoadError::Invalid(d) => d,
            LoadError::Read { .. } => &[],
        }
    }
}

impl fmt::Debug for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (f.alternate(), self) {
            (false, _) => fmt::Display::fmt(self, f),
            (true, LoadError::Read { path, source }) => f
                .debug_struct("Read")
                .field("path", path)
                .field("source", source)
                .finish(),
            (true, LoadError::Invalid(d)) => f.debug_tuple("Invalid").field(d).finish(),
        }
    }
}

struct Lines<'a>(&'a [Diagnostic]);

impl fmt::Display for Lines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

/// The text being loaded and the mistakes found in it so far (serde_derive's `Ctxt`): each
/// check reports here and goes on, so one load lists every mistake.
pub(crate) struct Errors<'s> {
    file: &'s str,
    text: &'s str,
    found: Vec<(usize, String)>,
}

impl<'s> Errors<'s> {
    pub fn new(file: &'s str, text: &'s str) -> Self {
        Errors {
            file,
            text,
            found: Vec::new(),
        }
    }

    /// Reports `message` at the start of `span` (a byte range of the text).
    pub fn at(&mut self, span: &Range<usize>, message: impl Into<String>) {
        self.found.push((span.start, message.into()));
    }

    /// Reports a deserialisation error at its span, or at `fallback` when it has none.
    pub fn serde(&mut self, error: &toml::de::Error, fallback: &Range<usize>, prefix: &str) {
        let span = error.span().unwrap_or_else(|| fallback.clone());
        let message = crate::names::suggest_in(error.message().trim_end());
        // Serde says "field"; a file says "option", and the fix is to add it.
        let message = match message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.strip_suffix('`'))
        {
            Some(field) => {
                format!("the option `{field}` is required; add it, like `{field} = ...`")
            }
            None => message,
        };
        self.at(&span, format!("{prefix}{message}"));
    }

    /// The file's name.
    pub fn file(&self) -> &'s str {
        self.file
    }

    /// The line and column of a byte offset.
    pub fn position(&self, offset: usize) -> (usize, usize) {
        line_column(self.text, offset)
    }

    /// The mistakes, in the order of the file, or `Ok` when there is none.
    pub fn finish(mut self) -> Result<(), LoadError> {
        if self.found.is_empty() {
            return Ok(());
        }
        self.found.sort_by_key(|(at, _)| *at);
        let diagnostics = self
            .found
            .iter()
            .map(|(at, message)| {
                let (line, column) = line_column(self.text, *at);
                Diagnostic {
                    file: self.file.to_owned(),
                    line,
                    column,
                    message: message.clone(),
                }
            })
            .collect();
        Err(LoadError::Invalid(diagnostics))
    }
}

/// The line and column (from 1; the column in characters) of byte `offset` of `text`. An
/// offset past the end, or inside a character, counts from the last character boundary
/// before it.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::line_column;

    #[test]
    fn offsets_become_lines_and_columns_in_characters() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        // After `bé `: three characters, four bytes.
        assert_eq!(line_column(text, 10), (2, 4));
        // Inside `é`, and past the end.
        assert_eq!(line_column(text, 8), (2, 2));
        assert_eq!(line_column(text, 999), (3, 1));
    }
}
