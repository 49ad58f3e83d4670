//! Each built-in goes in the lists it has hooks for: the compiler places them in `agent!` and
//! `Agent::builder()`, and lists built at run time are checked by `build()`.

use processors_builtins::{BatchParts, RegexFilter, SystemPromptScrubber, UnicodeNormalizer};
use processors_runtime::agent::AgentBuilder;
use processors_runtime::prelude::*;
use processors_runtime::processor::boxed;

const fn hooks<P: Processor>() -> Hooks {
    P::HOOKS
}

#[test]
fn each_built_in_declares_the_hooks_it_implements() {
    let filter = hooks::<RegexFilter>();
    assert!(filter.contains(Hook::Input));
    assert!(filter.contains(Hook::OutputStream) && filter.contains(Hook::OutputResult));
    assert!(hooks::<UnicodeNormalizer>().is_input() && !hooks::<UnicodeNormalizer>().is_output());
    let scrubber = hooks::<SystemPromptScrubber>();
    assert!(scrubber.is_output() && !scrubber.is_input());
    assert!(hooks::<BatchParts>().is_output() && !hooks::<BatchParts>().is_input());
    // Stream hooks that never wait take the runner's path without a future.
    const {
        assert!(<RegexFilter as Processor>::SYNC_HOOKS.contains(Hook::OutputStream));
        assert!(<SystemPromptScrubber as Processor>::SYNC_HOOKS.contains(Hook::OutputStream));
        assert!(<BatchParts as Processor>::SYNC_HOOKS.contains(Hook::OutputStream));
    }
}

fn builder() -> AgentBuilder {
    Agent::builder().model(ScriptedModel::new([Turn::text("ok")]))
}

#[test]
fn a_built_in_in_a_list_it_has_no_hook_for_is_refused_by_build() {
    let misplaced = |b: AgentBuilder| match b.build() {
        Err(e) => e.to_string(),
        Ok(_) => String::new(),
    };
    let e = misplaced(builder().output_ref(boxed(UnicodeNormalizer::new())));
    assert!(e.contains("unicode-normalizer"), "{e}");
    let e = misplaced(builder().input_ref(boxed(BatchParts::new())));
    assert!(e.contains("batch-parts"), "{e}");
    let e = misplaced(builder().input_ref(boxed(SystemPromptScrubber::new())));
    assert!(e.contains("system-prompt-scrubber"), "{e}");
    let filter = RegexFilter::builder()
        .preset(processors_builtins::regex_filter::Preset::Pii)
        .build()
        .expect("builds");
    assert!(
        builder()
            .input(filter.clone())
            .output(filter)
            .build()
            .is_ok()
    );
}
