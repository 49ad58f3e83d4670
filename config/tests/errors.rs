//! What a user sees for each mistake of a file: the exact messages, with their places.

use processors_config::{Loader, Registry};

/// The report of a file that must not load (no provider key in the environment).
fn report(text: &str) -> String {
    match Loader::new().env(|_| None).agent_str("agent.toml", text) {
        Ok(_) => panic!("the file loaded:\n{text}"),
        Err(e) => e.to_string(),
    }
}

const MODEL: &str = "model = { scripted = [\"Hi.\"] }\n";

fn with_model(rest: &str) -> String {
    report(&format!("{MODEL}{rest}"))
}

#[test]
fn a_processor_in_a_list_it_has_no_hook_for_is_told_where_it_belongs() {
    assert_eq!(
        with_model("input = [\"batch-parts\"]\n"),
        "agent.toml:2:10: `batch-parts` is in `input` but has no input hook (its hooks: {\"process_output_stream\"}); it belongs in `output`"
    );
    assert_eq!(
        with_model("error = [\"unicode-normalizer\"]\n"),
        "agent.toml:2:10: `unicode-normalizer` is in `error` but has no error hook (its hooks: {\"process_input\"}); it belongs in `input`"
    );
}

#[test]
fn an_unknown_key_suggests_the_closest_and_lists_the_valid_ones() {
    assert_eq!(
        with_model("ouput = [\"batch-parts\"]\n"),
        "agent.toml:2:1: unknown key `ouput` (did you mean `output`?); valid keys: name, instructions, model, memory, input, output, error, max_processor_retries, max_steps"
    );
    assert_eq!(
        with_model("max_retries = 2\n"),
        "agent.toml:2:1: unknown key `max_retries` (did you mean `max_processor_retries`?); valid keys: name, instructions, model, memory, input, output, error, max_processor_retries, max_steps"
    );
}

#[test]
fn an_unknown_processor_suggests_the_closest_or_lists_them_all() {
    assert_eq!(
        with_model("input = [\"regex-filtr\"]\n"),
        "agent.toml:2:10: unknown processor `regex-filtr` (did you mean `regex-filter`?)"
    );
    let names: Vec<String> = Registry::new().names().map(str::to_owned).collect();
    assert_eq!(
        with_model("input = [{ processor = \"spell-checker\" }]\n"),
        format!(
            "agent.toml:2:24: unknown processor `spell-checker`; known processors: {}",
            names.join(", ")
        )
    );
}

#[test]
fn an_unknown_option_suggests_the_closest_and_lists_the_options() {
    assert_eq!(
        with_model("output = [{ processor = \"batch-parts\", batch_sise = 4 }]\n"),
        "agent.toml:2:40: `batch-parts` has no option `batch_sise` (did you mean `batch_size`?); its options: batch_size, max_chars, max_wait_ms, emit_on_non_text"
    );
}

#[test]
fn a_bad_value_is_reported_at_the_value_with_the_choices() {
    assert_eq!(
        with_model("output = [{ processor = \"regex-filter\", strategy = \"redcat\" }]\n"),
        "agent.toml:2:52: `regex-filter`: unknown variant `redcat` (did you mean `redact`?), expected one of `block`, `warn`, `redact`, `placeholder`, `mask`, `mask-all`, `preserve-format`, `hash`, `remove`"
    );
    assert_eq!(
        with_model("max_steps = -1\n"),
        "agent.toml:2:13: `max_steps`: invalid value: integer `-1`, expected u32"
    );
}

#[test]
fn a_value_the_builder_refuses_is_reported_at_its_option() {
    assert_eq!(
        with_model("input = [{ processor = \"token-limiter\", limit = 0 }]\n"),
        "agent.toml:2:49: `token-limiter`: `limit` is 0: no prompt or answer fits in it; give a limit of at least 1"
    );
}

#[test]
fn a_missing_option_is_asked_for() {
    assert_eq!(
        with_model("input = [\"token-limiter\"]\n"),
        "agent.toml:2:10: `token-limiter`: the option `limit` is required; add it, like `limit = ...`"
    );
}

#[test]
fn two_processors_with_one_id_in_a_list_are_refused() {
    assert_eq!(
        with_model("output = [\"batch-parts\", \"batch-parts\"]\n"),
        "agent.toml:2:26: `batch-parts` has the id `batch-parts`, as the processor at 2:11 before it in `output`: the two would share one state; keep one, or merge their options into one entry"
    );
}

