//! The compiled rules: one regex of all patterns, for the matches, and one lazy DFA of the
//! same patterns, for whether a match may still be in progress at the end of streamed text.
//!
//! A streaming scan must not let text go while more text could still make it part of a match
//! (`"sk-12"` before `"345…"`). The DFA answers that exactly: from each position where a match
//! could begin, it walks the rest of the text; a walk that reaches the end without dying could
//! still become a match, so the text from the earliest such position is held. In prose the
//! walks die within a few bytes, so the check costs a few steps per byte of the delta's tail.

use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::util::pool::{Pool, PoolGuard};
use regex_automata::util::start;
use regex_automata::{Anchored, Input, Match, PatternID, meta};
use std::panic::{RefUnwindSafe, UnwindSafe};

/// A rule's check of its matches: whether a match is really one (a checksum, a range).
pub(crate) type Check = fn(&str) -> bool;

/// A match that more text cannot change, by the rule at index `rule`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub rule: usize,
    pub start: usize,
    pub end: usize,
}

/// What becomes of a match the regex found.
enum Verdict {
    Accept(Found),
    /// The rule's check refused it, and no later rule matches there.
    Refuse,
    /// A later rule matches there, but more text could still change its match.
    Undecided,
}

/// How a pool of lazy DFA caches makes one.
type MakeCache = Box<dyn Fn() -> Cache + Send + Sync + UnwindSafe + RefUnwindSafe>;

/// A lazy DFA's cache, lent by the engine's pool for one scan.
pub(crate) type LentCache<'a> = PoolGuard<'a, Cache, MakeCache>;

/// All rules, compiled.
pub(crate) struct Engine {
    regex: meta::Regex,
    dfa: DFA,
    /// The DFA's caches: the states a scan builds are kept for the scans after it, whatever
    /// stream they belong to.
    caches: Pool<Cache, MakeCache>,
    checks: Vec<Option<Check>>,
    /// The longest match any rule can make, in bytes, when every rule's is bounded.
    max_len: Option<usize>,
}

impl Engine {
    /// Compiles the patterns, in priority order, each with its optional check; the error says
    /// why they do not compile together.
    pub(crate) fn new(
        patterns: &[&str],
        checks: Vec<Option<Check>>,
        max_len: Option<usize>,
    ) -> Result<Engine, String> {
        let regex = meta::Regex::new_many(patterns).map_err(|e| e.to_string())?;
        let dfa = DFA::builder()
            .configure(
                DFA::config()
                    .starts_for_each_pattern(true)
                    .unicode_word_boundary(true)
                    .skip_cache_capacity_check(true),
            )
            .build_many(patterns)
            .map_err(|e| e.to_string())?;
        let for_pool = dfa.clone();
        let make: MakeCache = Box::new(move || for_pool.create_cache());
        Ok(Engine {
            regex,
            dfa,
            caches: Pool::new(make),
            checks,
            max_len,
        })
    }

