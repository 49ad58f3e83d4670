//! Name conversions and "did you mean" suggestions.

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

/// `redact_pii` → `redact-pii`; `RedactPii` → `redact-pii`.
pub fn kebab(name: &str) -> String {
    let mut out = String::new();
    for (i, ch) in name.chars().enumerate() {
        if ch == '_' {
            out.push('-');
        } else if ch.is_uppercase() {
            if i > 0 && !out.ends_with('-') {
                out.push('-');
            }
            out.extend(ch.to_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
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

/// The closest candidate, if close enough to be a likely typo.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (distance(name, c), c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// " (did you mean `x`?)" or "".
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, candidates)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(upper_camel("redact_pii"), "RedactPii");
        assert_eq!(upper_camel("count"), "Count");
        assert_eq!(kebab("redact_pii"), "redact-pii");
        assert_eq!(kebab("TokenLimiter"), "token-limiter");
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
        assert_eq!(
            closest(
                "process_ouput_stream",
                ["process_output_stream", "process_input"]
            ),
            Some("process_output_stream")
        );
    }
}
