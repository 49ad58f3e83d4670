//! Name conversions, "did you mean" suggestions, and code as it reads in messages.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// `redact_pii` → `RedactPii`.
pub fn upper_camel(snake: &str) -> String {
    snake
        .split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

/// A name in kebab-case, for default ids: `redact_pii` → `redact-pii`, `RedactPii` →
/// `redact-pii`. Words split as in heck's kebab-case, so an acronym stays one word
/// (`PIIRedactor` → `pii-redactor`, `HTTPClientGuard` → `http-client-guard`). Every `_` becomes
/// one `-`: `_check` gives `-check`, which is not a valid id, so the macro asks for one.
pub fn kebab(name: &str) -> String {
    name.split('_')
        .map(|part| words(part).join("-").to_lowercase())
        .collect::<Vec<_>>()
        .join("-")
}

/// The words of an identifier without `_`: a new word starts at a capital after a lowercase
/// letter (`redactPii`), and at the last capital of a run followed by a lowercase letter
/// (`PIIRedactor` → `PII`, `Redactor`). Digits belong to the word they follow.
fn words(s: &str) -> Vec<&str> {
    #[derive(Clone, Copy, PartialEq)]
    enum Case {
        Start,
        Lower,
        Upper,
    }
    let mut words = Vec::new();
    let mut start = 0;
    let mut case = Case::Start;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let Some(&(next_i, next)) = chars.peek() else {
            words.push(&s[start..]);
            break;
        };
        let with_c = if c.is_lowercase() {
            Case::Lower
        } else if c.is_uppercase() {
            Case::Upper
        } else {
            case
        };
        if with_c == Case::Lower && next.is_uppercase() {
            words.push(&s[start..next_i]);
            start = next_i;
            case = Case::Start;
        } else if case == Case::Upper && c.is_uppercase() && next.is_lowercase() {
            words.push(&s[start..i]);
            start = i;
            case = Case::Start;
        } else {
            case = with_c;
        }
    }
    words
}

/// Whether `id` is a valid processor id: a lowercase ASCII letter, then lowercase letters,
/// digits, `-`, `_` or `.`.
pub fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c))
}

fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The closest candidate: one close enough to be a likely typo, or else the one that holds
/// every word of `name` with the fewest words besides (`max_retries` →
/// `max_processor_retries`), when only one does.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let candidates: Vec<&'a str> = candidates.into_iter().collect();
    let typo = candidates
        .iter()
        .map(|c| (distance(name, c), *c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c);
    typo.or_else(|| by_words(name, &candidates))
}

/// The candidate holding every `_`-separated word of `name`, with the fewest other words;
/// `None` when none does, or two tie.
fn by_words<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = name.to_ascii_lowercase();
    let words: Vec<&str> = lower.split('_').filter(|w| !w.is_empty()).collect();
    if words.is_empty() {
        return None;
    }
    let mut holding: Vec<(usize, &'a str)> = candidates
        .iter()
        .filter_map(|c| {
            let theirs: Vec<&str> = c.split('_').collect();
            words
                .iter()
                .all(|w| theirs.contains(w))
                .then(|| (theirs.len() - words.len(), *c))
        })
        .collect();
    holding.sort_by_key(|(extra, _)| *extra);
    match holding.as_slice() {
        [(a, c), (b, _), ..] if a < b => Some(c),
        [(_, c)] => Some(c),
        _ => None,
    }
}

/// " (did you mean `x`?)" or "".
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, candidates)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

/// Code as a person writes it, for messages: `Limit::<3>`, `Filter { words: vec!["x"] }`,
/// `TokenLimiter::new(4_000)`, not the token-spaced `Limit :: < 3 >`.
pub fn tokens_text(tokens: &TokenStream) -> String {
    let mut out = String::new();
    write_tokens(tokens.clone(), &mut out);
    out
}

/// Operators written with a space on each side.
const SPACED: [&str; 14] = [
    "=", "==", "!=", "=>", "<=", ">=", "&&", "||", "+=", "-=", "*=", "/=", "+", "/",
];

/// Operators of several characters, longest first.
const COMPOSITE: [&str; 15] = [
    "..=", "::", "=>", "==", "!=", "<=", ">=", "&&", "||", "+=", "-=", "*=", "/=", "->", "..",
];

