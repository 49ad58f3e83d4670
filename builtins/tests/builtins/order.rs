//! Ordered lists (behaviour 93 of docs/builtins.md): the built-ins in their default order,
//! processors of one's own placed before or after a built-in.

use futures::executor::block_on;
use processors_builtins::chat_recording::{ChatRecording, Recordings};
use processors_builtins::order::{NotInList, Ordered};
use processors_builtins::regex_filter::Preset;
use processors_builtins::{
    BatchParts, DirectoryContext, RegexFilter, SystemPromptInjector, TokenLimiter,
    UnicodeNormalizer,
};
use processors_runtime::prelude::*;

/// A processor of one's own, named `name`, that adds its name to the input's text.
fn mine(name: &'static str) -> impl InputProcessor + OutputProcessor {
    struct Mine(&'static str);
    impl Processor for Mine {
        type State = ();
        const HOOKS: Hooks = Hooks::INPUT.with(Hooks::OUTPUT_RESULT);
        fn id(&self) -> &str {
            self.0
        }
        async fn process_input(
            &self,
            args: InputArgs<'_, ()>,
        ) -> Result<InputOutcome, ProcessorError> {
            let mut ms = args.messages;
            let last = ms.last_mut().expect("an input");
            let t = format!("{} {}", last.text(), self.0);
            last.set_text(t);
            Ok(InputOutcome::Messages(ms))
        }
    }
    impl InputProcessor for Mine {}
    impl OutputProcessor for Mine {}
    Mine(name)
}

fn ids(p: &DynPipeline) -> Vec<String> {
    p.processors()
        .iter()
        .map(|p| p.dyn_id().to_owned())
        .collect()
}

fn secrets() -> RegexFilter {
    RegexFilter::builder()
        .preset(Preset::Secrets)
        .build()
        .unwrap()
}

#[test]
fn bi_93_built_ins_run_in_their_stages_whatever_order_they_were_given_in() {
    let list = Ordered::input()
        .with(TokenLimiter::new(8_000).unwrap())
        .with(secrets())
        .with(SystemPromptInjector::new("Be brief."))
        .with(DirectoryContext::builder(".").build().unwrap())
        .with(UnicodeNormalizer::new())
        .build()
        .unwrap();
    assert_eq!(
        ids(&list),
        [
            "unicode-normalizer",
            // One stage: the order they were given in.
            "system-prompt-injector",
            "directory-context",
            "regex-filter",
            "token-limiter",
        ]
    );
}

#[test]
fn bi_93_processors_of_ones_own_go_just_before_or_after_their_built_in() {
    let list = Ordered::input()
        .with(secrets())
        .with(UnicodeNormalizer::new())
        .with(TokenLimiter::new(8_000).unwrap())
        .before::<RegexFilter>(mine("b1"))
        .after::<UnicodeNormalizer>(mine("a1"))
        .before::<RegexFilter>(mine("b2"))
        .after::<UnicodeNormalizer>(mine("a2"))
        .after::<TokenLimiter>(mine("last"))
        .build()
        .unwrap();
    assert_eq!(
        ids(&list),
        [
            "unicode-normalizer",
            "a1",
            "a2",
            "b1",
            "b2",
            "regex-filter",
            "token-limiter",
            "last"
        ]
    );
    // And the agent runs them in that order.
    let model = ScriptedModel::new([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input_pipeline(list)
        .build()
        .unwrap();
    block_on(agent.generate("hi")).unwrap();
    assert_eq!(
        model.requests()[0].prompt.last().unwrap().text(),
        "hi a1 a2 b1 b2 last"
    );
}

#[test]
fn bi_93_a_processor_placed_around_a_built_in_not_in_the_list_is_refused() {
    let Err(error) = Ordered::input()
        .with(UnicodeNormalizer::new())
        .before::<RegexFilter>(mine("guard"))
        .build()
    else {
        panic!("placed around a built-in not in the list");
    };
    assert_eq!(
        error,
        NotInList {
            processor: "guard".into(),
            side: "before",
            anchor: "RegexFilter"
        }
    );
    assert_eq!(
        error.to_string(),
        "`guard` is placed before `RegexFilter`, which is not in the list; add `RegexFilter` with `with`, or place `guard` around a built-in that is"
    );
}

#[test]
fn bi_93_a_recorder_is_first_in_input_and_last_in_output() {
    let recorder = ChatRecording::new(Recordings::new());
    let input = Ordered::input()
        .with(UnicodeNormalizer::new())
        .with(recorder.clone())
        .build()
        .unwrap();
    assert_eq!(ids(&input), ["chat-recording", "unicode-normalizer"]);
    let output = Ordered::output()
        .with(recorder)
        .with(BatchParts::builder().build().unwrap())
        .with(secrets())
        .build()
        .unwrap();
    assert_eq!(
        ids(&output),
        ["regex-filter", "batch-parts", "chat-recording"]
    );
}

#[test]
fn bi_93_a_shared_built_in_has_its_place_and_a_placed_built_in_is_an_anchor() {
    let normalizer = std::sync::Arc::new(UnicodeNormalizer::new());
    let list = Ordered::input()
        .with(secrets())
        .with(normalizer)
        .after::<RegexFilter>(TokenLimiter::new(100).unwrap())
        .after::<TokenLimiter>(mine("m"))
        .build()
        .unwrap();
    assert_eq!(
        ids(&list),
        ["unicode-normalizer", "regex-filter", "token-limiter", "m"]
    );
}
