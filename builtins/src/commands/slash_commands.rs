//! [`SlashCommands`]: a user's `/name args` message becomes the prompt template of that name,
//! with the arguments put in.

use crate::config::ConfigError;
use crate::shell_injection::{Segment, ShellInjection, segments};
use processors_macros::processor;
use processors_runtime::message::{Message, Part, Role};
use processors_runtime::processor::{Abort, ProcessorError};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use super::ARGS;

/// The largest command file [`SlashCommandsBuilder::dir`] reads (64 KiB).
pub const MAX_FILE_BYTES: u64 = 64 * 1024;

/// What to do with `/name` when no command has that name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnUnknown {
    /// Send the message as it is (the default): a path such as `/etc/hosts` or a fraction
    /// at the start of a message is not a mistake.
    #[default]
    Pass,
    /// End the run with a trip wire that names the commands there are.
    Abort,
}

/// One command: its template, and what it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The prompt the command becomes; [`ARGS`] is replaced with the arguments.
    pub template: String,
    /// One line saying what it does (listed when an unknown command is refused).
    pub description: Option<String>,
}

/// Configures [`SlashCommands`]; [`build`](SlashCommandsBuilder::build) checks the names,
/// reads the folder and refuses empty templates.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct SlashCommandsBuilder {
    commands: Vec<(String, Command)>,
    dirs: Vec<PathBuf>,
    on_unknown: OnUnknown,
    shell: Option<ShellInjection>,
}

impl SlashCommandsBuilder {
    /// Adds the command `/name`, which becomes `template`.
    pub fn command(self, name: impl Into<String>, template: impl Into<String>) -> Self {
        self.described(name, template, None::<String>)
    }

    /// Adds the command `/name` with a description.
    pub fn described(
        mut self,
        name: impl Into<String>,
        template: impl Into<String>,
        description: Option<impl Into<String>>,
    ) -> Self {
        self.commands.push((
            name.into(),
            Command {
                template: template.into(),
                description: description.map(Into::into),
            },
        ));
        self
    }

    /// Adds the commands of a folder, read at [`build`](Self::build): each `.md` or `.txt`
    /// file is a command named by its file name without the extension, whose text is the
    /// template; a file in a subfolder is named `folder:name`. A first line
    /// `description: …` is the description, not part of the template. Other files are
    /// skipped; a file larger than [`MAX_FILE_BYTES`], not UTF-8, or unreadable is an error.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dirs.push(dir.into());
        self
    }

    /// Lets templates run the programs `shell` allows with `!{program args}` (see
    /// [`ShellInjection`]); without it, `!{…}` is text.
    pub fn shell(mut self, shell: ShellInjection) -> Self {
        self.shell = Some(shell);
        self
    }

    /// What to do with `/name` when no command has that name (default: pass it on).
    pub fn on_unknown(mut self, on_unknown: OnUnknown) -> Self {
        self.on_unknown = on_unknown;
        self
    }

    /// Checks the configuration and reads the folders.
    ///
    /// ```
    /// use processors::builtins::SlashCommands;
    /// assert!(SlashCommands::builder().command("review", "Review: {{args}}").build().is_ok());
    /// assert!(SlashCommands::builder().command("re view", "x").build().is_err());
    /// assert!(SlashCommands::builder().command("review", " ").build().is_err());
    /// assert!(SlashCommands::builder().build().is_err());
    /// ```
    pub fn build(self) -> Result<SlashCommands, ConfigError> {
        let mut commands = self.commands;
        for dir in &self.dirs {
            read_dir(dir, "", &mut commands)?;
        }
        if let Some(shell) = &self.shell {
            shell.check()?;
        }
        let mut by_name = BTreeMap::new();
        let mut runs = BTreeMap::new();
        for (name, command) in commands {
            check_name(&name)?;
            if command.template.trim().is_empty() {
                return Err(ConfigError::Empty {
                    what: "a command's template",
                    why: "give each command the prompt it becomes",
                });
            }
            if let Some(shell) = &self.shell {
                let parts = segments(command.template.trim_end()).map_err(|reason| {
                    ConfigError::Template {
                        name: name.clone(),
                        reason,
                    }
                })?;
                shell.check_template(&name, &parts)?;
                if parts.iter().any(|p| matches!(p, Segment::Run(_))) {
                    runs.insert(name.clone(), parts);
                }
            }
            if by_name.insert(name.clone(), command).is_some() {
                return Err(ConfigError::Duplicate {
                    what: "commands",
                    name,
                });
            }
        }
        if by_name.is_empty() {
            return Err(ConfigError::NothingToDo("no command is defined"));
        }
        Ok(SlashCommands {
            commands: by_name,
            on_unknown: self.on_unknown,
            shell: self.shell.map(|shell| (shell, runs)),
        })
    }
}