#[test]
fn misplaced_memory_is_refused() {
    let memory = "memory = { store = \"in-memory\" }\n";
    assert_eq!(
        with_model("input = [\"memory\"]\n"),
        "agent.toml:2:10: `memory` in `input` refers to the agent's memory, but there is no `memory` key; add one, like `memory = { store = \"in-memory\" }`"
    );
    assert_eq!(
        with_model(&format!("{memory}error = [\"memory\"]\n")),
        "agent.toml:3:10: memory has no `process_api_error` hook; place it in `input` or `output`"
    );
    assert_eq!(
        with_model(&format!("{memory}input = [\"memory\", \"memory\"]\n")),
        "agent.toml:3:20: `memory` is twice in `input`; keep one"
    );
    assert_eq!(
        with_model(&format!("{memory}output = [\"memory\", \"batch-parts\"]\n")),
        "agent.toml:3:21: `batch-parts` comes after `memory` in `output`: it would change what streams but not what is saved; move `memory` to the end of the list"
    );
}

#[test]
fn memory_stores_are_checked() {
    assert_eq!(
        with_model("memory = { store = \"sqlit\" }\n"),
        "agent.toml:2:20: `memory`: unknown variant `sqlit` (did you mean `sqlite`?), expected `in-memory` or `sqlite`"
    );
    assert_eq!(
        with_model("memory = { store = \"in-memory\", path = \"a.db\" }\n"),
        "agent.toml:2:40: an in-memory store has no `path`; remove it, or use `store = \"sqlite\"` to keep the memory in that file"
    );
    #[cfg(feature = "sqlite")]
    assert_eq!(
        with_model("memory = { store = \"sqlite\" }\n"),
        "agent.toml:2:10: `store = \"sqlite\"` needs a `path` to its file, like `path = \"agent.db\"`"
    );
}

#[test]
fn models_are_checked_and_keys_come_from_the_environment() {
    assert_eq!(
        report("model = \"openai/gpt-4o-mini\"\n"),
        "agent.toml:1:9: no API key for the `openai` provider: set the OPENAI_API_KEY environment variable or pass `.api_key(...)` to the builder"
    );
    assert_eq!(
        report("model = \"gpt-4o\"\n"),
        "agent.toml:1:9: `gpt-4o` is not a model id; write `provider/model`, like `openai/gpt-4o-mini`, or a scripted model, like `{ scripted = [\"Hello!\"] }`"
    );
    assert_eq!(
        report("model = \"mistery/m\"\n"),
        "agent.toml:1:9: unknown provider `mistery` in `mistery/m`; known providers: openai, anthropic, ollama, lmstudio, vllm, llamacpp"
    );
    assert_eq!(
        report("model = { scripted = [\"Hi.\"], api_key = \"sk-1\" }\n"),
        "agent.toml:1:31: `model`: unknown field `api_key`, expected `scripted` or `cycle`"
    );
}

#[test]
fn an_agent_without_a_model_is_refused() {
    assert_eq!(
        report("name = \"support\"\n"),
        "agent.toml:1:1: the agent has no model; add one, like `model = \"openai/gpt-4o-mini\"` (its key read from the environment) or `model = { scripted = [\"Hello!\"] }`"
    );
}

#[test]
fn retry_and_step_limits_that_cannot_apply_are_refused() {
    assert_eq!(
        with_model("max_processor_retries = 2\ninput = [\"unicode-normalizer\"]\n"),
        "agent.toml:2:25: `max_processor_retries` is set, but no processor of this agent can ask for a retry (none has `process_input_step`, `process_output_step`, `process_tool_call` or `process_api_error`); remove the key or add such a processor"
    );
    assert_eq!(
        with_model("max_processor_retries = 0\nerror = [\"prefill-error-handler\"]\n"),
        "agent.toml:2:25: with `max_processor_retries = 0` the error processors could never retry; remove the key (error processors then get 3 retries) or raise it"
    );
    assert_eq!(
        with_model("max_steps = 0\n"),
        "agent.toml:2:13: `max_steps` is 0: a run needs at least one step; remove the key (5 steps) or raise it"
    );
}

#[test]
fn list_shapes_are_explained() {
    assert_eq!(
        with_model("input = \"batch-parts\"\n"),
        "agent.toml:2:9: `input` takes a list of processors, like `input = [\"batch-parts\", { processor = \"regex-filter\", presets = [\"pii\"] }]`"
    );
    assert_eq!(
        with_model("input = [3]\n"),
        "agent.toml:2:10: an entry of `input` is a processor's name, or a table with `processor = \"...\"` and its options, not integer"
    );
    assert_eq!(
        with_model("[[input]]\nlimit = 3\n"),
        "agent.toml:2:1: this entry of `input` names no processor; add `processor = \"...\"` with its options"
    );
}

