//! [`SystemPromptInjector`]: adds system instructions to every request.

use processors_macros::processor;
use processors_runtime::context::RequestContext;
use processors_runtime::message::Message;
use processors_runtime::processor::InputOutcome;
use processors_runtime::processor::extract::SystemMessages;
use std::sync::Arc;

type Build = Arc<dyn Fn(&RequestContext) -> Option<String> + Send + Sync>;

/// Adds a system message to every request: fixed text, or text built from the request's
/// context (a tenant's policy, the user's locale). It joins the agent's instructions, so it
/// is sent at every step of the run, and, like them, never saved to memory.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::SystemPromptInjector;
/// use processors::prelude::*;
///
/// let model = ScriptedModel::new([Turn::text("Bonjour")]);
/// let agent = Agent::builder()
///     .instructions("You are a helpful assistant.")
///     .model(model.clone())
///     .input(SystemPromptInjector::from_context(|cx| {
///         let locale = cx.value("locale")?.as_str()?;
///         Some(format!("Answer in the user's language ({locale})."))
///     }))
///     .build()
///     .unwrap();
/// let cx = RequestContext::new().with_value("locale", serde_json::json!("fr"));
/// agent.generate_with("Hello", GenerateOptions::new().request_context(cx)).await.unwrap();
/// let system: Vec<String> = model.requests()[0]
///     .prompt
///     .iter()
///     .filter(|m| m.role == Role::System)
///     .map(Message::text)
///     .collect();
/// assert_eq!(system, ["You are a helpful assistant.", "Answer in the user's language (fr)."]);
/// # });
/// ```
#[derive(Clone)]
pub struct SystemPromptInjector {
    build: Build,
    first: bool,
}

impl std::fmt::Debug for SystemPromptInjector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemPromptInjector")
            .field("first", &self.first)
            .finish_non_exhaustive()
    }
}

impl SystemPromptInjector {
    /// Adds `text` after the agent's instructions.
    pub fn new(text: impl Into<String>) -> Self {
        let text = text.into();
        Self::from_context(move |_| Some(text.clone()))
    }

    /// Adds what `build` makes of the request's context (nothing when it returns `None`).
    pub fn from_context(
        build: impl Fn(&RequestContext) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        SystemPromptInjector {
            build: Arc::new(build),
            first: false,
        }
    }

    /// Puts the message before the agent's instructions instead of after them.
    pub fn first(mut self) -> Self {
        self.first = true;
        self
    }
}

#[processor(crate = processors_runtime, id = "system-prompt-injector")]
impl SystemPromptInjector {
    fn process_input(
        &self,
        messages: Vec<Message>,
        system: SystemMessages,
        cx: &RequestContext,
    ) -> InputOutcome {
        let Some(text) = (self.build)(cx).filter(|t| !t.trim().is_empty()) else {
            return InputOutcome::Unchanged;
        };
        let mut system = system.0;
        let message = Message::system(text);
        match self.first {
            true => system.insert(0, message),
            false => system.push(message),
        }
        InputOutcome::MessagesAndSystem { messages, system }
    }
}
