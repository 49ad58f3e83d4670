//! "Did you mean" suggestions: the same rule as `agent!`'s (a likely typo, or else the one
//! name holding every word of the one written), with words split on `_` and `-`, since
//! processor names are kebab-case and options snake_case.
//!
//! `processors-macros` is a proc-macro crate, which can export nothing but macros, so the rule
//! is written here a second time; the tests below pin the cases `agent!`'s suggestions give.

/// The edit distance between two names.
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
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let candidates: Vec<&'a str> = candidates.into_iter().collect();
    // Names are short; a long one (a fuzzer's, or a pasted paragraph) is no typo of them.
    if name.len() > 256 {
        return None;
    }
    let typo = candidates
        .iter()
        .map(|c| (distance(name, c), *c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c);
    typo.or_else(|| by_words(name, &candidates))
}

fn split(name: &str) -> impl Iterator<Item = &str> {
    name.split(['_', '-']).filter(|w| !w.is_empty())
}

/// The candidate holding every word of `name`, with the fewest other words; `None` when none
/// does, or two tie.
fn by_words<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = name.to_ascii_lowercase();
    let words: Vec<&str> = split(&lower).collect();
    if words.is_empty() {
        return None;
    }
    let mut holding: Vec<(usize, &'a str)> = candidates
        .iter()
        .filter_map(|c| {
            let theirs: Vec<&str> = split(c).collect();
            words
                .iter()
                .all(|w| theirs.contains(w))
                .then(|| (theirs.len().saturating_sub(words.len()), *c))
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
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    closest(name, candidates)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

/// Serde's "unknown variant `x`, expected one of `a`, `b`" (or field) with a suggestion after
/// the name, when one of the expected names is close.
pub(crate) fn suggest_in(message: &str) -> String {
    let Some(rest) = message
        .strip_prefix("unknown variant `")
        .or_else(|| message.strip_prefix("unknown field `"))
    else {
        return message.to_owned();
    };
    let Some((name, expected)) = rest.split_once('`') else {
        return message.to_owned();
    };
    let candidates: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let hint = did_you_mean(name, candidates);
    match hint.is_empty() {
        true => message.to_owned(),
        false => {
            let at = message.len() - expected.len();
            format!("{}{hint}{}", &message[..at], &message[at..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_and_words_are_suggested() {
        let names = ["regex-filter", "token-limiter", "batch-parts"];
        assert_eq!(closest("regex-filtr", names), Some("regex-filter"));
        assert_eq!(closest("limiter", names), Some("token-limiter"));
        assert_eq!(closest("moderation", names), None);
        let keys = ["max_processor_retries", "max_steps"];
        assert_eq!(closest("max_retries", keys), Some("max_processor_retries"));
    }

    #[test]
    fn serde_messages_get_a_suggestion() {
        assert_eq!(
            suggest_in("unknown variant `redcat`, expected one of `block`, `redact`, `warn`"),
            "unknown variant `redcat` (did you mean `redact`?), expected one of `block`, `redact`, `warn`"
        );
        assert_eq!(suggest_in("unknown variant `x`"), "unknown variant `x`");
        assert_eq!(suggest_in("missing field `limit`"), "missing field `limit`");
    }
}