fn write_tokens(tokens: TokenStream, out: &mut String) {
    // Whether the last thing written ends a word (an identifier, a literal, a closing
    // delimiter), after which another word needs a space.
    let mut after_word = false;
    let mut puncts = String::new();
    let mut iter = tokens.into_iter().peekable();
    while let Some(tt) = iter.next() {
        match tt {
            TokenTree::Punct(p) => {
                puncts.push(p.as_char());
                let joined = p.spacing() == Spacing::Joint
                    && matches!(iter.peek(), Some(TokenTree::Punct(_)))
                    && p.as_char() != '\'';
                if joined {
                    continue;
                }
                for op in split_operators(&std::mem::take(&mut puncts)) {
                    match op {
                        "," | ";" => out.push_str(op),
                        ":" => out.push(':'),
                        op if SPACED.contains(&op) => {
                            out.push(' ');
                            out.push_str(op);
                        }
                        op => out.push_str(op),
                    }
                    let space_after = matches!(op, "," | ";" | ":") || SPACED.contains(&op);
                    if space_after {
                        out.push(' ');
                    }
                }
                after_word = false;
            }
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{ ", " }"),
                    Delimiter::None => ("", ""),
                };
                let space = match g.delimiter() {
                    Delimiter::Brace => !out.is_empty() && !out.ends_with(' '),
                    Delimiter::None => after_word,
                    Delimiter::Parenthesis | Delimiter::Bracket => false,
                };
                if space {
                    out.push(' ');
                }
                if g.delimiter() == Delimiter::Brace && g.stream().is_empty() {
                    out.push_str("{}");
                } else {
                    out.push_str(open);
                    write_tokens(g.stream(), out);
                    out.push_str(close);
                }
                after_word = true;
            }
            TokenTree::Ident(_) | TokenTree::Literal(_) => {
                if after_word {
                    out.push(' ');
                }
                out.push_str(&tt.to_string());
                after_word = true;
            }
        }
    }
}

/// `::<` → `::`, `<`.
fn split_operators(mut puncts: &str) -> Vec<&str> {
    let mut ops = Vec::new();
    while !puncts.is_empty() {
        let len = COMPOSITE
            .iter()
            .find(|op| puncts.starts_with(**op))
            .map_or(1, |op| op.len());
        let (op, rest) = puncts.split_at(len);
        ops.push(op);
        puncts = rest;
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn code_reads_as_written() {
        for (tokens, text) in [
            (quote!(Limit::<3>), "Limit::<3>"),
            (quote!(TokenLimiter::new(4_000)), "TokenLimiter::new(4_000)"),
            (
                quote!(Filter {
                    words: vec!["secret"]
                }),
                "Filter { words: vec![\"secret\"] }",
            ),
            (quote!(crate::filters::Shout), "crate::filters::Shout"),
            (quote!(Limit { max: a + 1 }), "Limit { max: a + 1 }"),
            (quote!(make(&mut x, -1)), "make(&mut x, -1)"),
            (quote!(Unit {}), "Unit {}"),
            (quote!(Arc::clone(&shared)), "Arc::clone(&shared)"),
        ] {
            assert_eq!(tokens_text(&tokens), text);
        }
    }

    #[test]
    fn conversions() {
        assert_eq!(upper_camel("redact_pii"), "RedactPii");
        assert_eq!(upper_camel("count"), "Count");
        assert_eq!(kebab("redact_pii"), "redact-pii");
        assert_eq!(kebab("TokenLimiter"), "token-limiter");
    }

    #[test]
    fn kebab_keeps_acronyms_whole() {
        for (name, id) in [
            ("PIIRedactor", "pii-redactor"),
            ("HTTPClientGuard", "http-client-guard"),
            ("ParseURL", "parse-url"),
            ("HTTP2Client", "http2-client"),
            ("Base64Encoder", "base64-encoder"),
            ("redact_keys", "redact-keys"),
            ("redactKeys", "redact-keys"),
            ("Budget", "budget"),
            ("r2d2", "r2d2"),
            ("A", "a"),
        ] {
            assert_eq!(kebab(name), id, "{name}");
        }
    }

    #[test]
    fn kebab_maps_each_underscore_to_a_dash() {
        assert_eq!(kebab("_check"), "-check");
        assert_eq!(kebab("a__b"), "a--b");
        assert_eq!(kebab("check_"), "check-");
        assert_eq!(kebab(""), "");
    }

    #[test]
    fn ids() {
        assert!(valid_id("pii-redactor"));
        assert!(valid_id("a.b_c-1"));
        assert!(!valid_id(""));
        assert!(!valid_id("Pii"));
        assert!(!valid_id("has space"));
        assert!(!valid_id("-lead"));
    }

    #[test]
    fn suggestions() {
        assert_eq!(
            closest("ouput", ["input", "output", "error"]),
            Some("output")
        );
        assert_eq!(closest("zzzzzz", ["input", "output"]), None);
        let keys = ["max_steps", "max_processor_retries", "memory", "model"];
        assert_eq!(closest("max_retries", keys), Some("max_processor_retries"));
        assert_eq!(closest("retries", keys), Some("max_processor_retries"));
        assert_eq!(
            closest("processor_retries", keys),
            Some("max_processor_retries")
        );
        assert_eq!(closest("max", keys), Some("max_steps"));
        assert_eq!(
            closest("limit", ["limit_input_tokens", "limit_output_tokens"]),
            None,
            "a tie suggests nothing"
        );
        assert_eq!(
            closest(
                "process_ouput_stream",
                ["process_output_stream", "process_input"]
            ),
            Some("process_output_stream")
        );
    }
}
