use processors::builtins::HistoryWindow;
use processors::prelude::*;

fn main() {
    let _ = agent! {
        model: ScriptedModel::new([]),
        output: [HistoryWindow::last_turns(3)],
    };
}
