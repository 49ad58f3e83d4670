//! The configuration the built-ins share: [`Sites`], where a built-in acts (the input, the
//! streamed answer, the final answer), and [`ConfigError`], what every builder's `build()`
//! refuses.

use std::fmt;
use std::ops::BitOr;

/// Where a built-in acts: any of the new input ([`INPUT`](Sites::INPUT)), the streamed
/// answer ([`STREAM`](Sites::STREAM)) and the final answer ([`RESULT`](Sites::RESULT)),
/// combined with `|`. Each built-in documents which sites it has; `build()` refuses a set
/// with none of them.
///
/// ```
/// use processors::builtins::config::Sites;
/// let output = Sites::STREAM | Sites::RESULT;
/// assert_eq!(output, Sites::OUTPUT);
/// assert!(output.contains(Sites::STREAM) && !output.contains(Sites::INPUT));
/// assert!(Sites::ALL.contains(output));
/// assert_eq!(format!("{output:?}"), "Sites(stream | result)");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sites(u8);

impl Sites {
    /// Nowhere.
    pub const NONE: Sites = Sites(0);
    /// The new input messages (`process_input`).
    pub const INPUT: Sites = Sites(1);
    /// The streamed answer (`process_output_stream`).
    pub const STREAM: Sites = Sites(2);
    /// The final answer (`process_output_result`, or `process_output_step` for a built-in
    /// that has the answer retried), when the stream did not already handle it.
    pub const RESULT: Sites = Sites(4);
    /// The streamed and the final answer.
    pub const OUTPUT: Sites = Sites(2 | 4);
    /// Everywhere.
    pub const ALL: Sites = Sites(1 | 2 | 4);

    /// Whether every site of `other` is in `self`.
    pub const fn contains(self, other: Sites) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether there is no site.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The sites in both.
    pub const fn intersection(self, other: Sites) -> Sites {
        Sites(self.0 & other.0)
    }

    /// Whether the new input is a site.
    pub const fn input(self) -> bool {
        self.contains(Sites::INPUT)
    }

    /// Whether the streamed answer is a site.
    pub const fn stream(self) -> bool {
        self.contains(Sites::STREAM)
    }

    /// Whether the final answer is a site.
    pub const fn result(self) -> bool {
        self.contains(Sites::RESULT)
    }
}

impl BitOr for Sites {
    type Output = Sites;

    fn bitor(self, other: Sites) -> Sites {
        Sites(self.0 | other.0)
    }
}

impl fmt::Debug for Sites {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = [
            (Sites::INPUT, "input"),
            (Sites::STREAM, "stream"),
            (Sites::RESULT, "result"),
        ]
        .into_iter()
        .filter(|(site, _)| self.contains(*site))
        .map(|(_, name)| name)
        .collect();
        match names.is_empty() {
            true => write!(f, "Sites(none)"),
            false => write!(f, "Sites({})", names.join(" | ")),
        }
    }
}

/// Why a built-in could not be built: the one error of every builder's `build()` (and of the
/// constructors that build, such as `TokenLimiter::new`). Each says what is wrong and what to
/// do instead; match on the kind and the option's name to tell them apart.
///
/// ```
/// use processors::builtins::config::ConfigError;
/// use processors::builtins::TokenLimiter;
/// let error = TokenLimiter::new(0).unwrap_err();
/// assert!(matches!(error, ConfigError::Zero { option: "limit", .. }));
/// assert_eq!(
///     error.to_string(),
///     "`limit` is 0: no prompt or answer fits in it; give a limit of at least 1"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A count or a duration is zero where the processor needs more.
    #[error("`{option}` is 0: {why}")]
    Zero {
        /// The option, as its builder method is named.
        option: &'static str,
        /// Why zero is refused, and what to give.
        why: &'static str,
    },
    /// A number is outside the range it must be in.
    #[error("`{option}` is {value}; {expected}")]
    OutOfRange {
        /// The option, as its builder method is named.
        option: &'static str,
        /// The value given.
        value: String,
        /// The range, and what it means.
        expected: &'static str,
    },
    /// A text, a name or a list is empty where the processor needs one.
    #[error("{what} is empty; {why}")]
    Empty {
        /// What is empty.
        what: &'static str,
        /// What to give instead.
        why: &'static str,
    },
    /// Two items have one name.
    #[error("two {what} are named `{name}`; give each its own name")]
    Duplicate {
        /// What kind of item (`rules`, `tools`).
        what: &'static str,
        /// The name.
        name: String,
    },
    /// A name cannot be used.
    #[error("`{name}` cannot name a {what}: {why}")]
    InvalidName {
        /// What it would name.
        what: &'static str,
        /// The name.
        name: String,
        /// Why not, and what to give.
        why: &'static str,
    },
    /// A name names nothing the processor knows.
    #[error("`{name}` is not a {what} the processor knows; {known}")]
    Unknown {
        /// What it should name.
        what: &'static str,
        /// The name.
        name: String,
        /// What it may name.
        known: String,
    },
    /// A pattern does not compile, or could match empty text.
    #[error("rule `{rule}` has an unusable pattern: {reason}")]
    Pattern {
        /// The rule.
        rule: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The rules compile one by one but not together.
    #[error(
        "the rules are too large to compile together ({0}); split them across agents or simplify the largest patterns"
    )]
    TooLarge(String),
    /// The configuration leaves the processor nothing to do.
    #[error("{0}, so the processor would do nothing")]
    NothingToDo(&'static str),
    /// Two options cannot go together.
    #[error("{0}")]
    Conflict(&'static str),
    /// A template cannot be used as written.
    #[error("the template of `/{name}` cannot be used: {reason}")]
    Template {
        /// The command.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A file or folder the configuration names cannot be read, or holds what cannot be used.
    #[error("{path} cannot be used: {reason}")]
    File {
        /// The file or folder.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A model file cannot be loaded or does not say how to use it.
    #[error("the model {source_name} cannot be used: {reason}")]
    Model {
        /// The file, or what the model was read from.
        source_name: String,
        /// What is wrong, and what to do.
        reason: String,
    },
    /// None of the sites the processor has is chosen.
    #[error(
        "the processor acts at {chosen:?}, and none of those is one of its sites ({offered:?}), so it would do nothing; choose at least one of its sites"
    )]
    NoSites {
        /// The sites the processor has.
        offered: Sites,
        /// The sites chosen.
        chosen: Sites,
    },
}

impl Sites {
    /// Checks that at least one of the `offered` sites is chosen.
    pub(crate) fn check(self, offered: Sites) -> Result<Sites, ConfigError> {
        match self.intersection(offered).is_empty() {
            true => Err(ConfigError::NoSites {
                offered,
                chosen: self,
            }),
            false => Ok(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_combine_and_intersect() {
        assert_eq!(Sites::INPUT | Sites::OUTPUT, Sites::ALL);
        assert!(Sites::NONE.is_empty());
        assert!(Sites::INPUT.intersection(Sites::OUTPUT).is_empty());
        assert!(Sites::ALL.input() && Sites::ALL.stream() && Sites::ALL.result());
        assert!(!Sites::OUTPUT.input());
        assert_eq!(format!("{:?}", Sites::NONE), "Sites(none)");
    }
}
