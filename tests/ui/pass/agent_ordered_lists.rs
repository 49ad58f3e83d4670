use processors::builtins::regex_filter::Preset;
use processors::builtins::{BatchParts, RegexFilter, TokenLimiter, UnicodeNormalizer};
use processors::prelude::*;

struct NoPasswords;

#[processor]
impl NoPasswords {
    fn process_input(&self, messages: Vec<Message>) -> Result<Vec<Message>, ProcessorError> {
        match messages.iter().any(|m| m.text().contains("password")) {
            true => Err(ProcessorError::abort("do not send passwords")),
            false => Ok(messages),
        }
    }
}

struct Shout;

#[processor]
impl Shout {
    fn process_output_result(&self, messages: Vec<Message>) -> Vec<Message> {
        messages
    }
}

fn main() {
    let model = ScriptedModel::new([Turn::text("ok")]);
    let secrets = RegexFilter::builder().preset(Preset::Secrets).build().unwrap();
    let agent = agent! {
        model: model.clone(),
        input: ordered[
            TokenLimiter::new(8_000).unwrap(),
            secrets.clone(),
            UnicodeNormalizer::new(),
            NoPasswords before RegexFilter,
        ],
        output: ordered[BatchParts::builder().build().unwrap(), secrets, Shout after RegexFilter],
    };
    let result = futures::executor::block_on(agent.generate("my password is hunter2")).unwrap();
    assert_eq!(result.tripwire.unwrap().processor_id, "no-passwords");
    assert_eq!(model.calls(), 0);
}
