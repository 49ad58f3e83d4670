//! Slash commands in the input (`slash_commands`), and the shell commands their templates may run,
//! quoted safely (`shell_injection`).

pub mod shell_injection;
pub mod slash_commands;

/// Where a slash command's template takes the command's arguments (`{{args}}`), in its text
/// and in the words of its shell commands.
pub const ARGS: &str = "{{args}}";
