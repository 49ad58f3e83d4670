//! A few thousand files made by mutating good and bad ones: loading never panics, and every
//! mistake reported has a place inside the file. (`fuzz/` has the same check as a fuzz target.)

use processors_config::{LoadError, Loader};

const SEEDS: &[&str] = &[
    include_str!("../../examples/agent.toml"),
    "name = \"a\"\ninstructions = [\"x\", \"y\"]\nmodel = { scripted = [[\"a\", \"b\"], \"c\"], cycle = true }\nmax_steps = 3\nmax_processor_retries = 1\ninput = [\"loop-detection\", { processor = \"token-limiter\", limit = 10, strategy = \"abort\" }]\nerror = [\"prefill-error-handler\"]\n",
    "model = \"openai/gpt-4o-mini\"\n[[output]]\nprocessor = \"moderation\"\njudge = { scripted = [] }\nsites = [\"stream\"]\nthreshold = 0.5\n",
    "model = { scripted = [] }\nmemory = { store = \"in-memory\", last_messages = 4 }\ninput = [\"memory\", \"working-memory\"]\noutput = [{ processor = \"cost-guard\", max_cost = 1.5, prices = { \"gpt-4o\" = { input = 2.5, output = 10.0 } } }, \"memory\"]\n",
    "input = [{ processor = \"regex-filter\", rules = [{ name = \"t\", pattern = \"T-[0-9]+\" }] }]\n",
];

/// A small deterministic generator (xorshift), so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const PIECES: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    "\"",
    "=",
    ",",
    "\n",
    "[[input]]\n",
    "[[output]]\n",
    "processor",
    "memory",
    "é",
    "\u{0}",
    "'''",
    "#",
    "-1",
    "1e999",
    "99999999999999999999",
    "true",
    "inf",
    ".",
    "\\",
];

fn mutate(seed: &str, rng: &mut Rng) -> String {
    let mut bytes = seed.as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(4) {
            0 if !bytes.is_empty() => {
                let end = (at + 1 + rng.below(8)).min(bytes.len());
                bytes.drain(at.min(end)..end);
            }
            1 => {
                let piece = PIECES[rng.below(PIECES.len())];
                bytes.splice(at..at, piece.bytes());
            }
            2 if !bytes.is_empty() => {
                let i = at.min(bytes.len() - 1);
                bytes[i] = rng.next() as u8;
            }
            _ => bytes.truncate(at),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn check(text: &str, result: Result<(), LoadError>) {
    let Err(error) = result else {
        return;
    };
    let lines: Vec<&str> = text.split('\n').collect();
    for d in error.diagnostics() {
        assert!(d.line >= 1 && d.line <= lines.len(), "{d} in {text:?}");
        let width = lines[d.line - 1].chars().count();
        assert!(d.column >= 1 && d.column <= width + 1, "{d} in {text:?}");
    }
}

#[test]
fn mutated_files_never_panic_and_every_mistake_has_a_place() {
    let loader = Loader::new().env(|_| None);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut refused = 0;
    for i in 0..2_000 {
        let text = mutate(SEEDS[i % SEEDS.len()], &mut rng);
        // Nothing outside the test's reach: no SQLite file created where a mutation points.
        if text.contains("sql") || text.contains('\\') {
            continue;
        }
        let agent = loader.agent_str("m.toml", &text).map(|_| ());
        refused += usize::from(agent.is_err());
        check(&text, agent);
        check(&text, loader.lists_str("m.toml", &text).map(|_| ()));
    }
    assert!(refused > 600, "most mutations are mistakes ({refused})");
}