#[test]
fn syntax_errors_are_reported_with_their_place() {
    assert_eq!(
        report("model = [\n"),
        "agent.toml:1:10: unclosed array, expected `]`"
    );
}

#[test]
fn a_judge_is_named_as_a_model_is() {
    assert_eq!(
        with_model("input = [{ processor = \"moderation\", judge = \"gpt\" }]\n"),
        "agent.toml:2:46: `moderation`: `gpt` is not a model id; write `provider/model`, like `openai/gpt-4o-mini`, or a scripted model, like `{ scripted = [\"Hello!\"] }`"
    );
}

#[test]
fn a_processor_that_needs_memory_says_so() {
    assert_eq!(
        with_model("input = [\"working-memory\"]\n"),
        "agent.toml:2:10: `working-memory`: it keeps its data in the agent's memory store, and the agent has none; give the agent memory, like `memory = { store = \"in-memory\" }`"
    );
}

#[test]
fn a_file_with_several_mistakes_reports_them_all_in_file_order() {
    let text = "\
name = \"support\"
modle = \"openai/gpt-4o-mini\"
input = [\"batch-parts\", { processor = \"token-limiter\", limit = 0 }]

[[output]]
processor = \"regex-filter\"
presets = [\"pi\"]

[[output]]
processor = \"regex-filter\"
";
    assert_eq!(
        report(text),
        "\
agent.toml:1:1: the agent has no model; add one, like `model = \"openai/gpt-4o-mini\"` (its key read from the environment) or `model = { scripted = [\"Hello!\"] }`
agent.toml:2:1: unknown key `modle` (did you mean `model`?); valid keys: name, instructions, model, memory, input, output, error, max_processor_retries, max_steps
agent.toml:3:10: `batch-parts` is in `input` but has no input hook (its hooks: {\"process_output_stream\"}); it belongs in `output`
agent.toml:3:64: `token-limiter`: `limit` is 0: no prompt or answer fits in it; give a limit of at least 1
agent.toml:7:12: `regex-filter`: unknown variant `pi` (did you mean `pii`?), expected one of `pii`, `secrets`, `urls`
agent.toml:9:1: `regex-filter`: it has no rules; add a preset, like `presets = [\"pii\"]`, or a rule, like `rules = [{ name = \"ticket\", pattern = \"TCK-[0-9]+\" }]`"
    );
}

#[test]
fn a_file_of_lists_holds_lists_alone() {
    let error = Loader::new()
        .lists_str("lists.toml", "model = \"x\"\ninput = [\"memory\"]\n")
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "\
lists.toml:1:1: `model` configures an agent; a file of lists holds only `input`, `output` and `error` (load it as an agent, or set `model` in code)
lists.toml:2:10: a file of lists has no memory to place in `input`; give the agent memory in code (`.memory(...)`): it loads first in `input` and saves last in `output` by itself"
    );
}

#[test]
fn a_missing_file_names_its_path() {
    let error = Loader::new().agent("no/such/agent.toml").err().unwrap();
    assert!(
        error
            .to_string()
            .starts_with("cannot read no/such/agent.toml: "),
        "{error}"
    );
    assert!(error.diagnostics().is_empty());
}

#[test]
fn diagnostics_carry_file_line_and_column() {
    let error = Loader::new()
        .agent_str("x.toml", "model = { scripted = [] }\n\n  ouput = []\n")
        .err()
        .unwrap();
    let d = &error.diagnostics()[0];
    assert_eq!((d.file.as_str(), d.line, d.column), ("x.toml", 3, 3));
}

#[test]
fn a_response_cache_is_built_by_its_first_entry_alone() {
    assert_eq!(
        with_model(
            "input = [{ processor = \"response-cache\", ttl_ms = 1000 }]\noutput = [{ processor = \"response-cache\", ttl_ms = 2000 }]\n"
        ),
        "agent.toml:3:11: `response-cache`: `response-cache` is one processor across the lists, built with the options of its first entry; give its options there only, or the same here"
    );
    assert_eq!(
        with_model("input = [{ processor = \"response-cache\", max_entries = 0 }]\n"),
        "agent.toml:2:56: `response-cache`: `max_entries` is 0: the cache could keep nothing; give at least 1"
    );
}

#[test]
fn among_names_languages_the_identifier_knows_and_needs_it_to_run() {
    let language = |options: &str| {
        with_model(&format!(
            "input = [{{ processor = \"language-detector\", targets = [\"en\"], {options} }}]\n"
        ))
    };
    let unknown = language("judge = \"local/language-identifier\", among = [\"en\", \"xh\"]");
    assert!(
        unknown.ends_with("`xh` is not a language the identifier tells apart the processor knows; give an ISO 639-1 code or an English name of one of whatlang's 69 languages"),
        "{unknown}"
    );
    let unused = language("judge = { scripted = [] }, among = [\"en\"]");
    assert!(
        unused.ends_with("`among` chooses the languages of the local check `language-identifier`, which neither `judge` nor `first` runs here"),
        "{unused}"
    );
}

#[test]
fn classifier_thresholds_name_a_head_of_a_classifier_that_runs() {
    let moderation = |options: &str| {
        with_model(&format!(
            "input = [{{ processor = \"moderation\", {options} }}]\n"
        ))
    };
    let unknown = moderation(
        "judge = \"local/toxicity-classifier\", classifier_thresholds = { rudeness = 0.3 }",
    );
    // At the option's value (column 99), naming the heads there are.
    assert_eq!(
        unknown,
        "agent.toml:2:99: `moderation`: `rudeness` is not a head of the model the processor knows; its heads are `harassment`, `hate`, `violence`, `sexual`, `self-harm`"
    );
    let out_of_range =
        moderation("judge = \"local/toxicity-classifier\", classifier_thresholds = { hate = 1.5 }");
    assert!(
        out_of_range.contains("over 0 and at most 1"),
        "{out_of_range}"
    );
    let unused =
        moderation("judge = \"local/toxicity-words\", classifier_thresholds = { hate = 0.5 }");
    assert!(
        unused.ends_with("`classifier_thresholds` sets the heads' thresholds of the local check `injection-classifier` or `toxicity-classifier`, which neither `judge` nor `first` runs here"),
        "{unused}"
    );
}

#[test]
fn a_local_check_must_exist_and_fit_its_detector() {
    assert_eq!(
        with_model(
            "input = [{ processor = \"prompt-injection-detector\", judge = \"local/injection-heuristic\" }]\n"
        ),
        "agent.toml:2:61: `prompt-injection-detector`: there is no local check `injection-heuristic`; the local checks are: `injection-classifier`, `injection-heuristics`, `language-identifier`, `toxicity-classifier`, `toxicity-words`, `onnx`"
    );
    assert_eq!(
        with_model(
            "input = [{ processor = \"moderation\", judge = \"local/injection-heuristics\" }]\n"
        ),
        "agent.toml:2:46: `moderation`: the local check `injection-heuristics` gives the verdicts of `prompt-injection-detector`, not of `moderation`"
    );
    assert_eq!(
        with_model(
            "input = [{ processor = \"prompt-injection-detector\", judge = \"local/injection-heuristics\", first = \"injection-heuristics\" }]\n"
        ),
        "agent.toml:2:99: `prompt-injection-detector`: the judge is a local check already; `first` puts a local check before a judge that is a model"
    );
}

#[test]
fn a_circuit_breaker_needs_a_failure_to_open() {
    assert_eq!(
        with_model(
            "input = [{ processor = \"moderation\", judge = { scripted = [] }, circuit_breaker = { failures = 0, window_ms = 60000, cool_down_ms = 30000 } }]\n"
        ),
        "agent.toml:2:83: `moderation`: `failures` is 0: the breaker would open before any call; give at least 1"
    );
}

#[test]
fn shadow_is_a_boolean_the_memory_and_a_shared_processor_cannot_disagree_on() {
    assert_eq!(
        with_model("input = [{ processor = \"unicode-normalizer\", shadow = \"yes\" }]\n"),
        "agent.toml:2:55: `shadow` is `true` (the processor's decisions are recorded, not applied) or `false`, not string"
    );
    assert_eq!(
        with_model(
            "memory = { store = \"in-memory\" }\ninput = [{ processor = \"memory\", shadow = true }]\n"
        ),
        "agent.toml:3:10: `memory` cannot run in shadow: it loads and saves the conversation, which is not a decision to record"
    );
    assert_eq!(
        with_model(
            "input = [{ processor = \"response-cache\", shadow = true }]\noutput = [\"response-cache\"]\n"
        ),
        "agent.toml:3:11: `response-cache`: `response-cache` is one processor across the lists, in shadow or not as its first entry says; give `shadow` the same in each entry"
    );
}

#[test]
fn an_onnx_model_must_be_run_by_the_judge_or_first_and_the_feature_must_be_on() {
    assert_eq!(
        with_model(
            "input = [{ processor = \"moderation\", judge = { scripted = [] }, onnx = { path = \"m.onnx\" } }]\n"
        ),
        "agent.toml:2:72: `moderation`: the `onnx` model judges nothing here; run it alone with `judge = \"local/onnx\"`, or before the judge's model with `first = \"onnx\"`"
    );
    assert_eq!(
        with_model("input = [{ processor = \"moderation\", judge = \"local/onnx\" }]\n"),
        "agent.toml:2:46: `moderation`: the local check `onnx` runs the model of the `onnx` option, and there is none; add `onnx = { path = \"model.onnx\" }`"
    );
    assert_eq!(
        with_model(
            "input = [{ processor = \"language-detector\", judge = \"local/onnx\", targets = [\"en\"] }]\n"
        ),
        "agent.toml:2:53: `language-detector`: the local check `onnx` gives categories' scores, which `language-detector` does not read; it judges for `moderation` and `prompt-injection-detector`"
    );
    #[cfg(not(feature = "onnx"))]
    assert_eq!(
        with_model(
            "input = [{ processor = \"moderation\", judge = \"local/onnx\", onnx = { path = \"m.onnx\" } }]\n"
        ),
        "agent.toml:2:67: `moderation`: a classifier model needs the feature `onnx` of `processors` (off by default); turn it on, or judge with a model"
    );
}

#[test]
fn the_history_and_recording_processors_refuse_what_cannot_work() {
    let files = [
        "output = [{ processor = \"chat-recording\" }]\n",
        "output = [{ processor = \"chat-recording\", path = \"runs.jsonl\", memory = true }]\n",
        "output = [{ processor = \"chat-recording\", memory = true }]\n",
        "output = [{ processor = \"chat-recording\", path = \".\" }]\n",
        "input = [{ processor = \"chat-compression\", model = { scripted = [] }, context_window = 8000, stub_results_over = 10 }]\n",
        "input = [{ processor = \"chat-compression\", model = { scripted = [] }, context_window = 8000, timeout_ms = 0 }]\n",
    ];
    let reports: Vec<String> = files.iter().map(|f| with_model(f)).collect();
    assert_eq!(
        reports,
        [
            "agent.toml:2:11: `chat-recording`: it needs a place to record to: `path` (a JSON-lines file) or `memory = true` (the agent's memory store)",
            "agent.toml:2:11: `chat-recording`: it records to one place: give `path` (a JSON-lines file) or `memory = true` (the agent's memory store), not both",
            "agent.toml:2:11: `chat-recording`: it keeps its data in the agent's memory store, and the agent has none; give the agent memory, like `memory = { store = \"in-memory\" }`",
            "agent.toml:2:50: `chat-recording`: . is a folder; name the file the recordings go to",
            "agent.toml:2:114: `chat-compression`: `chat-compression` summarises without stubbing tool results; `conversation-compactor` stubs them first",
            "agent.toml:2:107: `chat-compression`: `timeout` is 0: no summary could arrive; give the summarising call time to answer",
        ]
    );
}

/// A `main` that returns the error with `?` prints its `Debug`: the report, one mistake a line,
/// not the structs it is made of (those are `{:#?}`).
#[test]
fn a_main_returning_the_error_prints_the_report() {
    use processors_config::FromConfig;
    use processors_runtime::agent::Agent;
    fn main_like() -> Result<Agent, Box<dyn std::error::Error>> {
        Ok(Agent::from_config_str(
            "model = { scripted = [\"Hi.\"] }\ninput = [\"regex-filtr\"]\nmax_steps = 0\n",
        )?)
    }
    let error = main_like().err().expect("the file has mistakes");
    let debug = format!("{error:?}");
    assert_eq!(debug, error.to_string());
    assert!(
        debug.starts_with("<string>:2:10: unknown processor `regex-filtr`"),
        "{debug}"
    );
    assert_eq!(debug.lines().count(), 2, "{debug}");
    assert!(!debug.contains("Diagnostic {"), "{debug}");
    let missing = Agent::from_config("no/such/agent.toml").err().unwrap();
    assert!(
        format!("{missing:?}").starts_with("cannot read no/such/agent.toml: "),
        "{missing:?}"
    );
    let structured = format!(
        "{:#?}",
        Agent::from_config("no/such/agent.toml").err().unwrap()
    );
    assert!(structured.starts_with("Read {"), "{structured}");
}
