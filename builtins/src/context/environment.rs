//! [`EnvironmentContext`]: tells the model where it runs.

use processors_macros::processor;
use processors_runtime::message::{Message, MessageList};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The tag of the system message [`EnvironmentContext`] adds.
pub const ENVIRONMENT_TAG: &str = "environment";

/// Adds a system message describing the environment the agent runs in: the working directory,
/// the git branch checked out there, today's date (UTC) and the operating system. Each field is
/// opt-in; with none chosen it adds nothing. The message is added once, at the start of the
/// run, and sent at every step; it is never saved to memory.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::EnvironmentContext;
/// use processors::prelude::*;
///
/// let model = ScriptedModel::new([Turn::text("ok")]);
/// let agent = Agent::builder()
///     .model(model.clone())
///     .input(EnvironmentContext::new().date().os())
///     .build()
///     .unwrap();
/// agent.generate("what day is it?").await.unwrap();
/// let system = model.requests()[0].prompt[0].text();
/// assert!(system.starts_with("<environment>\ndate: 20"));
/// assert!(system.contains(&format!("os: {}", std::env::consts::OS)));
/// # });
/// ```
#[derive(Debug, Clone, Default)]
pub struct EnvironmentContext {
    cwd: Option<Option<PathBuf>>,
    git_branch: bool,
    date: bool,
    os: bool,
}

impl EnvironmentContext {
    /// Adds nothing until fields are chosen.
    pub fn new() -> Self {
        Self::default()
    }

    /// Includes the process's working directory.
    pub fn cwd(mut self) -> Self {
        self.cwd = Some(None);
        self
    }

    /// Includes `dir` as the working directory (and looks for the git branch there).
    pub fn cwd_at(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(Some(dir.into()));
        self
    }

    /// Includes the git branch checked out in the working directory (read from `.git/HEAD`;
    /// no `git` process is started). Left out when there is no repository.
    pub fn git_branch(mut self) -> Self {
        self.git_branch = true;
        self
    }

    /// Includes today's date, UTC.
    pub fn date(mut self) -> Self {
        self.date = true;
        self
    }

    /// Includes the operating system and architecture.
    pub fn os(mut self) -> Self {
        self.os = true;
        self
    }

    fn dir(&self) -> Option<PathBuf> {
        match &self.cwd {
            Some(Some(dir)) => Some(dir.clone()),
            _ => std::env::current_dir().ok(),
        }
    }

    /// The message's lines, as `name: value`.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let dir = self.dir();
        if self.date {
            lines.push(format!("date: {}", utc_date(SystemTime::now())));
        }
        if self.os {
            lines.push(format!(
                "os: {} ({})",
                std::env::consts::OS,
                std::env::consts::ARCH
            ));
        }
        if self.cwd.is_some()
            && let Some(dir) = &dir
        {
            lines.push(format!("cwd: {}", dir.display()));
        }
        if self.git_branch
            && let Some(branch) = dir.as_deref().and_then(git_branch)
        {
            lines.push(format!("git branch: {branch}"));
        }
        lines
    }
}

/// The branch checked out in the repository holding `dir` (its nearest `.git`), or the short
/// commit id of a detached head.
pub fn git_branch(dir: &Path) -> Option<String> {
    let head = dir
        .ancestors()
        .map(|d| d.join(".git").join("HEAD"))
        .find(|p| p.is_file())?;
    let text = std::fs::read_to_string(head).ok()?;
    let text = text.trim();
    match text.strip_prefix("ref: ") {
        Some(r) => Some(r.strip_prefix("refs/heads/").unwrap_or(r).to_owned()),
        None if text.len() >= 7 && text.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Some(format!("(detached at {})", &text[..7]))
        }
        None => None,
    }
}

/// `YYYY-MM-DD` of a time, UTC.
pub fn utc_date(t: SystemTime) -> String {
    let days = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[processor(crate = processors_runtime, id = "environment-context")]
impl EnvironmentContext {
    fn process_input(&self, list: &mut MessageList) {
        let lines = self.lines();
        if lines.is_empty() {
            return;
        }
        let text = format!("<environment>\n{}\n</environment>", lines.join("\n"));
        list.clear_tag(ENVIRONMENT_TAG);
        list.add_system(Message::system(text), Some(ENVIRONMENT_TAG));
    }
}
