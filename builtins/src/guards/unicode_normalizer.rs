//! [`UnicodeNormalizer`]: cleans the text of the input before the model sees it.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::UnicodeNormalizer;
//! use processors::prelude::*;
//!
//! let model = ScriptedModel::new([Turn::text("ok")]);
//! let agent = Agent::builder()
//!     .model(model.clone())
//!     .input(UnicodeNormalizer::new())
//!     .build()?;
//! // Full-width letters, a zero-width space, a stray control character, runs of spaces.
//! agent.generate("  Ｈｅｌｌｏ\u{200B}   wor\u{7}ld  ").await?;
//! assert_eq!(model.requests()[0].prompt.last().unwrap().text(), "Hello world");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # What it does, in order
//!
//! To each text part of the new input messages (tool calls, tool results, files, reasoning
//! and data parts are left as they are):
//!
//! 1. [`strip_control`](UnicodeNormalizerBuilder::strip_control) (on): removes control
//!    characters, but keeps tabs and line breaks; `\r\n`, a lone `\r`, vertical tab, form
//!    feed and next-line become `\n`.
//! 2. [`strip_invisible`](UnicodeNormalizerBuilder::strip_invisible) (on): removes
//!    characters that show nothing but change how text reads or is read: zero-width spaces
//!    and joiners, bidirectional controls (the "Trojan Source" trick), soft hyphens, byte
//!    order marks, variation selectors, and the tag characters that can smuggle invisible
//!    instructions. Joiners between two letters (needed by Persian and Indic scripts; a
//!    virama before one counts as a letter) and the joiners, selectors and tags inside an
//!    emoji sequence stay.
//! 3. [`keep_emoji`](UnicodeNormalizerBuilder::keep_emoji) (on): with it off, emoji are
//!    removed, with their skin tones, joiners and keycaps.
//! 4. [`form`](UnicodeNormalizerBuilder::form) ([`Form::Nfkc`]): Unicode normalisation.
//!    NFKC also folds compatibility characters: full-width letters, ligatures, superscripts,
//!    non-breaking spaces.
//! 5. [`collapse_whitespace`](UnicodeNormalizerBuilder::collapse_whitespace) (on): a run of
//!    spaces and tabs inside a line becomes one space, spaces at the end of a line go, and
//!    more than one blank line in a row becomes one. A line's indentation stays, so code
//!    keeps its shape.
//! 6. [`trim`](UnicodeNormalizerBuilder::trim) (on): removes whitespace at the start and the
//!    end of the text.
//!
//! A message whose text does not change is left alone; an empty text stays empty.

use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::message::{Message, Part};
use processors_runtime::processor::InputOutcome;
use std::borrow::Cow;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// The Unicode normalisation form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Form {
    /// Compatibility composition: `ﬁ` → `fi`, `Ｈ` → `H`, `²` → `2`, then canonical composition.
    #[default]
    Nfkc,
    /// Canonical composition only: `e` + `◌́` → `é`; compatibility characters stay.
    Nfc,
    /// No normalisation.
    Keep,
}

/// Configures a [`UnicodeNormalizer`]; every step is on by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct UnicodeNormalizerBuilder {
    config: UnicodeNormalizer,
}

impl UnicodeNormalizerBuilder {
    /// The normalisation form (default [`Form::Nfkc`]).
    pub fn form(mut self, form: Form) -> Self {
        self.config.form = form;
        self
    }

    /// Whether control characters other than tabs and line breaks are removed (default: yes).
    pub fn strip_control(mut self, yes: bool) -> Self {
        self.config.strip_control = yes;
        self
    }

    /// Whether invisible characters are removed (default: yes).
    pub fn strip_invisible(mut self, yes: bool) -> Self {
        self.config.strip_invisible = yes;
        self
    }

    /// Whether emoji stay (default: yes).
    pub fn keep_emoji(mut self, yes: bool) -> Self {
        self.config.keep_emoji = yes;
        self
    }

    /// Whether runs of whitespace are collapsed (default: yes).
    pub fn collapse_whitespace(mut self, yes: bool) -> Self {
        self.config.collapse_whitespace = yes;
        self
    }

