//! A step's answer and how a step ends: the answer added to the list, a rejected step rolled
//! back with feedback for the next attempt, and how a run that stops early ends.

use super::{Pause, Pausing, Run, Stop};
use crate::agent::approval::{ApprovalError, PAUSED_RUN_VERSION, PausedRun};
use crate::agent::{AgentError, GenerateResult};
use crate::chunk::{ChunkKind, FinishReason, StepRetry, Usage};
use crate::message::{
    Message, MessageList, MessageSource, Part, Role, Text, ToolCall, ToolResult, concat_texts,
};
use crate::processor::{Pipeline, ViolationKind};
use crate::runner::stream::{StepAcc, StreamDriver};
use crate::step::StepResult;
use crate::tripwire::TripWire;

/// The tag of retry feedback system messages.
pub const FEEDBACK_TAG: &str = "processor-feedback";

/// The feedback the next attempt of a rejected step carries.
fn feedback_text(reason: &str) -> String {
    format!(
        "[Processor Feedback] Your previous response was not accepted: {reason}. Please try again with the feedback in mind."
    )
}

impl Run {
    /// Adds the step's answer to the list: reasoning, text, data (carried, then the step's)
    /// and tool calls as one assistant message. Returns its id when `by_id` (none when the
    /// step produced nothing).
    pub(super) fn add_answer(&mut self, acc: &mut StepAcc, by_id: bool) -> Vec<String> {
        let mut parts = Vec::with_capacity(
            usize::from(!acc.reasoning.is_empty())
                + usize::from(!acc.text.is_empty())
                + self.carried.len()
                + acc.data.len()
                + acc.tool_calls.len(),
        );
        if !acc.reasoning.is_empty() {
            parts.push(Part::Reasoning {
                text: std::mem::take(&mut acc.reasoning).into(),
            });
        }
        // The streamed text becomes the answer's one buffer: the message, the step and the
        // result share it.
        acc.answer = Text::from(std::mem::take(&mut acc.text));
        if !acc.answer.is_empty() {
            parts.push(Part::Text {
                text: acc.answer.clone(),
            });
        }
        parts.extend(self.carried.iter().cloned());
        parts.append(&mut acc.data);
        parts.extend(acc.tool_calls.iter().cloned().map(Part::ToolCall));
        if parts.is_empty() {
            return Vec::new();
        }
        let m = Message::new(Role::Assistant, parts);
        let ids = match by_id {
            true => vec![m.id.clone()],
            false => Vec::new(),
        };
        self.s.list.add(m, MessageSource::Response);
        ids
    }

    /// Whether a retry asked for by `tw` is granted; warns when no limit is set.
    pub(super) fn retry_granted(&mut self, tw: &TripWire, max: Option<u32>) -> bool {
        if !tw.retry {
            return false;
        }
        match max {
            None => {
                let w = format!(
                    "processor `{}` asked for a retry but max_processor_retries is not set; the retry request was treated as an abort",
                    tw.processor_id
                );
                tracing::warn!("{w}");
                self.warnings.push(w);
                false
            }
            Some(max) => self.s.retry_count < max,
        }
    }

    /// Records a rejected step (its `step-finish` says `retry`, when the model was called),
    /// puts the list back as the step found it, and sets up the next attempt with the feedback.
    pub(super) async fn reject<O: Pipeline>(
        &mut self,
        tw: TripWire,
        before: Option<MessageList>,
        driver: &mut StreamDriver<'_, O>,
    ) -> Result<(), Stop> {
        self.s.report.violation(&tw, ViolationKind::Block);
        if let Some(list) = before {
            self.s.list = list;
        }
        let feedback = feedback_text(&tw.reason);
        // One feedback message per attempt: the latest reason.
        self.s.list.clear_tag(FEEDBACK_TAG);
        self.s
            .list
            .add_system(Message::system(feedback.clone()), Some(FEEDBACK_TAG));
        self.s.retry_count += 1;
        let open = self.open.take();
        let usage = open.as_ref().map_or_else(Usage::default, |o| o.usage);
        if let Some(open) = open.filter(|o| o.started) {
            let finish = ChunkKind::StepFinish {
                finish_reason: FinishReason::Retry,
                usage,
                is_continued: true,
                retry: Some(Box::new(StepRetry {
                    reason: tw.reason.clone(),
                    metadata: tw.metadata.clone(),
                    processor_id: tw.processor_id.clone(),
                    retry_count: self.s.retry_count,
                    feedback: Some(feedback),
                })),
            };
            driver
                .emit(&mut self.s, &mut self.out, finish, open.through)
                .await?;
        }
        self.s.steps.push(StepResult {
            step_number: self.next_number(),
            text: Text::new(),
            finish_reason: FinishReason::Retry,
            usage,
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
            tripwire: Some(tw),
        });
        Ok(())
    }

