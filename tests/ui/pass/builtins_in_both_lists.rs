use processors::builtins::cost_guard::Budget;
use processors::builtins::{CostGuard, LoopDetection, TokenLimiter};
use processors::prelude::*;

fn main() {
    let guard = CostGuard::new(Budget::Tokens(10_000)).unwrap();
    let _agent = agent! {
        model: ScriptedModel::new([]),
        input: [TokenLimiter::new(8_000).unwrap(), LoopDetection::new(), guard.clone()],
        output: [TokenLimiter::new(500).unwrap(), LoopDetection::new(), guard],
    };
}