    /// A cache for [`scan`](Engine::scan) of streamed text, lent until the guard drops.
    pub(crate) fn cache(&self) -> LentCache<'_> {
        self.caches.get()
    }

    #[cfg(test)]
    fn create_cache(&self) -> Cache {
        self.dfa.create_cache()
    }

    /// Scans `hay[from..]` (what comes before `from` is only look-behind, for `\b`), calling
    /// `found` for each match in order, and returns where the text that must be held begins.
    ///
    /// With `streaming`, the text may go on: matches that more text could change are left
    /// alone and the text from the earliest place where a match may be in progress is held.
    /// Without it, the text is complete: every match is final and nothing is held.
    pub(crate) fn scan<E>(
        &self,
        hay: &str,
        from: usize,
        mut streaming: Option<&mut Cache>,
        mut found: impl FnMut(Found) -> Result<(), E>,
    ) -> Result<usize, E> {
        let end = hay.len();
        // Prose: one pass of the DFA finds no match and nothing in progress, and the text
        // goes as it came.
        if let Some(cache) = streaming.as_deref_mut()
            && self.quiet(cache, hay, from)
        {
            return Ok(end);
        }
        let mut hold = match streaming.as_deref_mut() {
            Some(cache) => self.earliest_live(cache, hay, from),
            None => end,
        };
        let mut at = from;
        while at < hold {
            let Some(m) = self.regex.search(&Input::new(hay).range(at..end)) else {
                break;
            };
            if m.start() >= hold {
                break;
            }
            match self.verdict(hay, m, streaming.as_deref_mut()) {
                Verdict::Accept(f) => {
                    found(f)?;
                    at = f.end.max(next_char(hay, f.start));
                    if at > hold {
                        hold = match streaming.as_deref_mut() {
                            Some(cache) => self.earliest_live(cache, hay, at),
                            None => end,
                        };
                    }
                }
                Verdict::Refuse => at = next_char(hay, m.start()),
                Verdict::Undecided => {
                    hold = m.start();
                    break;
                }
            }
        }
        Ok(hold)
    }

    /// Checks a match with its rule's check; when refused, the rules after it get their turn
    /// at the same place (the ones before it do not match there, or the regex would have
    /// reported them).
    fn verdict(&self, hay: &str, m: Match, mut streaming: Option<&mut Cache>) -> Verdict {
        let start = m.start();
        let first = m.pattern().as_usize();
        if self.passes(first, &hay[m.range()]) {
            return Verdict::Accept(Found {
                rule: first,
                start,
                end: m.end(),
            });
        }
        for rule in first + 1..self.checks.len() {
            let Ok(pid) = PatternID::new(rule) else { break };
            let anchored = Anchored::Pattern(pid);
            let input = Input::new(hay).range(start..).anchored(anchored);
            let Some(m) = self.regex.search(&input) else {
                continue;
            };
            if let Some(cache) = streaming.as_deref_mut()
                && self.alive(cache, hay, start, anchored)
            {
                return Verdict::Undecided;
            }
            if self.passes(rule, &hay[m.range()]) {
                return Verdict::Accept(Found {
                    rule,
                    start,
                    end: m.end(),
                });
            }
        }
        Verdict::Refuse
    }

    fn passes(&self, rule: usize, text: &str) -> bool {
        self.checks
            .get(rule)
            .copied()
            .flatten()
            .is_none_or(|f| f(text))
    }

    /// Whether `hay[from..]` holds no match and no match is in progress at its end, found by
    /// one unanchored pass of the DFA: no match state on the way, and the state at the end is
    /// the start state of that place (nothing begun is still going). `false` also when the
    /// DFA cannot tell (a Unicode `\b` next to non-ASCII text): the full scan decides then.
    fn quiet(&self, cache: &mut Cache, hay: &str, from: usize) -> bool {
        let bytes = hay.as_bytes();
        let start = |cache: &mut Cache, at: usize| {
            let config = start::Config::new()
                .anchored(Anchored::No)
                .look_behind(at.checked_sub(1).map(|i| bytes[i]));
            self.dfa.start_state(cache, &config).ok()
        };
        let Some(mut sid) = start(cache, from) else {
            return false;
        };
        for &b in &bytes[from..] {
            sid = match self.dfa.next_state(cache, sid, b) {
                Ok(sid) if !sid.is_quit() && !sid.is_match() => sid,
                _ => return false,
            };
        }
        let at_end = self.dfa.next_eoi_state(cache, sid);
        at_end.is_ok_and(|eoi| !eoi.is_match()) && start(cache, bytes.len()) == Some(sid)
    }

    /// The earliest position at or after `from` where a match may still be in progress at
    /// the end of `hay` (`hay.len()` when there is none).
    fn earliest_live(&self, cache: &mut Cache, hay: &str, from: usize) -> usize {
        let end = hay.len();
        // A match in progress from `i` is longer than `end - i`.
        let from = match self.max_len {
            Some(max) => from.max((end + 1).saturating_sub(max)),
            None => from,
        };
        (from..end)
            .filter(|&i| hay.is_char_boundary(i))
            .find(|&i| self.alive(cache, hay, i, Anchored::Yes))
            .unwrap_or(end)
    }

    /// Whether a match anchored at `at` may still be in progress at the end of `hay`: the DFA
    /// walks to the end without dying. Where the DFA cannot decide (a Unicode `\b` next to
    /// non-ASCII text), the rules' longest match decides, or, unbounded, the answer is yes.
    fn alive(&self, cache: &mut Cache, hay: &str, at: usize, anchored: Anchored) -> bool {
        let bytes = hay.as_bytes();
        let undecided = || self.max_len.is_none_or(|max| bytes.len() - at < max);
        let config = start::Config::new()
            .anchored(anchored)
            .look_behind(at.checked_sub(1).map(|i| bytes[i]));
        let Ok(mut sid) = self.dfa.start_state(cache, &config) else {
            return undecided();
        };
        for &b in &bytes[at..] {
            if sid.is_dead() {
                return false;
            }
            if sid.is_quit() {
                return undecided();
            }
            sid = match self.dfa.next_state(cache, sid, b) {
                Ok(sid) => sid,
                Err(_) => return undecided(),
            };
        }
        if sid.is_quit() {
            return undecided();
        }
        !sid.is_dead()
    }
}

