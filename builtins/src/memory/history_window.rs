//! [`HistoryWindow`]: sends the model only the recent part of a long conversation.

use processors_macros::processor;
use processors_runtime::message::{Message, Role};
use processors_runtime::model::ModelRequest;
use processors_runtime::processor::LlmRequestAction;

/// How the window counts a message's size when it has a token budget.
pub type Counter = fn(&Message) -> usize;

/// An estimate of a message's tokens: about four characters a token, plus a few for the
/// message's framing. A tokenizer-exact count belongs to `TokenLimiter`; a window only needs to
/// stay clear of the limit.
pub fn estimate_tokens(message: &Message) -> usize {
    let chars: usize = message
        .content
        .parts
        .iter()
        .map(|p| serde_json::to_string(p).map_or(0, |s| s.chars().count()))
        .sum();
    chars.div_ceil(4) + 4
}

/// Sends the model only the recent part of the conversation: the last turns (a turn starts at
/// a user message), and/or as many recent messages as fit a token budget. System messages are
/// always sent, the newest user message and what follows it always kept, and the window never
/// begins with a tool result whose call fell out of it (providers refuse such prompts).
///
/// It rewrites the prompt of each model call only (`process_llm_request`): the message list,
/// memory and later processors still see the whole conversation.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::HistoryWindow;
/// use processors::prelude::*;
///
/// let model = ScriptedModel::new([Turn::text("3")]);
/// let agent = Agent::builder()
///     .model(model.clone())
///     .input(HistoryWindow::last_turns(1))
///     .build()
///     .unwrap();
/// let conversation = vec![
///     Message::user("1"), Message::assistant("one"),
///     Message::user("2"), Message::assistant("two"),
///     Message::user("and then?"),
/// ];
/// agent.generate(conversation).await.unwrap();
/// let sent: Vec<String> = model.requests()[0].prompt.iter().map(Message::text).collect();
/// assert_eq!(sent, ["and then?"]);
/// # });
/// ```
#[derive(Debug, Clone, Copy)]
pub struct HistoryWindow {
    last_turns: Option<usize>,
    max_tokens: Option<usize>,
    count: Counter,
}

impl HistoryWindow {
    /// Keeps the last `n` turns (at least the newest one).
    pub fn last_turns(n: usize) -> Self {
        HistoryWindow {
            last_turns: Some(n.max(1)),
            max_tokens: None,
            count: estimate_tokens,
        }
    }

    /// Keeps as many recent messages as fit `tokens` (system messages counted), always keeping
    /// the newest user message and what follows it.
    pub fn max_tokens(tokens: usize) -> Self {
        HistoryWindow {
            last_turns: None,
            max_tokens: Some(tokens),
            count: estimate_tokens,
        }
    }

    /// Also limits the window to `tokens`.
    pub fn and_max_tokens(mut self, tokens: usize) -> Self {
        self.max_tokens = Some(tokens);
        self
    }

    /// Counts tokens with `count` instead of the estimate.
    pub fn counting_with(mut self, count: Counter) -> Self {
        self.count = count;
        self
    }

    /// The window over a prompt: system messages, then the kept conversation.
    pub fn apply(&self, prompt: &[Message]) -> Vec<Message> {
        let (system, rest): (Vec<&Message>, Vec<&Message>) =
            prompt.iter().partition(|m| m.role == Role::System);
        let users: Vec<usize> = rest
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::User)
            .map(|(i, _)| i)
            .collect();
        // The newest user message and what follows it are always sent.
        let newest = users.last().copied().unwrap_or(0);
        let mut start = 0;
        if let Some(n) = self.last_turns
            && users.len() > n
        {
            start = users[users.len() - n];
        }
        if let Some(budget) = self.max_tokens {
            let fixed: usize = system.iter().map(|m| (self.count)(m)).sum();
            let mut used: usize =
                fixed + rest[start..].iter().map(|m| (self.count)(m)).sum::<usize>();
            while used > budget && start < newest {
                used -= (self.count)(rest[start]);
                start += 1;
            }
        }
        // Never begin with a tool result whose call is not sent.
        while start < newest && rest[start].role == Role::Tool {
            start += 1;
        }
        system
            .into_iter()
            .chain(rest[start..].iter().copied())
            .cloned()
            .collect()
    }
}

#[processor(crate = processors_runtime, id = "history-window")]
impl HistoryWindow {
    fn process_llm_request(&self, request: &ModelRequest) -> LlmRequestAction {
        let window = self.apply(&request.prompt);
        match window.len() == request.prompt.len() {
            true => LlmRequestAction::Continue,
            false => LlmRequestAction::Prompt(window),
        }
    }
}
