//! [`ToxicityWords`]: the local check for [`Moderation`](super::Moderation), by word list and
//! pattern.

use super::local::{Local, LocalCheck};
use regex_automata::meta::Regex;
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind, PatternSet};
use serde_json::{Map, Value, json};

/// The terms, one a line (the file says its format; it is under the repository's licence).
const TERMS: &str = include_str!("../../data/toxicity_terms.tsv");

/// The score a strong term gives its categories, and a weak one.
const STRONG: f64 = 0.95;
const WEAK: f64 = 0.3;

/// The endings a listed word may take (`fucking`, `bitches`, `dickhead`, `shitty`).
const ENDINGS: &str = "s|es|ed|er|ers|ing|in|y|ty|head|heads|face|hole|holes|wit|wits";

/// One term of the list.
#[derive(Debug)]
struct Term {
    name: String,
    strong: bool,
    categories: Vec<String>,
}

/// The local check for [`Moderation`](super::Moderation): harmful content found by a list of
/// words and patterns shipped with the crate (`data/toxicity_terms.tsv`), with no model call.
///
/// It scores the categories Moderation judges (`hate`, `hate/threatening`, `harassment`,
/// `harassment/threatening`, `self-harm`, `self-harm/intent`, `self-harm/instructions`,
/// `sexual`, `sexual/minors`, `violence`, `violence/graphic`), plus `profanity`, which
/// Moderation judges only when asked (`.categories([..., "profanity"])`): swearing alone is not
/// harm. A strong term (a slur, an insult or a threat aimed at the reader, first-person
/// self-harm, explicit sexual terms, a group called vermin or marked for harm) scores its
/// categories 0.95 and decides; a weak one (a word with innocent uses: `kill`, `sex`,
/// `suicide`, `dick`, `idiot`) scores 0.3, under Moderation's default threshold, and leaves the
/// decision to the judge's model under [`Judge::first`](super::Judge::first), as does a text
/// with no term: a list cannot vouch that a text is clean.
///
/// Spellings that dodge a plain list are read: letters repeated (`fuuuck`), a `*` for a vowel
/// (`f*ck`), letters spaced or dotted (`f.u.c.k`), digits and signs for letters inside words
/// (`y0u`, `1diot`, `@ss`, `sh!t`), invisible characters, curly apostrophes. The verdict names
/// the terms it found (`terms`). English only; insults phrased without the listed words, and
/// sarcasm, are missed: measure it on your traffic with [`eval`](crate::eval).
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::detector::{Judge, Moderation, ToxicityWords};
/// use processors::prelude::*;
///
/// let moderation = Moderation::builder(Judge::local(ToxicityWords::new())).build()?;
/// let agent = Agent::builder()
///     .model(ScriptedModel::cycle([Turn::text("Here you go.")]))
///     .input(moderation)
///     .build()?;
/// assert!(agent.generate("How do I kill a stuck process?").await?.tripwire.is_none());
/// let blocked = agent.generate("I will find you and kill you.").await?;
/// let verdict = &blocked.tripwire.unwrap().metadata.unwrap()["verdicts"][0];
/// assert_eq!(verdict["model"], "local/toxicity-words");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct ToxicityWords {
    terms: Vec<Term>,
    /// Every term's pattern, in one regex: one pass over a text finds them all.
    patterns: Regex,
}

impl std::fmt::Debug for ToxicityWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.terms.iter().map(|t| t.name.as_str()).collect();
        f.debug_struct("ToxicityWords")
            .field("terms", &names)
            .finish()
    }
}

impl Default for ToxicityWords {
    fn default() -> Self {
        Self::new()
    }
}

