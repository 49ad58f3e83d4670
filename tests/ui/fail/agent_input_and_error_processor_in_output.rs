use processors::prelude::*;

/// Trims the input and retries rejected requests.
struct Mender;

#[processor]
impl Mender {
    fn process_input(&self, messages: Vec<Message>) -> Vec<Message> {
        messages
    }

    fn process_api_error(&self) -> ApiErrorAction {
        ApiErrorAction::Retry
    }
}

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        output: [Mender],
    };
}
