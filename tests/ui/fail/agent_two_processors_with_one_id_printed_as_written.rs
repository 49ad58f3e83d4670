use processors::prelude::*;

/// Stops after `N` chunks; every `N` shares the id `limit`.
struct Limit<const N: usize>;

#[processor(id = "limit")]
impl<const N: usize> Limit<N> {
    fn process_output_stream(&self, state: &mut usize) -> StreamAction {
        *state += 1;
        match *state > N {
            true => StreamAction::Drop,
            false => StreamAction::Pass,
        }
    }
}

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        output: [Limit::<3>, Limit::<4>],
    };
}