impl ToxicityWords {
    /// The check with every term of the list.
    pub fn new() -> Self {
        let mut terms = Vec::new();
        let mut patterns = Vec::new();
        for line in TERMS.lines() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            let [name, strength, categories, kind, pattern] = fields[..] else {
                unreachable!("a term has five fields: {line}");
            };
            let pattern = match kind {
                "word" => words_pattern(pattern),
                _ => pattern.to_owned(),
            };
            // ASCII word boundaries: the lazy DFA runs them on any text.
            patterns.push(pattern.replace(r"\b", r"(?-u:\b)"));
            terms.push(Term {
                name: name.to_owned(),
                strong: strength == "strong",
                categories: categories.split(',').map(str::to_owned).collect(),
            });
        }
        let patterns = Regex::builder()
            .syntax(syntax::Config::new().case_insensitive(true))
            .configure(Regex::config().match_kind(MatchKind::All))
            .build_many(&patterns)
            .unwrap_or_else(|e| unreachable!("the terms compile: {e}"));
        ToxicityWords { terms, patterns }
    }
}

impl LocalCheck for ToxicityWords {
    fn name(&self) -> &str {
        "toxicity-words"
    }

    fn check(&self, text: &str) -> Local {
        let folded = fold(text);
        let mut found = PatternSet::new(self.terms.len());
        self.patterns
            .which_overlapping_matches(&Input::new(&folded), &mut found);
        let found: Vec<&Term> = found.iter().map(|id| &self.terms[id.as_usize()]).collect();
        let mut scores = Map::new();
        for term in &found {
            let score = if term.strong { STRONG } else { WEAK };
            for category in &term.categories {
                let at = scores.entry(category.as_str()).or_insert(json!(0.0));
                if at.as_f64().unwrap_or(0.0) < score {
                    *at = json!(score);
                }
            }
        }
        let names: Vec<&str> = found.iter().map(|t| t.name.as_str()).collect();
        let verdict: Value = json!({ "categories": scores, "terms": names });
        match found.iter().any(|t| t.strong) {
            true => Local::Sure(verdict),
            false => Local::Unsure(verdict),
        }
    }
}

/// The pattern of a `word` term: each of its words whole, with repeated letters, a `*` for a
/// vowel, one separator between letters from four letters on, and the common endings.
fn words_pattern(words: &str) -> String {
    let alternatives: Vec<String> = words
        .split('|')
        .map(|word| {
            let spaced = word.chars().count() >= 4;
            let mut p = String::new();
            for (i, c) in word.chars().enumerate() {
                if i > 0 && spaced {
                    p.push_str(r"[ .*_-]?");
                }
                match c {
                    'a' | 'e' | 'i' | 'o' | 'u' => p.push_str(&format!(r"(?:{c}|\*)+")),
                    _ => p.push_str(&format!("{c}+")),
                }
            }
            p
        })
        .collect();
    format!(r"\b(?:{})(?:{ENDINGS})?\b", alternatives.join("|"))
}

/// The text as the patterns read it: whitespace collapsed, invisible characters dropped,
/// curly apostrophes straight, inside words that have letters the digits and signs that
/// stand for letters read as those letters (`y0u`, `1diot`, `@ss`, `sh!t`, `$hit`), and a word
/// spelled out letter by letter read as one (`f.u.c.k`, `f u c k`).
fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut i = 0;
    while i < words.len() {
        if i > 0 {
            out.push(' ');
        }
        // Three letters or more, each a word of its own: one word spelled out.
        let letters = words[i..]
            .iter()
            .take_while(|w| w.len() == 1 && w.as_bytes()[0].is_ascii_alphabetic())
            .count();
        if letters >= 3 {
            out.extend(words[i..i + letters].iter().flat_map(|w| w.chars()));
            i += letters;
            continue;
        }
        let word = words[i];
        i += 1;
        if let Some(joined) = spelled_out(word) {
            out.push_str(&joined);
            continue;
        }
        let has_letters = word.chars().any(|c| c.is_ascii_alphabetic());
        let mut chars = word.chars().peekable();
        while let Some(c) = chars.next() {
            let next_is_letter = chars.peek().is_some_and(char::is_ascii_alphabetic);
            let read = match c {
                '\u{ad}' | '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{feff}' => {
                    continue;
                }
                '\u{2018}' | '\u{2019}' => '\'',
                _ if !has_letters => c,
                '0' => 'o',
                '1' => 'i',
                '3' => 'e',
                '4' | '@' => 'a',
                '5' | '$' => 's',
                '7' => 't',
                '!' | '|' if next_is_letter => 'i',
                _ => c,
            };
            out.push(read);
        }
    }
    out
}

