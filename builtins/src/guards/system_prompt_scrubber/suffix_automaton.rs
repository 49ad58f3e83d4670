//! A suffix automaton of the system prompt: fed the answer one character at a time, it keeps
//! the longest piece at the end of the answer that appears somewhere in the prompt, in
//! constant time per character on average. A piece that grows past the minimum span is a
//! verbatim leak, however it is split across deltas.

/// No state (the root's suffix link).
const NONE: u32 = u32::MAX;

/// An empty slot of the transition table (no state has this many states before it).
const EMPTY: u64 = u64::MAX;

/// The class of an ASCII character the text does not have.
const ABSENT: u8 = u8::MAX;

/// The class of an ASCII character whose transitions are in the table, as other characters'
/// are (a text with more than 64 distinct ASCII characters).
const TABLED: u8 = u8::MAX - 1;

/// The most entries the table of every step on an ASCII class may have (2 MiB): prompts of a
/// few thousand characters.
const MAX_STEPS: usize = 1 << 18;

/// A step's new length is the old one plus one (it follows a transition of the state).
const LONGER: u32 = u32::MAX;

/// A state while the automaton is built.
struct State {
    /// The longest text that reaches this state.
    len: u32,
    /// The state of the longest suffix of that text that reaches another state.
    link: u32,
    /// Transitions, sorted by character.
    next: Vec<(char, u32)>,
}

/// A state of the frozen automaton, and its transitions on ASCII characters.
#[derive(Clone, Copy)]
struct Node {
    /// The ASCII classes it has a transition on, one bit each.
    classes: u64,
    /// Where its targets start in [`SuffixAutomaton::targets`], in class order.
    first: u32,
    /// The longest text that reaches it, and its suffix link.
    len: u32,
    link: u32,
}

/// The automaton of every substring of a text.
///
/// A step on an ASCII character (the usual case) reads one node per state it passes: the
/// character's class bit says whether the state has a transition on it, and the bits below
/// it where its target is. Other characters' transitions are in a hash table.
pub(crate) struct SuffixAutomaton {
    nodes: Vec<Node>,
    targets: Vec<u32>,
    /// Each ASCII character's class (its bit in [`Node::classes`]), [`ABSENT`] or [`TABLED`].
    class: [u8; 128],
    /// Where each state goes on each class, when the automaton is small enough
    /// ([`MAX_STEPS`]): the target state, and the new length or [`LONGER`]; `1 << shift` per
    /// state. One read per character, where the nodes take one per state passed and one for
    /// the target.
    steps: Vec<(u32, u32)>,
    steps_shift: u32,
    /// The other transitions, by state and character, in an open-addressing table (one probe
    /// on average per step).
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

    /// The same automaton without its table of steps (as a long text's is).
    #[cfg(test)]
    fn walking(mut self) -> Self {
        self.steps = Vec::new();
        self
    }