    /// Turns how the run stopped into its result: a trip wire streams one `tripwire` chunk and
    /// saves nothing; a failure streams one `error` chunk.
    pub(super) async fn end(
        mut self,
        stop: Stop,
        pausing: Pausing<'_>,
    ) -> Result<GenerateResult, AgentError> {
        match stop {
            Stop::Paused(pause) => match self.pause(*pause, pausing).await {
                Ok(result) => Ok(result),
                Err(error) => Box::pin(self.end(Stop::Failed(error.into()), pausing)).await,
            },
            Stop::Tripwire(tw) | Stop::Rejected(tw) => {
                // A finish held for the end does not reach the client: the run did not finish.
                self.out.discard_held();
                tracing::info!(
                    processor = %tw.processor_id,
                    reason = %tw.reason,
                    retry = tw.retry,
                    "trip wire: the run ends"
                );
                self.s.report.violation(&tw, ViolationKind::Block);
                self.out.deliver(ChunkKind::Tripwire(tw.clone())).await;
                let shadowed = self.s.shadowed();
                Ok(GenerateResult {
                    run_id: self.run_id,
                    text: Text::new(),
                    steps: self.s.steps,
                    finish_reason: FinishReason::Other,
                    usage: self.usage,
                    processor_usage: self.s.cx.processor_usage(),
                    shadowed,
                    tool_calls: Vec::new(),
                    tool_results: Vec::new(),
                    tripwire: Some(tw),
                    response_messages: Vec::new(),
                    warnings: self.warnings,
                    pending_approvals: Vec::new(),
                })
            }
            Stop::Failed(error) => {
                self.out.discard_held();
                tracing::warn!(error = %error, "the run failed");
                let message = error.to_string();
                self.out.deliver(ChunkKind::Error { message }).await;
                Err(error)
            }
        }
    }
}

impl Run {
    /// Saves the turn's input to memory, so that the turn keeps its place in the thread,
    /// keeps the paused run in the store, then streams a `tool-approval-request` per waiting
    /// call and a `finish` that says `awaiting-approval`. The rest of the turn is saved, with
    /// its input, when the resumed run ends.
    async fn pause(
        &mut self,
        pause: Pause,
        pausing: Pausing<'_>,
    ) -> Result<GenerateResult, ApprovalError> {
        let paused = PausedRun {
            version: PAUSED_RUN_VERSION,
            run_id: self.run_id.clone(),
            agent: pausing.agent.to_owned(),
            thread_id: self.s.cx.thread_id().map(str::to_owned),
            resource_id: self.s.cx.resource_id().map(str::to_owned),
            list: self.s.list.clone(),
            originals: pause.originals,
            steps: self.s.steps.clone(),
            accepted: pause.accepted,
            usage: self.usage,
            warnings: self.warnings.clone(),
            carried: self.carried.clone(),
            step: pause.step,
        };
        let store_error = |source| ApprovalError::Store {
            run_id: self.run_id.clone(),
            source,
        };
        if let Some(memory) = pausing.memory {
            memory
                .save_paused_input(&self.s.cx, &self.s.list)
                .await
                .map_err(store_error)?;
        }
        let timeout = u64::try_from(pausing.timeout.as_millis()).unwrap_or(u64::MAX);
        let expires_at = crate::message::now_millis().saturating_add(timeout);
        pausing
            .store
            .save_paused_run(paused.record(expires_at)?)
            .await
            .map_err(store_error)?;
        let requests = paused.requests();
        tracing::info!(
            waiting = requests.len(),
            "tool calls wait for approval: the run pauses"
        );
        for request in &requests {
            let chunk = ChunkKind::ToolApprovalRequest(Box::new(request.clone()));
            self.out.deliver(chunk).await;
        }
        self.out
            .deliver(ChunkKind::Finish {
                finish_reason: FinishReason::AwaitingApproval,
                usage: self.usage,
            })
            .await;
        let steps = std::mem::take(&mut self.s.steps);
        let (tool_calls, tool_results) = calls_and_results(&steps);
        Ok(GenerateResult {
            run_id: self.run_id.clone(),
            text: crate::runner::hooks::response_text(&self.s.list),
            tool_calls,
            tool_results,
            steps,
            finish_reason: FinishReason::AwaitingApproval,
            usage: self.usage,
            processor_usage: self.s.cx.processor_usage(),
            shadowed: self.s.shadowed(),
            tripwire: None,
            response_messages: self.s.list.response().cloned().collect(),
            warnings: std::mem::take(&mut self.warnings),
            pending_approvals: requests,
        })
    }
}

