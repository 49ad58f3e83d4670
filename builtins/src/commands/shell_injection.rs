//! [`ShellInjection`]: `!{command}` in a [`SlashCommands`](crate::SlashCommands) template runs
//! an allow-listed program and puts its output in the prompt.

use super::ARGS;
use crate::config::ConfigError;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the output of a program that ended is waited for.
const READ_GRACE: Duration = Duration::from_millis(500);

/// What a template is made of: text, and commands to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// Text, `{{args}}` still in it.
    Text(String),
    /// A command's words (`{{args}}` still in them), as written between `!{` and `}`.
    Run(Vec<String>),
}

/// Lets [`SlashCommands`](crate::SlashCommands) templates run programs: `!{git diff --stat}`
/// in a template is replaced, when the command is used, by what the program writes to its
/// standard output.
///
/// Off unless given to [`SlashCommandsBuilder::shell`](crate::slash_commands::SlashCommandsBuilder::shell);
/// without it, `!{…}` stays in the template as text. Only templates run commands: what the
/// user types, the model's output and tool results never do.
///
/// - **No shell.** The command is split into words (whitespace, with `"…"` or `'…'` for a word
///   with spaces) and the program is started with them as its arguments: pipes, `;`, `$(…)`
///   and globs mean nothing. A word with `{{args}}` gets the command's arguments in it as they
///   were typed, inside that one argument, so they cannot become commands of their own; a
///   word that begins with `{{args}}` is not run when the arguments begin with `-` (they would
///   be read as an option: `--output=…`), and a word that is `{{args}}` alone is left out when
///   there are none (rather than passed empty).
/// - **Allow-listed.** The program (the first word) must be one of [`allow`](Self::allow)'s
///   names exactly; a template naming another is refused at `build()`.
/// - **Bounded.** The program is stopped after [`timeout`](Self::timeout) (5 s by default),
///   its output cut at [`max_output`](Self::max_output) bytes (16 KiB), its standard input
///   empty. A program that fails, times out or cannot start leaves a note in its place
///   (`[git diff: exit status 128: fatal: not a git repository]`), and the command goes on.
///   Output a process the program started still holds after it ended is not waited for
///   past half a second.
///
/// It runs on a helper thread; the run waits for it without blocking its executor.
///
/// ```
/// # futures::executor::block_on(async {
/// # #[cfg(unix)] {
/// use processors::builtins::SlashCommands;
/// use processors::builtins::shell_injection::ShellInjection;
/// use processors::builtins::slash_commands::Expansion;
///
/// let commands = SlashCommands::builder()
///     .command("greet", "Say hello to !{echo {{args}}}.")
///     .shell(ShellInjection::allow(["echo"]))
///     .build()
///     .unwrap();
/// assert_eq!(
///     commands.expand("/greet Ada; rm -rf /").await,
///     Expansion::Command("Say hello to Ada; rm -rf /.".into())
/// );
/// # }
/// # });
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ShellInjection {
    allow: Vec<String>,
    timeout: Duration,
    max_output: usize,
    dir: Option<PathBuf>,
}

impl ShellInjection {
    /// Allows the programs named (as a template's first word names them: `git`, not a path,
    /// unless the template writes the path).
    pub fn allow<S: Into<String>>(programs: impl IntoIterator<Item = S>) -> Self {
        Self {
            allow: programs.into_iter().map(Into::into).collect(),
            timeout: Duration::from_secs(5),
            max_output: 16 * 1024,
            dir: None,
        }
    }

    /// How long a program may run (default 5 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many bytes of a program's output are kept (default 16 KiB).
    pub fn max_output(mut self, bytes: usize) -> Self {
        self.max_output = bytes;
        self
    }