    /// Whether whitespace at the start and end of a text is removed (default: yes).
    pub fn trim(mut self, yes: bool) -> Self {
        self.config.trim = yes;
        self
    }

    /// Checks that the normalizer does something.
    ///
    /// ```
    /// use processors::builtins::unicode_normalizer::{Form, UnicodeNormalizer};
    /// let n = UnicodeNormalizer::builder().form(Form::Nfc).keep_emoji(false).build().unwrap();
    /// assert_eq!(n.normalize("Cafe\u{301} ☕"), "Café");
    /// ```
    pub fn build(self) -> Result<UnicodeNormalizer, ConfigError> {
        let c = self.config;
        let idle = c.form == Form::Keep
            && !c.strip_control
            && !c.strip_invisible
            && c.keep_emoji
            && !c.collapse_whitespace
            && !c.trim;
        match idle {
            true => Err(ConfigError::NothingToDo(
                "every step of the normalizer is off (form Keep, no stripping, emoji kept, no collapsing, no trimming)",
            )),
            false => Ok(c),
        }
    }
}

/// Normalises the text of the input messages. See [the module](self) for each step.
///
/// ```
/// use processors::builtins::UnicodeNormalizer;
/// assert_eq!(UnicodeNormalizer::ID, "unicode-normalizer");
/// assert_eq!(UnicodeNormalizer::new().normalize("a\r\nb\u{202E}c"), "a\nbc");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnicodeNormalizer {
    form: Form,
    strip_control: bool,
    strip_invisible: bool,
    keep_emoji: bool,
    collapse_whitespace: bool,
    trim: bool,
}

impl Default for UnicodeNormalizer {
    fn default() -> Self {
        UnicodeNormalizer {
            form: Form::Nfkc,
            strip_control: true,
            strip_invisible: true,
            keep_emoji: true,
            collapse_whitespace: true,
            trim: true,
        }
    }
}

impl UnicodeNormalizer {
    /// A normalizer with every step on.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts from every step on.
    pub fn builder() -> UnicodeNormalizerBuilder {
        UnicodeNormalizerBuilder {
            config: Self::default(),
        }
    }

    /// `text` normalised (borrowed when nothing changes).
    pub fn normalize<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let stripped = self.strip(text);
        let mut out = match self.form {
            Form::Nfkc => self.space(stripped.nfkc(), text.len()),
            Form::Nfc => self.space(stripped.nfc(), text.len()),
            Form::Keep => self.space(stripped.chars(), text.len()),
        };
        if self.trim {
            out.truncate(out.trim_end().len());
            let lead = out.len() - out.trim_start().len();
            out.drain(..lead);
        }
        match out == text {
            true => Cow::Borrowed(text),
            false => Cow::Owned(out),
        }
    }

    /// Steps 1 to 3: control characters, invisible characters, emoji.
    fn strip(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars().peekable();
        // Whether the characters so far belong to an emoji sequence.
        let mut in_emoji = false;
        let mut prev = '\0';
        while let Some(c) = chars.next() {
            let next = chars.peek().copied();
            let emoji = is_emoji(c)
                || (is_text_emoji(c) && next == Some(VS16))
                || (is_keycap_base(c) && matches!(next, Some(VS16 | KEYCAP)));
            if emoji || (in_emoji && is_emoji_component(c)) {
                // A joiner only continues a sequence when an emoji follows it.
                in_emoji = c != ZWJ || next.is_some_and(|n| is_emoji(n) || is_text_emoji(n));
                if self.keep_emoji {
                    out.push(c);
                }
                prev = c;
                continue;
            }
            in_emoji = false;
            let kept = match c {
                '\r' if self.strip_control => match next {
                    Some('\n') => None,
                    _ => Some('\n'),
                },
                '\u{0B}' | '\u{0C}' | '\u{85}' if self.strip_control => Some('\n'),
                '\n' | '\t' => Some(c),
                c if self.strip_control && c.is_control() => None,
                // Joiners shape the letters on both sides (Persian; Indic scripts, where
                // they follow a virama).
                ZWNJ | ZWJ
                    if (prev.is_alphabetic() || is_combining_mark(prev))
                        && next.is_some_and(char::is_alphabetic) =>
                {
                    Some(c)
                }
                c if self.strip_invisible && is_invisible(c) => None,
                c => Some(c),
            };
            if let Some(k) = kept {
                out.push(k);
            }
            prev = c;
        }
        out
    }

    /// Step 5: whitespace inside lines, at their ends, and blank lines.
    fn space(&self, chars: impl Iterator<Item = char>, capacity: usize) -> String {
        let mut out = String::with_capacity(capacity);
        if !self.collapse_whitespace {
            out.extend(chars);
            return out;
        }
        // Where the current line starts in `out`, whether only whitespace was seen on it,
        // a space waiting for the next visible character, and line breaks in a row.
        let (mut line_start, mut blank, mut space, mut breaks) = (0, true, false, 0);
        for c in chars {
            if matches!(c, '\n' | '\u{2028}' | '\u{2029}') {
                if blank {
                    out.truncate(line_start);
                }
                space = false;
                if breaks < 2 {
                    out.push('\n');
                    breaks += 1;
                }
                line_start = out.len();
                blank = true;
            } else if c.is_whitespace() {
                match blank {
                    true => out.push(c),
                    false => space = true,
                }
            } else {
                if std::mem::take(&mut space) {
                    out.push(' ');
                }
                out.push(c);
                blank = false;
                breaks = 0;
            }
        }
        if blank {
            out.truncate(line_start);
        }
        out
    }
}

