//! Slash commands in the input (`slash_commands`), and the shell commands their templates may run,
//! quoted safely (`shell_injection`).

pub mod shell_injection;
pub mod slash_commands;
