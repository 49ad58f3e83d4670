//! A processor as an impl block with several hooks, a helper method, and generics; the
//! default id of a type named with an acronym.

use processors::prelude::*;

pub struct Budget<const N: usize> {
    label: &'static str,
}

#[processor(id = "budget")]
impl<const N: usize> Budget<N> {
    fn over(&self, used: usize) -> bool {
        used > N
    }

    async fn process_output_stream(&self, chunk: &Chunk, state: &mut usize, abort: Abort) -> Result<StreamAction, ProcessorError> {
        *state += chunk.text_delta().map_or(0, str::len);
        if self.over(*state) {
            return Err(abort.reason(self.label).into());
        }
        Ok(StreamAction::Pass)
    }

    fn process_input_step(&self, step: StepNumber, state: &mut usize) -> StepOverrides {
        let _ = (step, state);
        StepOverrides::new()
    }
}

pub struct PIIRedactor;

#[processor]
impl PIIRedactor {
    fn process_output_stream(&self, chunk: &Chunk) -> StreamAction {
        let _ = chunk;
        StreamAction::Pass
    }
}

fn both<P: InputProcessor + OutputProcessor>(_: &P) {}

fn main() {
    let b = Budget::<10> { label: "over budget" };
    both(&b);
    assert_eq!(Budget::<10>::ID, "budget");
    assert_eq!(b.id(), "budget");
    assert_eq!(PIIRedactor::ID, "pii-redactor");
}