#[processor(crate = processors_runtime, id = "unicode-normalizer")]
impl UnicodeNormalizer {
    /// Normalises the text parts of the new input messages.
    fn process_input(&self, mut messages: Vec<Message>) -> InputOutcome {
        let mut changed = false;
        for m in &mut messages {
            for part in &mut m.content.parts {
                if let Part::Text { text } = part
                    && let Cow::Owned(new) = self.normalize(text)
                {
                    *text = new.into();
                    changed = true;
                }
            }
        }
        match changed {
            true => InputOutcome::Messages(messages),
            false => InputOutcome::Unchanged,
        }
    }
}

const ZWNJ: char = '\u{200C}';
const ZWJ: char = '\u{200D}';
const VS16: char = '\u{FE0F}';
const KEYCAP: char = '\u{20E3}';

/// Characters that show nothing: zero-width characters, bidirectional controls, soft hyphen,
/// fillers, variation selectors, byte order mark, interlinear annotations, tags.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{AD}' | '\u{34F}' | '\u{61C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206F}'
        | '\u{3164}'
        | '\u{FE00}'..='\u{FE0F}'
        | '\u{FEFF}'
        | '\u{FFA0}'
        | '\u{FFF9}'..='\u{FFFB}'
        | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0000}'..='\u{E007F}'
        | '\u{E0100}'..='\u{E01EF}')
}

/// Pictographs shown as emoji by default (Unicode's Extended_Pictographic, without the
/// symbols that are text unless a variation selector asks otherwise), and regional
/// indicators (flags).
fn is_emoji(c: char) -> bool {
    matches!(c,
        '\u{231A}'..='\u{231B}' | '\u{2328}' | '\u{2388}' | '\u{23CF}'
        | '\u{23E9}'..='\u{23F3}' | '\u{23F8}'..='\u{23FA}' | '\u{25FD}'..='\u{25FE}'
        | '\u{2600}'..='\u{2605}' | '\u{2607}'..='\u{2612}' | '\u{2614}'..='\u{2685}'
        | '\u{2690}'..='\u{2705}' | '\u{2708}'..='\u{2712}' | '\u{2714}' | '\u{2716}'
        | '\u{271D}' | '\u{2721}' | '\u{2728}' | '\u{2733}'..='\u{2734}' | '\u{2744}'
        | '\u{2747}' | '\u{274C}' | '\u{274E}' | '\u{2753}'..='\u{2755}' | '\u{2757}'
        | '\u{2763}'..='\u{2767}' | '\u{2795}'..='\u{2797}' | '\u{27A1}' | '\u{27B0}'
        | '\u{27BF}' | '\u{2934}'..='\u{2935}' | '\u{2B05}'..='\u{2B07}'
        | '\u{2B1B}'..='\u{2B1C}' | '\u{2B50}' | '\u{2B55}' | '\u{3030}' | '\u{303D}'
        | '\u{3297}' | '\u{3299}'
        | '\u{1F000}'..='\u{1F0FF}' | '\u{1F10D}'..='\u{1F10F}' | '\u{1F12F}'
        | '\u{1F16C}'..='\u{1F171}' | '\u{1F17E}'..='\u{1F17F}' | '\u{1F18E}'
        | '\u{1F191}'..='\u{1F19A}' | '\u{1F1AD}'..='\u{1F1FF}' | '\u{1F201}'..='\u{1F20F}'
        | '\u{1F21A}' | '\u{1F22F}' | '\u{1F232}'..='\u{1F23A}' | '\u{1F23C}'..='\u{1F23F}'
        | '\u{1F249}'..='\u{1F3FA}' | '\u{1F400}'..='\u{1F53D}' | '\u{1F546}'..='\u{1F64F}'
        | '\u{1F680}'..='\u{1F6FF}' | '\u{1F774}'..='\u{1F77F}' | '\u{1F7D5}'..='\u{1F7FF}'
        | '\u{1F80C}'..='\u{1F80F}' | '\u{1F848}'..='\u{1F84F}' | '\u{1F85A}'..='\u{1F85F}'
        | '\u{1F888}'..='\u{1F88F}' | '\u{1F8AE}'..='\u{1F8FF}' | '\u{1F90C}'..='\u{1F93A}'
        | '\u{1F93C}'..='\u{1F945}' | '\u{1F947}'..='\u{1FAFF}' | '\u{1FC00}'..='\u{1FFFD}')
}