    /// A transition of the table.
    fn tabled(&self, state: u32, c: char) -> Option<u32> {
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
    #[inline(always)]
    pub(crate) fn step(&self, at: &mut Position, c: char) {
        let class = match c.is_ascii() {
            true => self.class[c as usize],
            false => TABLED,
        };
        let i = ((at.state as usize) << self.steps_shift) | usize::from(class);
        if class < 64
            && let Some(&(to, len)) = self.steps.get(i)
        {
            at.state = to;
            at.len = if len == LONGER { at.len + 1 } else { len };
            return;
        }
        self.step_walking(at, c, class);
    }

    /// [`step`](Self::step) without the table of steps: through the nodes, or the table
    /// of other transitions.
    #[inline(never)]
    fn step_walking(&self, at: &mut Position, c: char, class: u8) {
        if class == ABSENT {
            *at = Position::default();
            return;
        }
        if class == TABLED {
            return self.step_tabled(at, c);
        }
        let bit = 1u64 << class;
        loop {
            let node = self.nodes[at.state as usize];
            if node.classes & bit != 0 {
                let i = node.first + (node.classes & (bit - 1)).count_ones();
                at.state = self.targets[i as usize];
                at.len += 1;
                return;
            }
            if at.state == 0 {
                at.len = 0;
                return;
            }
            at.state = node.link;
            at.len = self.nodes[at.state as usize].len;
        }
    }

    /// [`step`](Self::step) for a character whose transitions are in the table.
    fn step_tabled(&self, at: &mut Position, c: char) {
        if self.tabled(0, c).is_none() {
            *at = Position::default(); // the text does not have it
            return;
        }
        loop {
            if let Some(next) = self.tabled(at.state, c) {
                at.state = next;
                at.len += 1;
                return;
            }
            if at.state == 0 {
                at.len = 0;
                return;
            }
            at.state = self.nodes[at.state as usize].link;
            at.len = self.nodes[at.state as usize].len;
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

    /// The automaton with its ASCII transitions by class, and the others in a table at most
    /// half full.
    fn freeze(self) -> SuffixAutomaton {
        // The root has a transition on every character of the text: the most used ASCII
        // characters (by how many states have one) get the 64 classes.
        let mut uses = [0usize; 128];
        for s in &self.states {
            for &(c, _) in s.next.iter().filter(|(c, _)| c.is_ascii()) {
                uses[c as usize] += 1;
            }
        }
        let mut ascii: Vec<usize> = (0..128).filter(|&c| uses[c] > 0).collect();
        ascii.sort_by_key(|&c| std::cmp::Reverse(uses[c]));
        let mut class = [ABSENT; 128];
        for (i, &c) in ascii.iter().enumerate() {
            class[c] = if i < 64 { i as u8 } else { TABLED };
        }
        let classed = |c: char| c.is_ascii() && class[c as usize] < 64;
        let mut nodes = Vec::with_capacity(self.states.len());
        let mut targets = Vec::new();
        let mut tabled = Vec::new();
        for (state, s) in self.states.iter().enumerate() {
            let mut mine: Vec<(u8, u32)> = Vec::new();
            for &(c, to) in &s.next {
                match classed(c) {
                    true => mine.push((class[c as usize], to)),
                    false => tabled.push((key(state as u32, c), to)),
                }
            }
            mine.sort_unstable();
            nodes.push(Node {
                classes: mine.iter().fold(0, |bits, &(c, _)| bits | 1 << c),
                first: targets.len() as u32,
                len: s.len,
                link: s.link,
            });
            targets.extend(mine.iter().map(|&(_, to)| to));
        }
        let classes = ascii.len().min(64);
        let steps_shift = classes.max(1).next_power_of_two().trailing_zeros();
        let steps = match nodes.len() << steps_shift {
            n if n <= MAX_STEPS => steps(&nodes, &targets, classes, steps_shift),
            _ => Vec::new(),
        };
        let size = (tabled.len() * 2).max(2).next_power_of_two();
        let mut sam = SuffixAutomaton {
            nodes,
            targets,
            class,
            steps,
            steps_shift,
            table: vec![(EMPTY, 0); size],
            shift: 64 - size.trailing_zeros(),
        };
        let mask = size - 1;
        for (key, to) in tabled {
            let mut i = sam.slot(key);
            while sam.table[i].0 != EMPTY {
                i = (i + 1) & mask;
            }
            sam.table[i] = (key, to);
        }
        sam
    }
}

/// Where each state goes on each class: its own transition, or the one of the longest suffix
/// (through the suffix links) that has one, or the root.
fn steps(nodes: &[Node], targets: &[u32], classes: usize, shift: u32) -> Vec<(u32, u32)> {
    let target = |node: &Node, class: usize| {
        let bit = 1u64 << class;
        (node.classes & bit != 0)
            .then(|| targets[(node.first + (node.classes & (bit - 1)).count_ones()) as usize])
    };
    // A state's link is shorter: states by length see their link's row done.
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_unstable_by_key(|&s| nodes[s].len);
    // Where a state goes when it has no transition of its own, for each class.
    let mut fallback = vec![(0u32, 0u32); nodes.len() << shift];
    let mut steps = vec![(0u32, 0u32); nodes.len() << shift];
    for s in order {
        let node = &nodes[s];
        for class in 0..classes {
            let i = (s << shift) | class;
            if node.link != NONE {
                let link = &nodes[node.link as usize];
                fallback[i] = match target(link, class) {
                    Some(to) => (to, link.len + 1),
                    None => fallback[((node.link as usize) << shift) | class],
                };
            }
            steps[i] = match target(node, class) {
                Some(to) => (to, LONGER),
                None => fallback[i],
            };
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lengths `step` gives for each prefix of `answer`, with the table of steps and
    /// without it (the two must agree).
    fn followed(text: &str, answer: &[char]) -> Vec<u32> {
        let lengths = |sam: &SuffixAutomaton| -> Vec<u32> {
            let mut at = Position::default();
            answer
                .iter()
                .map(|&c| {
                    sam.step(&mut at, c);
                    at.len
                })
                .collect()
        };
        let sam = SuffixAutomaton::new(text.chars());
        let with = lengths(&sam);
        assert!(!sam.steps.is_empty(), "a short text has a table of steps");
        assert_eq!(with, lengths(&sam.walking()), "{text:?}");
        with
    }

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
        for answer in [
            "cadabra magic",
            "xxabraca",
            "the magic wordabra",
            "zzz",
            "aaaa",
        ] {
            let chars: Vec<char> = answer.chars().collect();
            let got = followed(text, &chars);
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
            let got = followed(&text, &answer);
            assert_eq!(got, brute_force(&text, &answer));
        }
    }

    #[test]
    fn more_ascii_characters_than_classes_and_others_agree_with_brute_force() {
        // 95 printable ASCII characters (31 of them in the table) and some others.
        let alphabet: Vec<char> = (' '..='~').chain("éßİ語\u{0}".chars()).collect();
        let mut seed = 99u32;
        let mut next = move |n: usize| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (seed >> 16) as usize % n
        };
        for round in 0..40 {
            // Half the texts have every character, the others a few.
            let width = [alphabet.len(), 6][round % 2];
            let offset = next(alphabet.len() - 6);
            let mut text: Vec<char> = match round % 2 {
                0 => alphabet.clone(),
                _ => Vec::new(),
            };
            text.extend((0..60).map(|_| alphabet[(offset + next(width)) % alphabet.len()]));
            let from = next(text.len() - 20);
            let mut answer: Vec<char> = (0..20).map(|_| alphabet[next(alphabet.len())]).collect();
            answer.extend(&text[from..from + 20]);
            answer.extend((0..20).map(|_| alphabet[(offset + next(width)) % alphabet.len()]));
            let text: String = text.into_iter().collect();
            let got = followed(&text, &answer);
            assert_eq!(got, brute_force(&text, &answer), "{text:?}");
        }
    }
}