    /// The folder the programs run in (default: the process's).
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// Checks the options.
    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        if self.allow.is_empty() {
            return Err(ConfigError::Empty {
                what: "the programs a template may run",
                why: "name at least one, or leave the shell out",
            });
        }
        if self.timeout.is_zero() {
            return Err(ConfigError::Zero {
                option: "timeout",
                why: "no program could run; give how long one may take",
            });
        }
        if self.max_output == 0 {
            return Err(ConfigError::Zero {
                option: "max_output",
                why: "no output could be kept; give how many bytes to keep",
            });
        }
        Ok(())
    }

    /// Checks that every command of `segments` runs an allowed program.
    pub(crate) fn check_template(
        &self,
        name: &str,
        segments: &[Segment],
    ) -> Result<(), ConfigError> {
        for segment in segments {
            if let Segment::Run(words) = segment
                && !self.allow.iter().any(|p| Some(p) == words.first())
            {
                return Err(ConfigError::Unknown {
                    what: "program",
                    name: words.first().cloned().unwrap_or_default(),
                    known: format!(
                        "/{name} may run only what the shell allows: {}",
                        self.allow.join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    /// Runs `words` with `args` in place of `{{args}}` and returns the output, or a note of
    /// what went wrong, on a helper thread.
    pub(crate) async fn run(&self, words: &[String], args: &str) -> String {
        let mut filled = Vec::with_capacity(words.len());
        for word in words {
            if word == ARGS && args.is_empty() {
                continue; // no arguments: no empty word
            }
            if word.starts_with(ARGS) && args.starts_with('-') {
                return format!(
                    "[{}: the arguments may not start with `-` here, where they would be read as an option]",
                    words.join(" ")
                );
            }
            filled.push(word.replace(ARGS, args));
        }
        let words = filled;
        let (send, receive) = futures::channel::oneshot::channel();
        let shell = self.clone();
        let spawned = std::thread::Builder::new()
            .name("processors-shell".into())
            .spawn(move || {
                let _ = send.send(shell.run_blocking(&words));
            });
        if let Err(e) = spawned {
            return format!("[the command could not start: {e}]");
        }
        receive
            .await
            .unwrap_or_else(|_| "[the command stopped without an answer]".into())
    }

    fn run_blocking(&self, words: &[String]) -> String {
        let shown = words.join(" ");
        let Some((program, args)) = words.split_first() else {
            return "[an empty command]".into();
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => return format!("[{shown}: could not start: {e}]"),
        };
        let cap = self.max_output;
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let (out_sent, out) = std::sync::mpsc::channel();
        let (err_sent, err) = std::sync::mpsc::channel();
        std::thread::spawn(move || out_sent.send(read_capped(stdout, cap)));
        std::thread::spawn(move || err_sent.send(read_capped(stderr, 1024)));
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if start.elapsed() >= self.timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break Err(format!("timed out after {:?}", self.timeout));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => break Err(e.to_string()),
            }
        };
        // A process the program started may hold its output open after it ended: its output
        // is not waited for past a moment.
        let (output, cut) = out.recv_timeout(READ_GRACE).unwrap_or_default();
        let (errors, _) = err.recv_timeout(READ_GRACE).unwrap_or_default();
        let mut text = String::from_utf8_lossy(&output).trim_end().to_owned();
        if cut > 0 {
            text.push_str(&format!("\n[{cut} more bytes of output cut]"));
        }
        let failed = match status {
            Ok(status) if status.success() => return text,
            Ok(status) => status.to_string(),
            Err(why) => why,
        };
        let errors = String::from_utf8_lossy(&errors);
        let first = errors.lines().next().unwrap_or("").trim();
        let note = match first.is_empty() {
            true => format!("[{shown}: {failed}]"),
            false => format!("[{shown}: {failed}: {first}]"),
        };
        match text.is_empty() {
            true => note,
            false => format!("{text}\n{note}"),
        }
    }
}

/// Reads `pipe` to its end, keeping `cap` bytes; returns them and how many more there were.
fn read_capped(pipe: Option<impl Read>, cap: usize) -> (Vec<u8>, usize) {
    let Some(mut pipe) = pipe else {
        return (Vec::new(), 0);
    };
    let (mut kept, mut more) = (Vec::new(), 0);
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len()).min(n);
                kept.extend_from_slice(&buf[..room]);
                more += n - room;
            }
        }
    }
    (kept, more)
}

/// Splits a template into text and `!{…}` commands (a command ends at the first `}` that is
/// not part of `{{args}}`); an error when a `!{` is not closed, or a command is empty or has
/// an unclosed quote.
pub(crate) fn segments(template: &str) -> Result<Vec<Segment>, String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(at) = rest.find("!{") {
        let body = &rest[at + 2..];
        let end = closing(body)
            .ok_or_else(|| format!("`!{{` at `{}` is not closed by `}}`", excerpt(&rest[at..])))?;
        if at > 0 {
            out.push(Segment::Text(rest[..at].to_owned()));
        }
        let words = words(&body[..end])?;
        if words.is_empty() {
            return Err("`!{}` runs nothing; name a program".into());
        }
        out.push(Segment::Run(words));
        rest = &body[end + 1..];
    }
    if !rest.is_empty() {
        out.push(Segment::Text(rest.to_owned()));
    }
    Ok(out)
}

/// Where the `}` that closes a command is in `body` (the `}}` of `{{args}}` does not).
fn closing(body: &str) -> Option<usize> {
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(ARGS.as_bytes()) {
            i += ARGS.len();
        } else if bytes[i] == b'}' {
            return Some(i);
        } else {
            i += 1;
        }
    }
    None
}

/// A command's words: split at whitespace, `"…"` and `'…'` keeping spaces in a word.
fn words(command: &str) -> Result<Vec<String>, String> {
    let (mut words, mut word, mut quote, mut started) = (Vec::new(), String::new(), None, false);
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => (quote, started) = (Some(c), true),
            (None, c) if c.is_whitespace() => {
                if std::mem::take(&mut started) {
                    words.push(std::mem::take(&mut word));
                }
            }
            (None, c) => (word.push(c), started = true).0,
        }
    }
    if quote.is_some() {
        return Err(format!("`!{{{command}}}` has an unclosed quote"));
    }
    if started {
        words.push(word);
    }
    Ok(words)
}

fn excerpt(text: &str) -> String {
    text.chars().take(20).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_split_into_text_and_commands() {
        assert_eq!(
            segments("Diff:\n!{git diff --stat {{args}}}\nLog: !{git log -n 1 \"--format=%s %h\"}")
                .unwrap(),
            [
                Segment::Text("Diff:\n".into()),
                Segment::Run(vec![
                    "git".into(),
                    "diff".into(),
                    "--stat".into(),
                    "{{args}}".into()
                ]),
                Segment::Text("\nLog: ".into()),
                Segment::Run(vec![
                    "git".into(),
                    "log".into(),
                    "-n".into(),
                    "1".into(),
                    "--format=%s %h".into()
                ]),
            ]
        );
        assert_eq!(
            segments("no commands").unwrap(),
            [Segment::Text("no commands".into())]
        );
        assert_eq!(words("a '' b").unwrap(), ["a", "", "b"]);
        assert!(segments("!{git diff").is_err());
        assert!(segments("!{ }").is_err());
        assert!(segments("!{echo \"open}").is_err());
    }
}
