//! A suffix automaton of the system prompt: fed the answer one character at a time, it keeps
//! the longest piece at the end of the answer that appears somewhere in the prompt, in
//! constant time per character on average. A piece that grows past the minimum span is a
//! verbatim leak, however it is split across deltas.

/// No state (the root's suffix link).
const NONE: u32 = u32::MAX;

/// An empty slot of the transition table (no state has this many states before it).
const EMPTY: u64 = u64::MAX;

/// A state while the automaton is built.
struct State {
    /// The longest text that reaches this state.
    len: u32,
    /// The state of the longest suffix of that text that reaches another state.
    link: u32,
    /// Transitions, sorted by character.
    next: Vec<(char, u32)>,
}

/// The automaton of every substring of a text.
pub(crate) struct SuffixAutomaton {
    /// Each state's `len` and `link`.
    len: Vec<u32>,
    link: Vec<u32>,
    /// Every transition, by state and character, in an open-addressing table (one probe on
    /// average per step).
    table: Vec<(u64, u32)>,
    shift: u32,
}

/// Where the answer stands in the automaton: the state of, and the length of, the longest
/// piece at its end that appears in the text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Position {
    state: u32,
    /// How many characters at the end of the answer appear verbatim in the text.
    pub(crate) len: u32,
}

fn key(state: u32, c: char) -> u64 {
    (u64::from(state) << 32) | u64::from(u32::from(c))
}

impl SuffixAutomaton {
    /// The automaton of `text` (in linear time).
    pub(crate) fn new(text: impl IntoIterator<Item = char>) -> Self {
        let mut b = Builder {
            states: vec![State {
                len: 0,
                link: NONE,
                next: Vec::new(),
            }],
        };
        let mut last = 0;
        for c in text {
            last = b.extend(last, c);
        }
        b.freeze()
    }

    #[inline]
    fn slot(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline]
    fn next(&self, state: u32, c: char) -> Option<u32> {
        let key = key(state, c);
        let mask = self.table.len() - 1;
        let mut i = self.slot(key);
        loop {
            match self.table[i] {
                (k, to) if k == key => return Some(to),
                (EMPTY, _) => return None,
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Moves `at` past one more character of the answer.
    #[inline]
    pub(crate) fn step(&self, at: &mut Position, c: char) {
        loop {
            if let Some(next) = self.next(at.state, c) {
                at.state = next;
                at.len += 1;
                return;
            }
            if at.state == 0 {
                at.len = 0;
                return;
            }
            at.state = self.link[at.state as usize];
            at.len = self.len[at.state as usize];
        }
    }
}

/// Builds the automaton state by state (Blumer et al.), then freezes it.
struct Builder {
    states: Vec<State>,
}

impl Builder {
    fn next(&self, state: u32, c: char) -> Option<u32> {
        let next = &self.states[state as usize].next;
        next.binary_search_by_key(&c, |&(k, _)| k)
            .ok()
            .map(|i| next[i].1)
    }

    fn set(&mut self, state: u32, c: char, to: u32) {
        let next = &mut self.states[state as usize].next;
        match next.binary_search_by_key(&c, |&(k, _)| k) {
            Ok(i) => next[i].1 = to,
            Err(i) => next.insert(i, (c, to)),
        }
    }

    fn push(&mut self, len: u32, link: u32, next: Vec<(char, u32)>) -> u32 {
        self.states.push(State { len, link, next });
        (self.states.len() - 1) as u32
    }

    /// Adds `c` after the text that ends in `last`; returns the state of the longer text.
    fn extend(&mut self, last: u32, c: char) -> u32 {
        let cur = self.push(self.states[last as usize].len + 1, 0, Vec::new());
        let mut p = last;
        while p != NONE && self.next(p, c).is_none() {
            self.set(p, c, cur);
            p = self.states[p as usize].link;
        }
        // Back at the root without a `c`: the new text's suffixes are new but for the empty
        // one (the link `push` gave).
        let Some(q) = (p != NONE).then(|| self.next(p, c)).flatten() else {
            return cur;
        };
        if self.states[p as usize].len + 1 == self.states[q as usize].len {
            self.states[cur as usize].link = q;
            return cur;
        }
        let (len, link) = (
            self.states[p as usize].len + 1,
            self.states[q as usize].link,
        );
        let next = self.states[q as usize].next.clone();
        let clone = self.push(len, link, next);
        while p != NONE && self.next(p, c) == Some(q) {
            self.set(p, c, clone);
            p = self.states[p as usize].link;
        }
        self.states[q as usize].link = clone;
        self.states[cur as usize].link = clone;
        cur
    }

    /// The automaton with its transitions in one table, at most half full.
    fn freeze(self) -> SuffixAutomaton {
        let transitions: usize = self.states.iter().map(|s| s.next.len()).sum();
        let size = (transitions * 2).max(2).next_power_of_two();
        let mut sam = SuffixAutomaton {
            len: self.states.iter().map(|s| s.len).collect(),
            link: self.states.iter().map(|s| s.link).collect(),
            table: vec![(EMPTY, 0); size],
            shift: 64 - size.trailing_zeros(),
        };
        let mask = size - 1;
        for (state, s) in self.states.iter().enumerate() {
            for &(c, to) in &s.next {
                let key = key(state as u32, c);
                let mut i = sam.slot(key);
                while sam.table[i].0 != EMPTY {
                    i = (i + 1) & mask;
                }
                sam.table[i] = (key, to);
            }
        }
        sam
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The longest suffix of each prefix of `answer` that is a substring of `text`.
    fn brute_force(text: &str, answer: &[char]) -> Vec<u32> {
        (1..=answer.len())
            .map(|end| {
                (0..end)
                    .map(|start| answer[start..end].iter().collect::<String>())
                    .filter(|s| text.contains(s.as_str()))
                    .map(|s| s.chars().count() as u32)
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    #[test]
    fn follows_the_longest_verbatim_piece() {
        let text = "abracadabra, the magic word";
        let sam = SuffixAutomaton::new(text.chars());
        for answer in [
            "cadabra magic",
            "xxabraca",
            "the magic wordabra",
            "zzz",
            "aaaa",
        ] {
            let chars: Vec<char> = answer.chars().collect();
            let mut at = Position::default();
            let got: Vec<u32> = chars
                .iter()
                .map(|&c| {
                    sam.step(&mut at, c);
                    at.len
                })
                .collect();
            assert_eq!(got, brute_force(text, &chars), "{answer}");
        }
    }

    #[test]
    fn pseudo_random_texts_agree_with_brute_force() {
        // A small linear congruential generator over a 3-letter alphabet.
        let mut seed = 12345u32;
        let mut letters = |n: usize| -> String {
            (0..n)
                .map(|_| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    ['a', 'b', 'c'][(seed >> 16) as usize % 3]
                })
                .collect()
        };
        for _ in 0..30 {
            let text = letters(40);
            let answer: Vec<char> = letters(30).chars().collect();
            let sam = SuffixAutomaton::new(text.chars());
            let mut at = Position::default();
            let got: Vec<u32> = answer
                .iter()
                .map(|&c| {
                    sam.step(&mut at, c);
                    at.len
                })
                .collect();
            assert_eq!(got, brute_force(&text, &answer));
        }
    }
}