/// A word spelled out with a separator between its letters (`f.u.c.k`, `s-h-i-t`, with any
/// punctuation after it), joined; `None` for any other word.
fn spelled_out(word: &str) -> Option<String> {
    let body = word.trim_end_matches([',', '.', '!', '?', ';', ':']);
    let bytes = body.as_bytes();
    let alternates = bytes.len() >= 5
        && bytes.len() % 2 == 1
        && bytes.iter().enumerate().all(|(i, b)| match i % 2 {
            0 => b.is_ascii_alphabetic(),
            _ => matches!(b, b'.' | b'-' | b'_' | b'*'),
        });
    alternates.then(|| {
        let mut joined: String = bytes.iter().step_by(2).map(|&b| b as char).collect();
        joined.push_str(&word[body.len()..]);
        joined
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        let local = ToxicityWords::new().check(text);
        local.verdict()["terms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn every_term_compiles_and_ordinary_text_has_none() {
        let check = ToxicityWords::new();
        assert_eq!(check.patterns.pattern_len(), check.terms.len());
        assert!(check.terms.len() > 20);
        for text in [
            "How do I kill a process that is stuck?",
            "The assassin in the novel uses a bass guitar case.",
            "Scunthorpe and Penistone are towns in England.",
            "I will beat you at chess tomorrow.",
            "I'll find you a hotel near the station.",
            "Shoot me an email when the build is green.",
            "My order 4111 arrived with a cocktail glass.",
            "Contact me at john@example.com, thanks!",
        ] {
            let strong = check.check(text);
            assert!(!strong.is_sure(), "{text}: {:?}", terms(text));
        }
    }

    #[test]
    fn dodged_spellings_are_read() {
        assert_eq!(terms("f.u.c.k you"), ["profanity", "insult-verb"]);
        assert_eq!(terms("y0u are an 1diot"), ["insult", "insult-word"]);
        assert_eq!(terms("sh!t"), ["profanity"]);
        assert_eq!(terms("fuuuuck this"), ["profanity"]);
        assert_eq!(
            terms("what a f*cking idiot"),
            ["profanity", "insult", "insult-word"]
        );
        assert_eq!(terms("you\u{2019}re dead"), ["threat-fate"]);
        assert_eq!(terms("b\u{200b}itch"), ["profanity"]);
    }

    #[test]
    fn strong_terms_decide_and_weak_ones_leave_it_to_the_judge() {
        let check = ToxicityWords::new();
        let threat = check.check("I'm going to kill you");
        assert!(threat.is_sure());
        assert_eq!(
            threat.verdict()["categories"]["harassment/threatening"],
            STRONG
        );
        let weak = check.check("The film has a murder in the first act.");
        assert!(!weak.is_sure());
        assert_eq!(weak.verdict()["categories"]["violence"], WEAK);
        let none = check.check("Lovely weather today.");
        assert!(!none.is_sure());
        assert_eq!(none.verdict()["categories"], json!({}));
    }

    #[test]
    fn digits_stand_for_letters_only_inside_words() {
        assert_eq!(
            fold("y0u 4111 a55 h\u{ad}i  there"),
            "you 4111 ass hi there"
        );
        assert_eq!(fold("idiot! |x"), "idiot! ix");
        assert_eq!(fold("f.u.c.k, s h i t a b"), "fuck, shitab");
        assert_eq!(fold("e.g. i.e. a.m."), "e.g. i.e. a.m.");
    }
}
