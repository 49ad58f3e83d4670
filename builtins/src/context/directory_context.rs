//! [`DirectoryContext`]: a bounded listing of the working directory, as the model's context.

use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::message::{Message, MessageList};
use std::fmt::Write as _;
use std::path::PathBuf;

/// The tag of the system message [`DirectoryContext`] adds.
pub const DIRECTORY_TAG: &str = "directory";

/// How many entries past the listed ones are counted before the listing says "more than".
const COUNT_PAST: usize = 10_000;

/// Configures [`DirectoryContext`]; [`build`](DirectoryContextBuilder::build) checks it.
#[derive(Debug, Clone)]
#[must_use]
pub struct DirectoryContextBuilder {
    root: PathBuf,
    max_depth: usize,
    max_entries: usize,
    hidden: bool,
    ignore_files: bool,
}

impl DirectoryContextBuilder {
    /// How deep the listing goes (default 2: the root's entries and theirs).
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// How many entries are listed (default 200); the rest are counted.
    pub fn max_entries(mut self, n: usize) -> Self {
        self.max_entries = n;
        self
    }

    /// Lists hidden entries (names starting with `.`) too (default: not).
    pub fn hidden(mut self, yes: bool) -> Self {
        self.hidden = yes;
        self
    }

    /// Follows `.gitignore`, `.ignore` and `.git/info/exclude` files (default: yes; in a
    /// folder that is not a git repository too).
    pub fn ignore_files(mut self, yes: bool) -> Self {
        self.ignore_files = yes;
        self
    }

    /// Checks the configuration: the root must be a folder.
    ///
    /// ```
    /// use processors::builtins::DirectoryContext;
    /// assert!(DirectoryContext::builder(".").build().is_ok());
    /// assert!(DirectoryContext::builder("/no/such/dir").build().is_err());
    /// assert!(DirectoryContext::builder(".").max_depth(0).build().is_err());
    /// ```
    pub fn build(self) -> Result<DirectoryContext, ConfigError> {
        let root = self
            .root
            .canonicalize()
            .ok()
            .filter(|r| r.is_dir())
            .ok_or_else(|| ConfigError::File {
                path: self.root.display().to_string(),
                reason: "the directory to list must be a folder that exists".into(),
            })?;
        for (option, value) in [
            ("max_depth", self.max_depth),
            ("max_entries", self.max_entries),
        ] {
            if value == 0 {
                return Err(ConfigError::Zero {
                    option,
                    why: "the listing would be empty; give 1 or more",
                });
            }
        }
        Ok(DirectoryContext {
            root,
            max_depth: self.max_depth,
            max_entries: self.max_entries,
            hidden: self.hidden,
            ignore_files: self.ignore_files,
        })
    }
}

/// Adds a system message listing the working directory: folders and files by name, a folder's
/// entries indented under it, folders first, each level sorted by name.
///
/// ```text
/// <directory path="/home/ada/shop">
/// src/
///   billing.rs
///   lib.rs
/// Cargo.toml
/// README.md
/// [3 more entries not listed]
/// </directory>
/// ```
///
/// The listing goes [`max_depth`](DirectoryContextBuilder::max_depth) levels deep and lists
/// at most [`max_entries`](DirectoryContextBuilder::max_entries), counting the others (up to
/// 10,000 past them, then "more than"). What `.gitignore`, `.ignore` and `.git/info/exclude`
/// files leave out is not listed (through the `ignore` crate, as ripgrep reads them), nor are
/// hidden entries, nor `.git`; symbolic links are listed but not followed, and entries that
/// cannot be read are skipped. The folder is read at the start of each run, with blocking
/// calls (each folder listed is read whole, to sort it; the walk stops 10,000 entries past
/// the limit); the message,
/// tagged [`DIRECTORY_TAG`], is sent at every step and never saved to memory.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::DirectoryContext;
/// use processors::prelude::*;
///
/// let root = std::env::temp_dir().join(format!("directory-doc-{}", std::process::id()));
/// std::fs::create_dir_all(root.join("src")).unwrap();
/// std::fs::write(root.join("src/lib.rs"), "").unwrap();
/// std::fs::write(root.join("Cargo.toml"), "").unwrap();
///
/// let model = ScriptedModel::new([Turn::text("A Rust crate.")]);
/// let listing = DirectoryContext::builder(&root).build().unwrap();
/// let agent = Agent::builder().model(model.clone()).input(listing).build().unwrap();
/// agent.generate("what is this project?").await.unwrap();
/// let system = model.requests()[0].prompt[0].text();
/// assert!(system.ends_with("\nsrc/\n  lib.rs\nCargo.toml\n</directory>"), "{system}");
/// # std::fs::remove_dir_all(&root).ok();
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct DirectoryContext {
    root: PathBuf,
    max_depth: usize,
    max_entries: usize,
    hidden: bool,
    ignore_files: bool,
}

impl DirectoryContext {
    /// Lists `root`.
    pub fn builder(root: impl Into<PathBuf>) -> DirectoryContextBuilder {
        DirectoryContextBuilder {
            root: root.into(),
            max_depth: 2,
            max_entries: 200,
            hidden: false,
            ignore_files: true,
        }
    }

    /// The listing, as the system message has it.
    pub fn listing(&self) -> String {
        let walk = ignore::WalkBuilder::new(&self.root)
            .max_depth(Some(self.max_depth))
            .hidden(!self.hidden)
            .parents(self.ignore_files)
            .ignore(self.ignore_files)
            .git_ignore(self.ignore_files)
            .git_exclude(self.ignore_files)
            .git_global(false)
            .require_git(false)
            .follow_links(false)
            .filter_entry(|e| e.file_name() != ".git")
            .sort_by_file_path(|a, b| {
                // Folders first at each level, then by name.
                // A link is not a folder here, as it is not followed.
                let dir =
                    |p: &std::path::Path| !std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
                (dir(a), a.file_name()).cmp(&(dir(b), b.file_name()))
            })
            .build();
        let mut out = format!("<directory path=\"{}\">\n", self.root.display());
        let (mut listed, mut more) = (0, 0);
        for entry in walk.flatten().filter(|e| e.depth() > 0) {
            if listed == self.max_entries {
                more += 1;
                if more > COUNT_PAST {
                    break;
                }
                continue;
            }
            listed += 1;
            let indent = "  ".repeat(entry.depth() - 1);
            let name = entry.file_name().to_string_lossy();
            let slash = if entry.file_type().is_some_and(|t| t.is_dir()) {
                "/"
            } else {
                ""
            };
            let _ = writeln!(out, "{indent}{name}{slash}");
        }
        let _ = match more {
            0 => Ok(()),
            n if n > COUNT_PAST => writeln!(out, "[more than {COUNT_PAST} entries not listed]"),
            1 => writeln!(out, "[1 more entry not listed]"),
            n => writeln!(out, "[{n} more entries not listed]"),
        };
        out.push_str("</directory>");
        out
    }
}

#[processor(crate = processors_runtime, id = "directory-context")]
impl DirectoryContext {
    fn process_input(&self, list: &mut MessageList) {
        list.clear_tag(DIRECTORY_TAG);
        list.add_system(Message::system(self.listing()), Some(DIRECTORY_TAG));
    }
}