/// The text of a step's answer, as its messages have it: the streamed text's own buffer unless
/// an output-step processor changed it.
pub(super) fn step_text(list: &MessageList, step_ids: &[String]) -> Text {
    concat_texts(
        step_ids
            .iter()
            .filter_map(|i| list.get(i))
            .filter(|m| m.role == Role::Assistant)
            .flat_map(|m| &m.content.parts),
    )
}

/// Every tool call and result of `steps`, in order, as a run's result lists them.
pub(super) fn calls_and_results(steps: &[StepResult]) -> (Vec<ToolCall>, Vec<ToolResult>) {
    let calls = steps.iter().flat_map(|s| s.tool_calls.iter().cloned());
    let results = steps.iter().flat_map(|s| s.tool_results.iter().cloned());
    (calls.collect(), results.collect())
}

/// Keeps text a stream processor let through only at the end of its step (on `step-finish`)
/// or of the run (on `finish`), as the client received it: appended to the answer it ends
/// (`answered`: the last assistant message is it), or as an answer of its own. Returns
/// `text`, the step's text, with it.
pub(super) fn keep_late_text(
    list: &mut MessageList,
    late: &mut String,
    answered: bool,
    text: Text,
) -> Text {
    let late = std::mem::take(late);
    let part = Part::Text {
        text: Text::from(late.clone()),
    };
    let last = answered
        .then(|| {
            list.response()
                .filter(|m| m.role == Role::Assistant)
                .last()
                .cloned()
        })
        .flatten();
    match last {
        Some(mut m) => {
            m.content.parts.push(part);
            list.replace(m);
        }
        None => list.add(
            Message::new(Role::Assistant, vec![part]),
            MessageSource::Response,
        ),
    }
    Text::from(format!("{text}{late}"))
}

/// Saves data written at the end of the run with the last answer (or as an answer of its own).
pub(super) fn attach_data(list: &mut MessageList, data: Vec<Part>) {
    let last = list
        .response()
        .filter(|m| m.role == Role::Assistant)
        .last()
        .cloned();
    match last {
        Some(mut m) => {
            m.content.parts.extend(data);
            list.replace(m);
        }
        None => list.add(Message::new(Role::Assistant, data), MessageSource::Response),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    fn list_with(parts: Vec<Vec<&str>>) -> (MessageList, Vec<String>) {
        let mut list = MessageList::new();
        let mut ids = Vec::new();
        for texts in parts {
            let parts = texts
                .into_iter()
                .map(|t| Part::Text { text: t.into() })
                .collect();
            let m = Message::new(Role::Assistant, parts);
            ids.push(m.id.clone());
            list.add(m, MessageSource::Response);
        }
        (list, ids)
    }

    #[test]
    fn a_step_with_one_text_part_shares_its_buffer() {
        let (list, ids) = list_with(vec![vec!["Hello there."]]);
        let text = step_text(&list, &ids);
        let Part::Text { text: part } = &list.get(&ids[0]).unwrap().content.parts[0] else {
            panic!("a text part")
        };
        assert!(text.shares(part), "the message's buffer, not a copy");
    }

    #[test]
    fn a_step_with_several_text_parts_has_them_concatenated() {
        let (list, ids) = list_with(vec![vec!["Hel", "lo"], vec![" there."]]);
        assert_eq!(step_text(&list, &ids), "Hello there.");
        let (list, ids) = list_with(vec![]);
        assert_eq!(step_text(&list, &ids), "");
    }
}