/// A name is letters, digits, `-`, `_`, and `:` between parts (`git:commit`).
fn check_name(name: &str) -> Result<(), ConfigError> {
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
    };
    match name.split(':').all(part_ok) {
        true => Ok(()),
        false => Err(ConfigError::InvalidName {
            what: "command",
            name: name.to_owned(),
            why: "a name is letters, digits, `-` and `_`, with `:` between parts",
        }),
    }
}

/// Reads the commands of `dir`, named with `prefix` (`folder:`).
fn read_dir(
    dir: &Path,
    prefix: &str,
    commands: &mut Vec<(String, Command)>,
) -> Result<(), ConfigError> {
    let failed = |path: &Path, reason: String| ConfigError::File {
        path: path.display().to_string(),
        reason,
    };
    let entries = std::fs::read_dir(dir).map_err(|e| failed(dir, e.to_string()))?;
    let mut entries: Vec<PathBuf> = entries
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(|e| failed(dir, e.to_string()))?;
    entries.sort();
    for path in entries {
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let meta = std::fs::metadata(&path).map_err(|e| failed(&path, e.to_string()))?;
        if meta.is_dir() {
            read_dir(&path, &format!("{prefix}{stem}:"), commands)?;
            continue;
        }
        let ext = path.extension().and_then(|e| e.to_str());
        if !meta.is_file() || !matches!(ext, Some("md" | "txt")) {
            continue;
        }
        if meta.len() > MAX_FILE_BYTES {
            let reason = format!("{} bytes, over {MAX_FILE_BYTES}", meta.len());
            return Err(failed(&path, reason));
        }
        let bytes = std::fs::read(&path).map_err(|e| failed(&path, e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|_| failed(&path, "not UTF-8 text".into()))?;
        let (description, template) = match text.split_once('\n') {
            Some((first, rest)) if first.starts_with("description:") => {
                let d = first["description:".len()..].trim();
                (Some(d.to_owned()), rest.to_owned())
            }
            _ => (None, text),
        };
        commands.push((
            format!("{prefix}{stem}"),
            Command {
                template,
                description,
            },
        ));
    }
    Ok(())
}

/// Expands a user's message that begins with `/name` into the prompt template of that name.
///
/// A command is `/name` at the very start of a user message's first text part (after
/// whitespace), followed by whitespace or the end; the arguments are the rest of the part,
/// trimmed. Every [`ARGS`] (`{{args}}`) in the template becomes the arguments; a template
/// without it gets the arguments, when there are some, after a blank line. The arguments are
/// put in as they are and not read again, so `{{args}}` typed by the user stays as typed.
/// Only the newest user message of the input is read (a client that sends its history again
/// does not run its earlier commands again), never the model's output or tool results.
///
/// A template may run programs with `!{program args}` when the builder is given a
/// [`ShellInjection`] that allows them (no shell, bounded in time and output); the output
/// takes the command's place.
///
/// `/name` that names no command passes as it is, or ends the run ([`OnUnknown`]); text that
/// cannot be a name (`/etc/hosts`, `/ 2`) is not a command. `//name`, for a command's name,
/// sends `/name` as text.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::SlashCommands;
/// use processors::prelude::*;
///
/// let commands = SlashCommands::builder()
///     .command("review", "Review this code for bugs, worst first:\n\n{{args}}")
///     .build()
///     .unwrap();
/// let model = ScriptedModel::new([Turn::text("Line 2 divides by zero.")]);
/// let agent = Agent::builder().model(model.clone()).input(commands).build().unwrap();
/// agent.generate("/review let x = 1 / 0;").await.unwrap();
/// assert_eq!(
///     model.requests()[0].prompt[0].text(),
///     "Review this code for bugs, worst first:\n\nlet x = 1 / 0;"
/// );
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct SlashCommands {
    commands: BTreeMap<String, Command>,
    on_unknown: OnUnknown,
    /// The shell, and the templates that run commands, split.
    shell: Option<(ShellInjection, BTreeMap<String, Vec<Segment>>)>,
}

/// What a message's text is, read as a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expansion {
    /// Not a command: sent as it is.
    Text,
    /// A command: the text it becomes.
    Command(String),
    /// `//…`: sent with one slash less.
    Escaped(String),
    /// `/name` with no command of that name.
    Unknown(String),
}