/// The position of the character after the one at `at`.
fn next_char(hay: &str, at: usize) -> usize {
    hay[at..]
        .chars()
        .next()
        .map_or(at + 1, |c| at + c.len_utf8())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass check says quiet for prose only: never with a match in the text, nor
    /// with one begun at its end.
    #[test]
    fn only_text_with_no_match_and_nothing_in_progress_is_quiet() {
        let e = engine(&[r"[a-z]+@[a-z]+\.com", r"(?-u:\b)sk-[a-z0-9]{8}(?-u:\b)"]);
        let mut cache = e.create_cache();
        assert!(e.quiet(&mut cache, "the quick brown fox jumps ", 0));
        assert!(e.quiet(&mut cache, "", 0));
        assert!(!e.quiet(&mut cache, "write to jane@example.com now", 0));
        assert!(!e.quiet(&mut cache, "write to jane@exa", 0), "in progress");
        assert!(!e.quiet(&mut cache, "the key sk-", 0), "in progress");
        assert!(
            !e.quiet(&mut cache, "the key sk-abcdefgh", 0),
            "a match at the end"
        );
        // What comes before `from` is look-behind only.
        assert!(e.quiet(&mut cache, "jane@example.com and then ", 17));
    }

    /// A scan's lazy DFA states outlive its stream: the next stream's scan starts from them
    /// instead of building them again.
    #[test]
    fn the_states_a_scan_builds_are_kept_for_the_next_scan() {
        let e = engine(&[r"[a-z]+@[a-z]+\.com", r"(?-u:\b)sk-[a-z0-9]{8}(?-u:\b)"]);
        let fresh = e.create_cache().memory_usage();
        {
            let mut lent = e.cache();
            let _ = e.scan::<()>("write to jane@exa", 0, Some(&mut lent), |_| Ok(()));
        }
        assert!(e.cache().memory_usage() > fresh);
    }

    fn engine(patterns: &[&str]) -> Engine {
        let checks = vec![None; patterns.len()];
        match Engine::new(patterns, checks, None) {
            Ok(e) => e,
            Err(_) => panic!("patterns compile"),
        }
    }

    fn hold(e: &Engine, text: &str) -> usize {
        let mut cache = e.create_cache();
        let r: Result<usize, ()> = e.scan(text, 0, Some(&mut cache), |_| Ok(()));
        r.unwrap_or(0)
    }

    #[test]
    fn holds_from_where_a_match_may_be_in_progress() {
        let e = engine(&[r"(?-u:\b)sk-[a-z0-9]{5,}"]);
        assert_eq!(hold(&e, "my key is sk-12"), 10);
        assert_eq!(hold(&e, "my key is s"), 10);
        assert_eq!(hold(&e, "my key is "), 10);
        // A word that cannot start a key is let go: "ask" has no boundary before "sk".
        assert_eq!(hold(&e, "we ask"), 6);
        // A complete key followed by a space is final.
        assert_eq!(hold(&e, "sk-12345 ok"), 11);
    }

    #[test]
    fn a_complete_match_that_could_grow_is_held() {
        let e = engine(&[r"(?-u:\b)sk-[a-z0-9]{5,}"]);
        let mut cache = e.create_cache();
        let mut seen = Vec::new();
        let held = e
            .scan::<()>("a sk-12345", 0, Some(&mut cache), |f| {
                seen.push(f);
                Ok(())
            })
            .unwrap_or(0);
        assert_eq!(held, 2);
        assert!(seen.is_empty());
    }

    #[test]
    fn a_refused_match_lets_a_later_rule_match_at_the_same_place() {
        let patterns = [r"[0-9]{4}", r"[0-9]{2}"];
        let checks: Vec<Option<Check>> = vec![Some(|_| false), None];
        let Ok(e) = Engine::new(&patterns, checks, None) else {
            panic!("compiles")
        };
        let mut seen = Vec::new();
        let _ = e.scan::<()>("x 1234 y", 0, None, |f| {
            seen.push(f);
            Ok(())
        });
        assert_eq!(
            seen,
            [
                Found {
                    rule: 1,
                    start: 2,
                    end: 4
                },
                Found {
                    rule: 1,
                    start: 4,
                    end: 6
                }
            ]
        );
    }
}
