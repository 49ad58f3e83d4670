//! What a redacted value becomes: one [`Redaction`] for every built-in that redacts
//! ([`RegexFilter`](crate::RegexFilter), [`PiiDetector`](crate::PiiDetector),
//! [`PromptLeakDetector`](crate::PromptLeakDetector)), written by one function.
//!
//! ```
//! use processors::builtins::redact::Redaction;
//! use processors::builtins::RegexFilter;
//! use processors::builtins::regex_filter::{Preset, Strategy};
//!
//! let filter = RegexFilter::builder()
//!     .preset(Preset::Pii)
//!     .strategy(Strategy::Redact(Redaction::PreserveFormat))
//!     .build()
//!     .unwrap();
//! assert_eq!(filter.apply("mail test@example.com").unwrap(), "mail t**t@*******.com");
//! ```

use siphasher::sip::SipHasher24;
use std::fmt::Write as _;
use std::hash::Hasher as _;

/// What a redacted value becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Redaction {
    /// Letters and digits become `*`, the rest stays: `jane@example.com` →
    /// `****@*******.***` (`mask-all` in files).
    Mask,
    /// A mask that keeps what identifies the value's shape and nothing that identifies the
    /// value: an email keeps the first and last character of its local part and its top-level
    /// domain (`test@example.com` → `t**t@*******.com`); a phone number keeps its punctuation
    /// and last four digits, the other digits becoming `X` (`(555) 123-4567` →
    /// `(XXX) XXX-4567`); a card, account or IBAN keeps its last four letters or digits
    /// (`4111 1111 1111 1234` → `**** **** **** 1234`); any other value keeps its first and
    /// last letter or digit (`Jane Doe` → `J*** **e`; three characters or fewer are all
    /// masked). The reference's mask, and so [`PiiDetector`](crate::PiiDetector)'s default and
    /// what `mask` means in files (`preserve-format` too).
    PreserveFormat,
    /// The kind and a short stable hash of the value: `[EMAIL:1f0c2a9b]`. Equal values get
    /// equal tags in every process and release (SipHash-2-4); a secret hash key (each
    /// redacting built-in's `hash_key`) keeps a tag from being checked against a guess.
    Hash,
    /// Nothing: the value is removed.
    Remove,
    /// A placeholder: the kind in capitals (`[EMAIL]`) unless the built-in names another.
    Placeholder,
}

/// What is being redacted: what kind of value it is, and how its placeholder and hash tag are
/// written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Redacted<'a> {
    /// The kind, as the detector or rule names it (`email`, `phone`, `credit-card`).
    pub kind: &'a str,
    /// The kind as a hash tag's label (`EMAIL`).
    pub label: &'a str,
    /// What [`Redaction::Placeholder`] writes.
    pub placeholder: &'a str,
}

/// The kind of a name in capitals with `_` for `-`, as labels and placeholders write it.
pub(crate) fn label(kind: &str) -> String {
    kind.to_uppercase().replace('-', "_")
}

/// The 32-bit tag of `value` under `key`: the top half of its SipHash-2-4.
pub(crate) fn tag(key: &[u8; 16], value: &str) -> u32 {
    let mut hasher = SipHasher24::new_with_key(key);
    hasher.write(value.as_bytes());
    (hasher.finish() >> 32) as u32
}

impl Redaction {
    /// Writes what `value` becomes to `out`.
    pub(crate) fn write(self, value: &str, what: Redacted<'_>, key: &[u8; 16], out: &mut String) {
        match self {
            Redaction::Mask => out.extend(value.chars().map(mask_char)),
            Redaction::PreserveFormat => preserve_format(value, what.kind, out),
            Redaction::Hash => {
                // Writing to a String cannot fail.
                let _ = write!(out, "[{}:{:08x}]", what.label, tag(key, value));
            }
            Redaction::Remove => {}
            Redaction::Placeholder => out.push_str(what.placeholder),
        }
    }
}

fn mask_char(c: char) -> char {
    if c.is_alphanumeric() { '*' } else { c }
}