impl SlashCommands {
    /// Starts an empty configuration.
    pub fn builder() -> SlashCommandsBuilder {
        SlashCommandsBuilder::default()
    }

    /// The commands, by name.
    pub fn commands(&self) -> &BTreeMap<String, Command> {
        &self.commands
    }

    /// What `text` becomes.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use processors::builtins::SlashCommands;
    /// use processors::builtins::slash_commands::Expansion;
    /// let c = SlashCommands::builder().command("tldr", "Summarise in one line.").build().unwrap();
    /// assert_eq!(c.expand("/tldr").await, Expansion::Command("Summarise in one line.".into()));
    /// assert_eq!(
    ///     c.expand("/tldr the text").await,
    ///     Expansion::Command("Summarise in one line.\n\nthe text".into())
    /// );
    /// assert_eq!(c.expand("/tdlr").await, Expansion::Unknown("tdlr".into()));
    /// assert_eq!(c.expand("/etc/hosts is missing").await, Expansion::Text);
    /// assert_eq!(c.expand("//tldr is a command").await, Expansion::Escaped("/tldr is a command".into()));
    /// assert_eq!(c.expand("// a comment").await, Expansion::Text);
    /// assert_eq!(c.expand("tldr").await, Expansion::Text);
    /// # });
    /// ```
    pub async fn expand(&self, text: &str) -> Expansion {
        let trimmed = text.trim_start();
        let Some(rest) = trimmed.strip_prefix('/') else {
            return Expansion::Text;
        };
        let (escaped, rest) = match rest.strip_prefix('/') {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (name, args) = (&rest[..end], rest[end..].trim());
        let command = match (escaped, self.commands.get(name)) {
            // `//name`: the command's name, sent as text.
            (true, Some(_)) => return Expansion::Escaped(trimmed[1..].to_owned()),
            (true, None) => return Expansion::Text,
            // A path (`/etc/hosts`) or a lone slash is not a command.
            (false, None) if check_name(name).is_err() => return Expansion::Text,
            (false, None) => return Expansion::Unknown(name.to_owned()),
            (false, Some(command)) => command,
        };
        let (filled, took_args) = match &self.shell {
            Some((shell, runs)) if runs.contains_key(name) => {
                let mut filled = String::new();
                let mut took_args = false;
                for part in &runs[name] {
                    match part {
                        Segment::Text(text) => {
                            took_args |= text.contains(ARGS);
                            filled.push_str(&text.replace(ARGS, args));
                        }
                        Segment::Run(words) => {
                            took_args |= words.iter().any(|w| w.contains(ARGS));
                            filled.push_str(&shell.run(words, args).await);
                        }
                    }
                }
                (filled, took_args)
            }
            _ => {
                let template = command.template.trim_end();
                (template.replace(ARGS, args), template.contains(ARGS))
            }
        };
        Expansion::Command(match took_args || args.is_empty() {
            true => filled,
            false => format!("{filled}\n\n{args}"),
        })
    }

    /// The trip wire for an unknown command.
    fn refuse(&self, name: &str, abort: &Abort) -> ProcessorError {
        let known: Vec<String> = self
            .commands
            .iter()
            .map(|(n, c)| match &c.description {
                Some(d) => format!("/{n} ({d})"),
                None => format!("/{n}"),
            })
            .collect();
        abort
            .clone()
            .reason(format!(
                "/{name} is not a command; the commands are {}",
                known.join(", ")
            ))
            .metadata(json!({ "command": name, "known": self.commands.keys().collect::<Vec<_>>() }))
            .into()
    }
}

#[processor(crate = processors_runtime, id = "slash-commands")]
impl SlashCommands {
    async fn process_input(
        &self,
        mut messages: Vec<Message>,
        abort: Abort,
    ) -> Result<Vec<Message>, ProcessorError> {
        // The newest user message only: a client that sends its history again does not run
        // its earlier commands again.
        if let Some(message) = messages.iter_mut().rev().find(|m| m.role == Role::User) {
            let Some(Part::Text { text }) = message
                .content
                .parts
                .iter_mut()
                .find(|p| matches!(p, Part::Text { .. }))
            else {
                return Ok(messages);
            };
            match self.expand(text).await {
                Expansion::Text => {}
                Expansion::Command(new) | Expansion::Escaped(new) => *text = new.into(),
                Expansion::Unknown(_) if self.on_unknown == OnUnknown::Pass => {}
                Expansion::Unknown(name) => return Err(self.refuse(&name, &abort)),
            }
        }
        Ok(messages)
    }
}