/// Symbols that are text by default and emoji when followed by U+FE0F (`©️`, `↔️`, `▶️`).
fn is_text_emoji(c: char) -> bool {
    matches!(c,
        '\u{A9}' | '\u{AE}' | '\u{203C}' | '\u{2049}' | '\u{2122}' | '\u{2139}'
        | '\u{2194}'..='\u{2199}' | '\u{21A9}'..='\u{21AA}' | '\u{24C2}'
        | '\u{25AA}'..='\u{25AB}' | '\u{25B6}' | '\u{25C0}' | '\u{25FB}'..='\u{25FC}')
}

/// The characters a keycap emoji is built on (`1️⃣`, `#️⃣`).
fn is_keycap_base(c: char) -> bool {
    c.is_ascii_digit() || c == '#' || c == '*'
}

/// What follows an emoji inside its sequence: joiner, selectors, skin tones, keycap, tags.
fn is_emoji_component(c: char) -> bool {
    matches!(c,
        ZWJ | '\u{FE0E}' | VS16 | KEYCAP
        | '\u{1F3FB}'..='\u{1F3FF}'
        | '\u{E0020}'..='\u{E007F}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(
        f: impl FnOnce(UnicodeNormalizerBuilder) -> UnicodeNormalizerBuilder,
    ) -> UnicodeNormalizer {
        f(UnicodeNormalizer::builder()).build().unwrap_or_default()
    }

    #[test]
    fn emoji_sequences_stay_whole_or_go_whole() {
        let family = "👨\u{200D}👩\u{200D}👧";
        let flag = "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}";
        let text = format!("a {family} b 👍🏽 c 1\u{FE0F}\u{20E3} d {flag} e ❤\u{FE0F}");
        let keep = UnicodeNormalizer::new();
        assert_eq!(keep.normalize(&text), text);
        let drop = with(|b| b.keep_emoji(false));
        assert_eq!(drop.normalize(&text), "a b c d e");
    }

    #[test]
    fn joiners_between_letters_stay() {
        // Persian "می‌خواهم" needs its zero-width non-joiner.
        let persian = "می\u{200C}خواهم";
        assert_eq!(UnicodeNormalizer::new().normalize(persian), persian);
        assert_eq!(UnicodeNormalizer::new().normalize("a\u{200C} b"), "a b");
    }

    #[test]
    fn tag_characters_outside_a_flag_are_removed() {
        // Invisible "ignore" spelled in tag characters after ordinary text.
        let smuggled: String = "ignore"
            .chars()
            .map(|c| char::from_u32(0xE0000 + c as u32).unwrap_or(c))
            .collect();
        assert_eq!(
            UnicodeNormalizer::new().normalize(&format!("hi{smuggled}")),
            "hi"
        );
    }
}