/// The format-preserving mask of `value`, a `kind`.
fn preserve_format(value: &str, kind: &str, out: &mut String) {
    let kind = kind.to_ascii_lowercase();
    match kind.as_str() {
        "email" | "email-address" => {
            if let Some((local, domain)) = value.rsplit_once('@') {
                keep_ends(local, 1, 1, '*', out);
                out.push('@');
                match domain.rsplit_once('.') {
                    Some((host, tld)) => {
                        out.extend(host.chars().map(mask_char));
                        out.push('.');
                        out.push_str(tld);
                    }
                    None => out.extend(domain.chars().map(mask_char)),
                }
                return;
            }
            keep_ends(value, 1, 1, '*', out);
        }
        "phone" | "phone-number" => keep_ends(value, 0, 4, 'X', out),
        "credit-card" | "card" | "iban" | "bank-account" | "account-number" => {
            keep_ends(value, 0, 4, '*', out);
        }
        _ => {
            let alnum = value.chars().filter(|c| c.is_alphanumeric()).count();
            if alnum <= 3 {
                out.extend(value.chars().map(mask_char));
            } else {
                keep_ends(value, 1, 1, '*', out);
            }
        }
    }
}

/// `value` with its letters and digits replaced by `with`, except its first `head` and last
/// `tail` ones; everything else (punctuation, spaces) stays. A value with no more letters and
/// digits than it would keep is masked whole.
fn keep_ends(value: &str, head: usize, tail: usize, with: char, out: &mut String) {
    let alnum = value.chars().filter(|c| c.is_alphanumeric()).count();
    let whole = alnum <= head + tail;
    let mut seen = 0;
    for c in value.chars() {
        if !c.is_alphanumeric() {
            out.push(c);
            continue;
        }
        let kept = !whole && (seen < head || seen >= alnum - tail);
        out.push(if kept { c } else { with });
        seen += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(how: Redaction, value: &str, kind: &str) -> String {
        let mut out = String::new();
        let label = label(kind);
        let placeholder = format!("[{label}]");
        let what = Redacted {
            kind,
            label: &label,
            placeholder: &placeholder,
        };
        how.write(value, what, &[0; 16], &mut out);
        out
    }

    /// The reference vectors of the SipHash paper (key 00..0f, messages 00..(n-1)): a tag is
    /// the same in every process and release.
    #[test]
    fn tags_are_siphash_2_4() {
        let key: [u8; 16] = std::array::from_fn(|i| i as u8);
        let mut hasher = SipHasher24::new_with_key(&key);
        hasher.write(&[]);
        assert_eq!(hasher.finish(), 0x726f_db47_dd0e_0e31);
        let message: Vec<u8> = (0u8..15).collect();
        let mut hasher = SipHasher24::new_with_key(&key);
        hasher.write(&message);
        assert_eq!(hasher.finish(), 0xa129_ca61_49be_45e5);
        assert_eq!(tag(&key, ""), 0x726f_db47);
    }

    #[test]
    fn each_redaction_writes_what_it_says() {
        assert_eq!(
            write(Redaction::Mask, "jane@example.com", "email"),
            "****@*******.***"
        );
        assert_eq!(
            write(Redaction::Placeholder, "jane@example.com", "email"),
            "[EMAIL]"
        );
        assert_eq!(write(Redaction::Remove, "jane@example.com", "email"), "");
        let hashed = write(Redaction::Hash, "jane@example.com", "credit-card");
        assert!(
            hashed.starts_with("[CREDIT_CARD:") && hashed.len() == 22,
            "{hashed}"
        );
    }

    #[test]
    fn format_preserving_masks_keep_the_shape_not_the_value() {
        let f = |value, kind| write(Redaction::PreserveFormat, value, kind);
        assert_eq!(f("test@example.com", "email"), "t**t@*******.com");
        assert_eq!(f("jo@mail.example.org", "email"), "**@****.*******.org");
        assert_eq!(f("(555) 123-4567", "phone"), "(XXX) XXX-4567");
        assert_eq!(f("+1 555 123 4567", "phone"), "+X XXX XXX 4567");
        assert_eq!(
            f("4111 1111 1111 1234", "credit-card"),
            "**** **** **** 1234"
        );
        assert_eq!(f("Jane Doe", "name"), "J*** **e");
        assert_eq!(f("Bob", "name"), "***");
        assert_eq!(f("12", "phone"), "XX", "too short to keep anything");
        assert_eq!(f("not an address", "email"), "n** ** ******s");
    }
}
