//! The agent loop: input processors, steps with their hooks, tools, retries, output result.

use super::options::ViolationHandler;
use super::stream::{AHEAD, Slot, catch_up};
use super::*;
use crate::chunk::{Chunk, ChunkKind, FinishReason, Usage};
use crate::context::RequestContext;
use crate::message::{MessageList, MessageSource, Part, Role};
use crate::model::{ApiError, ModelRequest, ModelStream};
use crate::processor::state::StateMap;
use crate::processor::{
    ApiErrorAction, ApiErrorArgs, DataWriter, Flow, Hook, InputArgs, InputOutcome, InputStepArgs,
    LlmRequestAction, LlmRequestArgs, LlmResponse, LlmResponseArgs, OutputOutcome,
    OutputResultArgs, OutputStepArgs, StepConfig, StepOverrides, StreamCx, ToolResultArgs,
};
use crate::tool::ToolContext;
use crate::tripwire::{ProcessorError, TripWire};
use futures::FutureExt;
use serde_json::Value;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use tracing::Instrument;

/// The tag of retry feedback system messages.
pub const FEEDBACK_TAG: &str = "processor-feedback";

fn feedback_text(reason: &str) -> String {
    format!(
        "[Processor Feedback] Your previous response was not accepted: {reason}. Please try again with the feedback in mind."
    )
}

enum Called<T> {
    Done(T),
    Warned(TripWire),
    Aborted(TripWire),
}

async fn guard<T>(
    id: &str,
    hook: Hook,
    fut: impl Future<Output = Result<T, ProcessorError>>,
) -> Result<Called<T>, AgentError> {
    let span = tracing::debug_span!("processor", id, hook = hook.name());
    match AssertUnwindSafe(fut.instrument(span)).catch_unwind().await {
        Ok(Ok(v)) => Ok(Called::Done(v)),
        Ok(Err(ProcessorError::Abort(a))) => Ok(Called::Aborted(a.into_tripwire(id))),
        Ok(Err(ProcessorError::Warning(a))) => Ok(Called::Warned(a.into_tripwire(id))),
        Ok(Err(ProcessorError::Failed(source))) => Err(AgentError::Processor {
            id: id.to_owned(),
            hook,
            source,
        }),
        Err(panic) => Err(AgentError::Panicked {
            id: id.to_owned(),
            hook,
            message: crate::processor::pipeline_panic_message(&*panic),
        }),
    }
}

fn invalid(id: &str, hook: Hook, reason: impl ToString) -> AgentError {
    AgentError::InvalidResult {
        id: id.to_owned(),
        hook,
        reason: reason.to_string(),
    }
}

fn ids<'a>(ms: impl Iterator<Item = &'a Message>) -> Vec<String> {
    ms.map(|m| m.id.clone()).collect()
}

/// The stream chain of the run: the agent's static list or a per-call dynamic one.
enum Chain<'a, O> {
    Static(&'a O),
    Dynamic(&'a DynPipeline),
}

impl<O: Pipeline> Chain<'_, O> {
    async fn run(&self, cx: &mut StreamCx<'_>, chunk: &mut Chunk, start: usize) -> Flow {
        match self {
            Chain::Static(p) => p.run_output_stream(cx, chunk, start).await,
            Chain::Dynamic(p) => p.run_output_stream(cx, chunk, start).await,
        }
    }

    fn is_sync(&self) -> bool {
        match self {
            Chain::Static(p) => p.stream_is_sync(),
            Chain::Dynamic(p) => p.stream_is_sync(),
        }
    }

    fn run_now(&self, cx: &mut StreamCx<'_>, chunk: &mut Chunk, start: usize) -> Flow {
        match self {
            Chain::Static(p) => p.run_output_stream_now(cx, chunk, start),
            Chain::Dynamic(p) => p.run_output_stream_now(cx, chunk, start),
        }
    }

    /// The id of the processor at `pos`.
    fn id_at(&self, pos: usize) -> String {
        let mut list = Vec::new();
        match self {
            Chain::Static(p) => p.collect(&mut list),
            Chain::Dynamic(p) => p.collect(&mut list),
        }
        list.get(pos).map_or("agent", |p| p.dyn_id()).to_owned()
    }
}

/// What a step accumulates from the chunks that reached the client.
#[derive(Default)]
struct StepAcc {
    text: String,
    reasoning: String,
    data: Vec<Part>,
    tool_calls: Vec<ToolCallInfo>,
    /// The delivered chunks as model chunks, when a `process_llm_response` hook wants them.
    delivered: Option<Vec<ChunkKind>>,
}

impl StepAcc {
    fn account(&mut self, c: &Chunk) {
        if let Some(d) = &mut self.delivered {
            match &c.kind {
                ChunkKind::StepStart { .. } => {}
                ChunkKind::StepFinish {
                    finish_reason,
                    usage,
                } => d.push(ChunkKind::Finish {
                    finish_reason: *finish_reason,
                    usage: *usage,
                }),
                other => d.push(other.clone()),
            }
        }
        match &c.kind {
            ChunkKind::TextDelta { text, .. } => self.text.push_str(text),
            ChunkKind::ReasoningDelta { text, .. } => self.reasoning.push_str(text),
            ChunkKind::Data {
                name,
                data,
                transient: false,
            } => self.data.push(Part::Data {
                name: name.clone(),
                data: data.clone(),
            }),
            _ => {}
        }
    }
}

struct Run {
    run_id: crate::chunk::RunId,
    slot: Option<Arc<Slot>>,
    /// Chunks the streaming loop produced without waiting, handed over together.
    batch: Vec<Chunk>,
    cx: RequestContext,
    list: MessageList,
    states: StateMap,
    steps: Vec<StepResult>,
    warnings: Vec<String>,
    on_violation: Option<ViolationHandler>,
    retry_count: u32,
    usage: Usage,
}

impl Run {
    /// Hands a chunk to the consumer, after the ones batched before it.
    async fn deliver(&mut self, chunk: Chunk) {
        if self.slot.is_some() {
            self.batch.push(chunk);
        }
        self.hand_over().await;
    }

    /// Hands the batched chunks to the consumer, and lets it catch up when enough wait.
    async fn hand_over(&mut self) {
        if let Some(slot) = &self.slot
            && !self.batch.is_empty()
            && slot.push_all(self.batch.drain(..))
        {
            catch_up().await;
        }
    }

    /// Hands the batched chunks to the consumer (before the run may wait).
    fn flush(&mut self) {
        if let Some(slot) = &self.slot
            && !self.batch.is_empty()
        {
            slot.push_all(self.batch.drain(..));
        }
    }

    async fn deliver_kind(&mut self, kind: ChunkKind) {
        self.deliver(Chunk::new(self.run_id.clone(), kind)).await;
    }

    fn violation(&self, tw: &TripWire, kind: ViolationKind) {
        if kind == ViolationKind::Warn {
            tracing::warn!(processor = %tw.processor_id, reason = %tw.reason, "processor warning");
        }
        let Some(f) = &self.on_violation else { return };
        let v = Violation {
            processor_id: tw.processor_id.clone(),
            kind,
            reason: tw.reason.clone(),
            retry: tw.retry,
            metadata: tw.metadata.clone(),
        };
        if std::panic::catch_unwind(AssertUnwindSafe(|| f(&v))).is_err() {
            tracing::error!(processor = %tw.processor_id, "an on_violation callback panicked; the run goes on");
        }
    }

    fn slots(&mut self, list: &[&dyn DynProcessor]) -> Result<Vec<usize>, AgentError> {
        list.iter()
            .map(|p| {
                self.states
                    .slot_for(*p)
                    .map_err(|c| AgentError::StateConflict {
                        id: c.id,
                        first: c.first,
                        second: c.second,
                    })
            })
            .collect()
    }

    /// Whether a retry asked for by `tw` is granted; warns when no limit is set.
    fn retry_granted(&mut self, tw: &TripWire, max: Option<u32>) -> bool {
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
            Some(max) => self.retry_count < max,
        }
    }

    /// Records a rejected step and sets up the next attempt with the feedback.
    fn reject_step(&mut self, step_number: u32, tw: TripWire, usage: Usage, remove: &[String]) {
        let refs: Vec<&str> = remove.iter().map(String::as_str).collect();
        self.list.remove(&refs);
        self.list.add_system(
            Message::system(feedback_text(&tw.reason)),
            Some(FEEDBACK_TAG),
        );
        self.steps.push(StepResult {
            step_number,
            text: String::new(),
            finish_reason: FinishReason::Tripwire,
            usage,
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
            tripwire: Some(tw),
        });
        self.retry_count += 1;
    }

    /// Ends the run with a trip wire: one `tripwire` chunk, nothing saved.
    async fn end_with_tripwire(
        mut self,
        tw: TripWire,
        step: Option<(u32, Usage, Vec<ToolCallInfo>)>,
    ) -> Result<GenerateResult, AgentError> {
        if let Some((step_number, usage, tool_calls)) = step {
            self.steps.push(StepResult {
                step_number,
                text: String::new(),
                finish_reason: FinishReason::Tripwire,
                usage,
                tool_calls,
                tool_results: Vec::new(),
                tripwire: Some(tw.clone()),
            });
        }
        self.deliver_kind(ChunkKind::Tripwire(tw.clone())).await;
        Ok(GenerateResult {
            run_id: self.run_id.to_string(),
            text: String::new(),
            steps: self.steps,
            finish_reason: FinishReason::Other,
            usage: self.usage,
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
            tripwire: Some(tw),
            response_messages: Vec::new(),
            warnings: self.warnings,
        })
    }

    async fn fail(&mut self, error: AgentError) -> Result<GenerateResult, AgentError> {
        self.deliver_kind(ChunkKind::Error {
            message: error.to_string(),
        })
        .await;
        Err(error)
    }
}

/// What the stream chain needs of the run and of the emitter.
macro_rules! stream_cx {
    ($emitter:ident, $r:ident) => {
        StreamCx {
            states: &mut $r.states,
            slots: &$emitter.slots,
            histories: &mut $emitter.histories,
            message_list: &$r.list,
            request_context: &$r.cx,
            retry_count: $r.retry_count,
            written: &mut $emitter.written,
            pending: &mut $emitter.pending,
            warnings: &mut $emitter.warnings,
            current: 0,
        }
    };
}

/// The output stream side of a run: the chain, its state slots and histories.
struct Emitter<'a, O> {
    chain: Chain<'a, O>,
    slots: Vec<usize>,
    histories: Vec<Vec<Chunk>>,
    written: Vec<ChunkKind>,
    pending: std::collections::VecDeque<(usize, ChunkKind)>,
    warnings: Vec<TripWire>,
    active: bool,
    /// Whether every stream hook of the chain runs without a future.
    sync: bool,
}

impl<O: Pipeline> Emitter<'_, O> {
    /// Reports the warnings the chain raised on a chunk (before any abort of it).
    fn report_warnings(&mut self, r: &Run) {
        if !self.warnings.is_empty() {
            for tw in self.warnings.drain(..) {
                r.violation(&tw, ViolationKind::Warn);
            }
        }
    }

    /// The error of a processor that panicked at position `current` of the chain.
    fn panicked(&self, current: usize, panic: &(dyn std::any::Any + Send)) -> AgentError {
        AgentError::Panicked {
            id: self.chain.id_at(current),
            hook: Hook::OutputStream,
            message: crate::processor::pipeline_panic_message(panic),
        }
    }

    /// What becomes of a chunk once the chain has run: it is accounted and batched for the
    /// client, dropped, or the abort is reported.
    #[inline(always)]
    fn settle(
        &mut self,
        r: &mut Run,
        flow: Flow,
        chunk: Chunk,
        acc: &mut StepAcc,
    ) -> Option<TripWire> {
        // Warnings first: they happened before any abort of this chunk.
        self.report_warnings(r);
        match flow {
            Flow::Continue | Flow::Emit => {
                acc.account(&chunk);
                if r.slot.is_some() {
                    r.batch.push(chunk);
                }
                None
            }
            Flow::Drop => None,
            Flow::Abort(tw) => {
                r.violation(&tw, ViolationKind::Block);
                Some(tw)
            }
        }
    }

    /// Sends a chunk through the stream processors (unless `through` is false) and on to the
    /// client, then any data chunks the processors wrote (each from just after its writer).
    /// Returns the trip wire of an abort.
    async fn emit(
        &mut self,
        r: &mut Run,
        kind: ChunkKind,
        through: bool,
        acc: &mut StepAcc,
    ) -> Result<Option<TripWire>, AgentError> {
        let tripwire = if !through || !self.active || self.sync {
            self.emit_now(r, kind, through, acc)?
        } else {
            self.emit_waiting(r, kind, acc).await?
        };
        r.hand_over().await;
        Ok(tripwire)
    }

    /// `emit` through a chain with hooks that may wait.
    async fn emit_waiting(
        &mut self,
        r: &mut Run,
        kind: ChunkKind,
        acc: &mut StepAcc,
    ) -> Result<Option<TripWire>, AgentError> {
        let mut next = Some((0, Chunk::new(r.run_id.clone(), kind)));
        while let Some((start, mut chunk)) = next.take() {
            let mut scx = stream_cx!(self, r);
            // One unwind guard for the whole chain; `current` names the processor.
            let ran = AssertUnwindSafe(self.chain.run(&mut scx, &mut chunk, start))
                .catch_unwind()
                .await;
            let current = scx.current;
            let flow = ran.map_err(|panic| self.panicked(current, &*panic))?;
            if let Some(tw) = self.settle(r, flow, chunk, acc) {
                return Ok(Some(tw));
            }
            // Hand over before the next chunk's hooks may make the run wait.
            r.hand_over().await;
            next = self
                .pending
                .pop_front()
                .map(|(start, kind)| (start, Chunk::new(r.run_id.clone(), kind)));
        }
        Ok(None)
    }

    /// `emit` for a chunk of a chain that never waits: runs it and batches what passes, then
    /// the data chunks the processors wrote (each from just after its writer).
    #[inline]
    fn emit_now(
        &mut self,
        r: &mut Run,
        kind: ChunkKind,
        through: bool,
        acc: &mut StepAcc,
    ) -> Result<Option<TripWire>, AgentError> {
        let chunk = Chunk::new(r.run_id.clone(), kind);
        if let Some(tw) = self.one_now(r, chunk, 0, through, acc)? {
            return Ok(Some(tw));
        }
        while let Some((start, kind)) = self.pending.pop_front() {
            let chunk = Chunk::new(r.run_id.clone(), kind);
            if let Some(tw) = self.one_now(r, chunk, start, through, acc)? {
                return Ok(Some(tw));
            }
        }
        Ok(None)
    }

    #[inline(always)]
    fn one_now(
        &mut self,
        r: &mut Run,
        mut chunk: Chunk,
        start: usize,
        through: bool,
        acc: &mut StepAcc,
    ) -> Result<Option<TripWire>, AgentError> {
        let flow = if through && self.active {
            let mut scx = stream_cx!(self, r);
            let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
                self.chain.run_now(&mut scx, &mut chunk, start)
            }));
            let current = scx.current;
            ran.map_err(|panic| self.panicked(current, &*panic))?
        } else {
            Flow::Continue
        };
        Ok(self.settle(r, flow, chunk, acc))
    }
}

/// What the streaming loop stopped on.
enum Pulled {
    /// A chunk for the general path (finish, tool calls, errors, or any chunk when the chain
    /// waits).
    Item(Result<ChunkKind, ApiError>),
    /// The model's stream ended.
    End,
    /// Enough chunks are batched: let the consumer catch up.
    Full,
    /// A processor aborted.
    Tripwire(TripWire),
    /// A processor panicked.
    Failed(AgentError),
}

/// Pulls model chunks and runs them through a chain that never waits, without suspending,
/// until a chunk needs the general path, the batch is full, or the model has nothing ready
/// (then the batch goes to the consumer before the run waits).
#[allow(clippy::too_many_arguments)]
fn pump<O: Pipeline>(
    cx: &mut std::task::Context<'_>,
    stream: &mut ModelStream,
    emitter: &mut Emitter<'_, O>,
    r: &mut Run,
    acc: &mut StepAcc,
    raw: &mut Vec<ChunkKind>,
    collect_raw: bool,
    through: bool,
) -> std::task::Poll<Pulled> {
    use std::task::Poll;
    let fast = !through || !emitter.active || emitter.sync;
    loop {
        if r.batch.len() >= AHEAD {
            r.flush();
            return Poll::Ready(Pulled::Full);
        }
        let kind = match stream.as_mut().poll_next(cx) {
            Poll::Pending => {
                r.flush();
                return Poll::Pending;
            }
            Poll::Ready(None) => return Poll::Ready(Pulled::End),
            Poll::Ready(Some(Ok(kind))) => kind,
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Pulled::Item(Err(e))),
        };
        let plain = matches!(
            kind,
            ChunkKind::TextDelta { .. }
                | ChunkKind::TextStart { .. }
                | ChunkKind::TextEnd { .. }
                | ChunkKind::ReasoningDelta { .. }
                | ChunkKind::ReasoningStart { .. }
                | ChunkKind::ReasoningEnd { .. }
                | ChunkKind::ToolCallDelta { .. }
        );
        if !(fast && plain) {
            return Poll::Ready(Pulled::Item(Ok(kind)));
        }
        if collect_raw {
            raw.push(kind.clone());
        }
        match emitter.emit_now(r, kind, through, acc) {
            Ok(None) => {}
            Ok(Some(tw)) => return Poll::Ready(Pulled::Tripwire(tw)),
            Err(e) => return Poll::Ready(Pulled::Failed(e)),
        }
    }
}

fn replay(chunks: Vec<ChunkKind>) -> ModelStream {
    Box::pin(futures::stream::iter(chunks.into_iter().map(Ok)))
}

macro_rules! tri {
    ($r:ident, $e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return $r.fail(e).await,
        }
    };
}

/// Handles the outcome of a hook call: the value, or ends the run on abort.
macro_rules! called {
    ($r:ident, $e:expr, $on_abort:expr) => {
        match tri!($r, $e) {
            Called::Done(v) => Some(v),
            Called::Warned(tw) => {
                $r.violation(&tw, ViolationKind::Warn);
                None
            }
            Called::Aborted(tw) => {
                $r.violation(&tw, ViolationKind::Block);
                #[allow(clippy::redundant_closure_call)]
                return ($on_abort)($r, tw).await;
            }
        }
    };
}

pub(crate) async fn run<I: Pipeline, O: Pipeline, E: Pipeline>(
    inner: Arc<AgentInner<I, O, E>>,
    input: Vec<Message>,
    options: GenerateOptions,
    slot: Option<Arc<Slot>>,
) -> Result<GenerateResult, AgentError> {
    let agent = &*inner;
    let GenerateOptions {
        input: input_override,
        output: output_override,
        error: error_override,
        max_processor_retries,
        max_steps,
        prepare_step,
        request_context,
    } = options;
    let mut r = Run {
        run_id: crate::chunk::RunId::from(crate::message::new_id("run")),
        slot,
        batch: Vec::with_capacity(AHEAD),
        cx: request_context,
        list: MessageList::new(),
        states: StateMap::default(),
        steps: Vec::new(),
        warnings: Vec::new(),
        on_violation: agent.on_violation.clone(),
        retry_count: 0,
        usage: Usage::default(),
    };

    // The lists of this call: per-call lists replace the agent's; memory runs around them.
    let (mut inputs, mut outputs, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    match &input_override {
        Some(p) => p.collect(&mut inputs),
        None => agent.input.collect(&mut inputs),
    }
    match &output_override {
        Some(p) => p.collect(&mut outputs),
        None => agent.output.collect(&mut outputs),
    }
    match &error_override {
        Some(p) => p.collect(&mut errors),
        None => agent.error.collect(&mut errors),
    }
    let chain = match &output_override {
        Some(p) => Chain::Dynamic(p),
        None => Chain::Static(&agent.output),
    };
    let stream_len = outputs.len();
    if let Err(e) = check_memory_placement(agent.memory.is_some(), &inputs, &outputs) {
        return r.fail(AgentError::Config(e.to_string())).await;
    }
    if let Some(memory) = &agent.memory {
        let is_memory = |p: &&dyn DynProcessor| p.dyn_id() == MEMORY_ID;
        if !inputs.iter().any(is_memory) {
            inputs.insert(0, memory);
        }
        if !outputs.iter().any(is_memory) {
            outputs.push(memory);
        }
    }
    let mut step_procs = inputs.clone();
    if let Some(p) = &prepare_step {
        step_procs.push(p);
    }
    let in_slots = tri!(r, r.slots(&inputs));
    let step_slots = tri!(r, r.slots(&step_procs));
    let out_slots = tri!(r, r.slots(&outputs));
    let err_slots = tri!(r, r.slots(&errors));

    let max_retries = max_processor_retries.or(agent.max_processor_retries);
    let max_steps = max_steps.or(agent.max_steps).unwrap_or(DEFAULT_MAX_STEPS);
    if max_steps == 0 {
        return r
            .fail(AgentError::Config(
                "max_steps is 0: a run needs at least one step".to_owned(),
            ))
            .await;
    }
    let handles_api_errors = inputs
        .iter()
        .chain(&outputs)
        .chain(&errors)
        .any(|p| p.dyn_hooks().contains(Hook::ApiError));
    let api_retry_limit = max_retries.unwrap_or(if handles_api_errors { 3 } else { 0 });
    let has =
        |list: &[&dyn DynProcessor], hook: Hook| list.iter().any(|p| p.dyn_hooks().contains(hook));
    let collect_raw = has(&outputs, Hook::LlmResponse);

    let sync = chain.is_sync();
    let mut emitter = Emitter {
        sync,
        chain,
        slots: out_slots[..stream_len].to_vec(),
        histories: vec![Vec::new(); stream_len],
        written: Vec::new(),
        pending: std::collections::VecDeque::new(),
        warnings: Vec::new(),
        active: has(&outputs[..stream_len], Hook::OutputStream),
    };

    // The conversation.
    let originals = agent.instructions.clone();
    r.list.replace_all_system(originals.clone());
    r.list.add_all(input, MessageSource::Input);

    // process_input, once.
    for (p, &slot) in inputs.iter().zip(&in_slots) {
        if !p.dyn_hooks().contains(Hook::Input) {
            continue;
        }
        let id = p.dyn_id();
        let args = InputArgs {
            messages: r.list.input().cloned().collect(),
            system_messages: r.list.system_messages().to_vec(),
            message_list: &mut r.list,
            state: r.states.get_mut(slot),
            request_context: &r.cx,
            retry_count: 0,
        };
        let outcome = called!(
            r,
            guard(id, Hook::Input, p.dyn_process_input(args)).await,
            |r: Run, tw| r.end_with_tripwire(tw, None)
        );
        let view = ids(r.list.input());
        let applied = match outcome.unwrap_or_default() {
            InputOutcome::Unchanged => Ok(()),
            InputOutcome::Messages(ms) => r.list.reconcile(&view, ms, MessageSource::Input),
            // The system set first: system-role messages inside `messages` then add to it.
            InputOutcome::MessagesAndSystem { messages, system } => r
                .list
                .reconcile_system(system)
                .and_then(|()| r.list.reconcile(&view, messages, MessageSource::Input)),
        };
        tri!(r, applied.map_err(|e| invalid(id, Hook::Input, e)));
    }
    // The instructions as the input processors left them are the run's originals.
    let originals = {
        let _ = originals;
        r.list.system_messages().to_vec()
    };

    let mut acc = StepAcc::default();
    if let Some(tw) = tri!(
        r,
        emitter.emit(&mut r, ChunkKind::Start, true, &mut acc).await
    ) {
        return r.end_with_tripwire(tw, None).await;
    }

    let mut step_number: u32 = 0;
    let mut last_reason = FinishReason::Stop;
    let mut all_calls: Vec<ToolCallInfo> = Vec::new();
    let mut all_results: Vec<ToolResultInfo> = Vec::new();

    while step_number < max_steps {
        // Rule 5: a step's system edits last one step.
        r.list.replace_all_system(originals.clone());
        let mut config = StepConfig {
            model: agent.model.clone(),
            tools: agent.tools.clone(),
            tool_choice: agent.tool_choice.clone(),
            active_tools: None,
            provider_options: agent.provider_options.clone(),
            model_settings: agent.model_settings.clone(),
        };

        // process_input_step (then prepare_step), chained. A retry from here restores the
        // list as it was before the chain, so that edits are not applied twice.
        let snapshot =
            (max_retries.is_some() && has(&step_procs, Hook::InputStep)).then(|| r.list.clone());
        let mut rejected = false;
        for (p, &slot) in step_procs.iter().zip(&step_slots) {
            if !p.dyn_hooks().contains(Hook::InputStep) {
                continue;
            }
            let id = p.dyn_id();
            let args = InputStepArgs {
                step_number,
                steps: &r.steps,
                messages: r.list.all().cloned().collect(),
                system_messages: r.list.all_system_messages().cloned().collect(),
                config: &config,
                message_list: &mut r.list,
                state: r.states.get_mut(slot),
                request_context: &r.cx,
                retry_count: r.retry_count,
            };
            let result = tri!(
                r,
                guard(id, Hook::InputStep, p.dyn_process_input_step(args)).await
            );
            let overrides = match result {
                Called::Done(o) => o,
                Called::Warned(tw) => {
                    r.violation(&tw, ViolationKind::Warn);
                    continue;
                }
                Called::Aborted(tw) => {
                    r.violation(&tw, ViolationKind::Block);
                    if r.retry_granted(&tw, max_retries) {
                        if let Some(list) = &snapshot {
                            r.list = list.clone();
                        }
                        r.reject_step(step_number, tw, Usage::default(), &[]);
                        rejected = true;
                        break;
                    }
                    return r
                        .end_with_tripwire(tw, Some((step_number, Usage::default(), Vec::new())))
                        .await;
                }
            };
            tri!(r, apply_overrides(&mut r.list, &mut config, overrides, id));
        }
        if rejected {
            continue;
        }

        // Build the request; process_llm_request; call the model; process_api_error.
        let offered: Vec<_> = config
            .tools
            .iter()
            .filter(|t| {
                config
                    .active_tools
                    .as_ref()
                    .is_none_or(|a| a.iter().any(|n| n == t.name()))
            })
            .cloned()
            .collect();
        let mut api_retries = 0u32;
        let (mut model_stream, from_cache, request) = loop {
            let mut request = ModelRequest {
                prompt: r.list.to_prompt(),
                tools: offered.iter().map(|t| t.spec()).collect(),
                tool_choice: config.tool_choice.clone(),
                provider_options: config.provider_options.clone(),
                settings: config.model_settings.clone(),
            };
            let mut cached: Option<LlmResponse> = None;
            for (p, &slot) in inputs.iter().zip(&in_slots) {
                if !p.dyn_hooks().contains(Hook::LlmRequest) {
                    continue;
                }
                let args = LlmRequestArgs {
                    step_number,
                    request: &request,
                    model: &*config.model,
                    state: r.states.get_mut(slot),
                    request_context: &r.cx,
                };
                let action = called!(
                    r,
                    guard(
                        p.dyn_id(),
                        Hook::LlmRequest,
                        p.dyn_process_llm_request(args)
                    )
                    .await,
                    |r: Run, tw| r
                        .end_with_tripwire(tw, Some((step_number, Usage::default(), Vec::new())))
                );
                match action.unwrap_or_default() {
                    LlmRequestAction::Continue => {}
                    LlmRequestAction::Prompt(prompt) => request.prompt = prompt,
                    LlmRequestAction::Respond(response) => {
                        if cached.is_none() {
                            cached = Some(response);
                        }
                    }
                }
            }
            if let Some(response) = cached {
                break (replay(response.chunks), true, request);
            }
            let error = match config.model.stream(request.clone()).await {
                Ok(stream) => break (stream, false, request),
                Err(e) => e,
            };
            let mut retry = false;
            let askers = inputs
                .iter()
                .zip(&in_slots)
                .chain(outputs.iter().zip(&out_slots))
                .chain(errors.iter().zip(&err_slots));
            for (p, &slot) in askers {
                if !p.dyn_hooks().contains(Hook::ApiError) {
                    continue;
                }
                let args = ApiErrorArgs {
                    error: &error,
                    step_number,
                    steps: &r.steps,
                    message_list: &mut r.list,
                    state: r.states.get_mut(slot),
                    request_context: &r.cx,
                    retry_count: api_retries,
                };
                let action = called!(
                    r,
                    guard(p.dyn_id(), Hook::ApiError, p.dyn_process_api_error(args)).await,
                    |r: Run, tw| r
                        .end_with_tripwire(tw, Some((step_number, Usage::default(), Vec::new())))
                );
                if action == Some(ApiErrorAction::Retry) {
                    retry = true;
                    break;
                }
            }
            if retry && api_retries < api_retry_limit {
                api_retries += 1;
                tracing::debug!(
                    attempt = api_retries,
                    "retrying the model call after an API error"
                );
                continue;
            }
            return r.fail(AgentError::Api(error)).await;
        };

        // Stream the step.
        acc = StepAcc {
            delivered: collect_raw.then(Vec::new),
            // Data written before the step (at the start of the run) is saved with it.
            data: std::mem::take(&mut acc.data),
            ..StepAcc::default()
        };
        let through = !from_cache;
        if let Some(tw) = tri!(
            r,
            emitter
                .emit(
                    &mut r,
                    ChunkKind::StepStart { step_number },
                    through,
                    &mut acc
                )
                .await
        ) {
            return r
                .end_with_tripwire(tw, Some((step_number, Usage::default(), Vec::new())))
                .await;
        }
        let mut raw = Vec::new();
        let mut finish: Option<(FinishReason, Usage)> = None;
        loop {
            let pulled = std::future::poll_fn(|cx| {
                pump(
                    cx,
                    &mut model_stream,
                    &mut emitter,
                    &mut r,
                    &mut acc,
                    &mut raw,
                    collect_raw,
                    through,
                )
            })
            .await;
            let item = match pulled {
                Pulled::Item(item) => item,
                Pulled::End => break,
                Pulled::Full => {
                    catch_up().await;
                    continue;
                }
                Pulled::Tripwire(tw) => {
                    let calls = std::mem::take(&mut acc.tool_calls);
                    return r
                        .end_with_tripwire(tw, Some((step_number, Usage::default(), calls)))
                        .await;
                }
                Pulled::Failed(e) => return r.fail(e).await,
            };
            let kind = match item {
                Ok(k) => k,
                Err(e) => return r.fail(AgentError::Api(e)).await,
            };
            if collect_raw {
                raw.push(kind.clone());
            }
            match &kind {
                ChunkKind::Finish {
                    finish_reason,
                    usage,
                } => {
                    finish = Some((*finish_reason, *usage));
                    continue;
                }
                ChunkKind::ToolCall {
                    tool_call_id,
                    tool_name,
                    args,
                } => acc.tool_calls.push(ToolCallInfo {
                    tool_call_id: tool_call_id.clone(),
                    tool_name: tool_name.clone(),
                    args: args.clone(),
                }),
                _ => {}
            }
            if let Some(tw) = tri!(r, emitter.emit(&mut r, kind, through, &mut acc).await) {
                let calls = std::mem::take(&mut acc.tool_calls);
                return r
                    .end_with_tripwire(tw, Some((step_number, Usage::default(), calls)))
                    .await;
            }
        }
        drop(model_stream);
        let Some((reason, usage)) = finish else {
            return r
                .fail(AgentError::Api(ApiError::other(
                    "the model's stream ended without a finish chunk",
                    true,
                )))
                .await;
        };
        r.usage += usage;
        let step_finish = ChunkKind::StepFinish {
            finish_reason: reason,
            usage,
        };
        // Rule 23: a finish between steps (tool calls) does not go through stream processors.
        let finish_through = through && reason != FinishReason::ToolCalls;
        if let Some(tw) = tri!(
            r,
            emitter
                .emit(&mut r, step_finish, finish_through, &mut acc)
                .await
        ) {
            let calls = std::mem::take(&mut acc.tool_calls);
            return r
                .end_with_tripwire(tw, Some((step_number, usage, calls)))
                .await;
        }

        // process_llm_response.
        if collect_raw {
            let response = LlmResponse { chunks: raw };
            let delivered = LlmResponse {
                chunks: acc.delivered.take().unwrap_or_default(),
            };
            for (p, &slot) in outputs.iter().zip(&out_slots) {
                if !p.dyn_hooks().contains(Hook::LlmResponse) {
                    continue;
                }
                let args = LlmResponseArgs {
                    step_number,
                    request: &request,
                    response: &response,
                    delivered: &delivered,
                    from_cache,
                    state: r.states.get_mut(slot),
                    request_context: &r.cx,
                };
                called!(
                    r,
                    guard(
                        p.dyn_id(),
                        Hook::LlmResponse,
                        p.dyn_process_llm_response(args)
                    )
                    .await,
                    |r: Run, tw| r.end_with_tripwire(tw, Some((step_number, usage, Vec::new())))
                );
            }
        }

        // The step's response message.
        let mut parts = Vec::new();
        if !acc.reasoning.is_empty() {
            parts.push(Part::Reasoning {
                text: std::mem::take(&mut acc.reasoning),
            });
        }
        if !acc.text.is_empty() {
            parts.push(Part::Text {
                text: acc.text.clone(),
            });
        }
        parts.append(&mut acc.data);
        for c in &acc.tool_calls {
            parts.push(Part::ToolCall {
                tool_call_id: c.tool_call_id.clone(),
                tool_name: c.tool_name.clone(),
                args: c.args.clone(),
            });
        }
        let mut step_ids = Vec::new();
        if !parts.is_empty() {
            let m = Message::new(Role::Assistant, parts);
            step_ids.push(m.id.clone());
            r.list.add(m, MessageSource::Response);
        }

        // process_output_step: guardrails that may ask for a retry.
        let mut rejected = false;
        for (p, &slot) in outputs.iter().zip(&out_slots) {
            if !p.dyn_hooks().contains(Hook::OutputStep) {
                continue;
            }
            let id = p.dyn_id();
            let args = OutputStepArgs {
                step_number,
                messages: step_ids
                    .iter()
                    .filter_map(|i| r.list.get(i).cloned())
                    .collect(),
                text: &acc.text,
                finish_reason: reason,
                tool_calls: &acc.tool_calls,
                steps: &r.steps,
                system_messages: r.list.all_system_messages().cloned().collect(),
                message_list: &mut r.list,
                state: r.states.get_mut(slot),
                request_context: &r.cx,
                retry_count: r.retry_count,
            };
            let result = tri!(
                r,
                guard(id, Hook::OutputStep, p.dyn_process_output_step(args)).await
            );
            match result {
                Called::Done(OutputOutcome::Unchanged) => {}
                Called::Done(OutputOutcome::Messages(ms)) => {
                    let new_ids: Vec<String> = ms
                        .iter()
                        .filter(|m| m.role != Role::System)
                        .map(|m| m.id.clone())
                        .collect();
                    tri!(
                        r,
                        r.list
                            .reconcile(&step_ids, ms, MessageSource::Response)
                            .map_err(|e| invalid(id, Hook::OutputStep, e))
                    );
                    step_ids = new_ids;
                }
                Called::Warned(tw) => r.violation(&tw, ViolationKind::Warn),
                Called::Aborted(tw) => {
                    r.violation(&tw, ViolationKind::Block);
                    if r.retry_granted(&tw, max_retries) {
                        r.reject_step(step_number, tw, usage, &step_ids);
                        rejected = true;
                        break;
                    }
                    let calls = std::mem::take(&mut acc.tool_calls);
                    return r
                        .end_with_tripwire(tw, Some((step_number, usage, calls)))
                        .await;
                }
            }
        }
        if rejected {
            continue;
        }
        r.retry_count = 0;
        // The feedback was about the rejected answer; the accepted one ends it.
        r.list.clear_tag(FEEDBACK_TAG);

        // Tools.
        let mut results: Vec<ToolResultInfo> = Vec::new();
        if reason == FinishReason::ToolCalls || !acc.tool_calls.is_empty() {
            for call in acc.tool_calls.clone() {
                let tool = offered.iter().find(|t| t.name() == call.tool_name);
                let mut writes = Vec::new();
                let outcome: Result<Value, String> = match tool {
                    None => Err(format!(
                        "the model called `{}`, which is not an available tool",
                        call.tool_name
                    )),
                    Some(t) => {
                        let cx = ToolContext {
                            tool_call_id: &call.tool_call_id,
                            request_context: &r.cx,
                            writer: DataWriter { buf: &mut writes },
                        };
                        let span = tracing::debug_span!("tool", name = %call.tool_name);
                        match AssertUnwindSafe(t.execute(call.args.clone(), cx).instrument(span))
                            .catch_unwind()
                            .await
                        {
                            Ok(Ok(v)) => Ok(v),
                            Ok(Err(e)) => Err(e.to_string()),
                            Err(panic) => Err(format!(
                                "tool `{}` panicked: {}",
                                call.tool_name,
                                crate::processor::pipeline_panic_message(&*panic)
                            )),
                        }
                    }
                };
                for kind in writes {
                    if let Some(tw) = tri!(r, emitter.emit(&mut r, kind, true, &mut acc).await) {
                        return r.end_with_tripwire(tw, None).await;
                    }
                }
                let (kind, info) = match outcome {
                    Ok(mut value) => {
                        for (p, &slot) in outputs.iter().zip(&out_slots) {
                            if !p.dyn_hooks().contains(Hook::ToolResult) {
                                continue;
                            }
                            let args = ToolResultArgs {
                                tool_call: &call,
                                result: &value,
                                state: r.states.get_mut(slot),
                                request_context: &r.cx,
                            };
                            let changed = called!(
                                r,
                                guard(
                                    p.dyn_id(),
                                    Hook::ToolResult,
                                    p.dyn_process_tool_result(args)
                                )
                                .await,
                                |r: Run, tw| r.end_with_tripwire(tw, None)
                            );
                            if let Some(Some(v)) = changed {
                                value = v;
                            }
                        }
                        (
                            ChunkKind::ToolResult {
                                tool_call_id: call.tool_call_id.clone(),
                                tool_name: call.tool_name.clone(),
                                result: value.clone(),
                            },
                            ToolResultInfo {
                                tool_call_id: call.tool_call_id.clone(),
                                tool_name: call.tool_name.clone(),
                                result: value,
                                is_error: false,
                            },
                        )
                    }
                    Err(message) => (
                        ChunkKind::ToolError {
                            tool_call_id: call.tool_call_id.clone(),
                            tool_name: call.tool_name.clone(),
                            error: message.clone(),
                        },
                        ToolResultInfo {
                            tool_call_id: call.tool_call_id.clone(),
                            tool_name: call.tool_name.clone(),
                            result: Value::String(message),
                            is_error: true,
                        },
                    ),
                };
                if let Some(tw) = tri!(r, emitter.emit(&mut r, kind, true, &mut acc).await) {
                    return r.end_with_tripwire(tw, None).await;
                }
                results.push(info);
            }
            if !results.is_empty() {
                let mut parts: Vec<Part> = results
                    .iter()
                    .map(|t| Part::ToolResult {
                        tool_call_id: t.tool_call_id.clone(),
                        tool_name: t.tool_name.clone(),
                        result: t.result.clone(),
                        is_error: t.is_error,
                    })
                    .collect();
                // Data the tools (or processors on their chunks) wrote is saved with them.
                parts.append(&mut acc.data);
                r.list
                    .add(Message::new(Role::Tool, parts), MessageSource::Response);
            }
        }

        let step_text = step_ids
            .iter()
            .filter_map(|i| r.list.get(i))
            .filter(|m| m.role == Role::Assistant)
            .map(Message::text)
            .collect::<String>();
        all_calls.extend(acc.tool_calls.iter().cloned());
        all_results.extend(results.iter().cloned());
        r.steps.push(StepResult {
            step_number,
            text: step_text,
            finish_reason: reason,
            usage,
            tool_calls: std::mem::take(&mut acc.tool_calls),
            tool_results: results,
            tripwire: None,
        });
        last_reason = reason;
        step_number += 1;
        if reason != FinishReason::ToolCalls {
            break;
        }
    }

    // The end of the stream, then process_output_result (memory last: it saves).
    acc = StepAcc::default();
    let finish = ChunkKind::Finish {
        finish_reason: last_reason,
        usage: r.usage,
    };
    // Rule 23: a finish with reason tool-calls (the step limit ended a tool loop) does not go
    // through stream processors.
    let finish_through = last_reason != FinishReason::ToolCalls;
    if let Some(tw) = tri!(
        r,
        emitter.emit(&mut r, finish, finish_through, &mut acc).await
    ) {
        return r.end_with_tripwire(tw, None).await;
    }
    if !acc.data.is_empty() {
        attach_data(&mut r.list, std::mem::take(&mut acc.data));
    }
    let response_text = |list: &MessageList| -> String {
        list.response()
            .filter(|m| m.role == Role::Assistant)
            .map(Message::text)
            .collect()
    };
    let mut summary = RunSummary {
        text: response_text(&r.list),
        usage: r.usage,
        finish_reason: last_reason,
        steps: r.steps.clone(),
    };
    for (p, &slot) in outputs.iter().zip(&out_slots) {
        if !p.dyn_hooks().contains(Hook::OutputResult) {
            continue;
        }
        let id = p.dyn_id();
        let args = OutputResultArgs {
            messages: r.list.response().cloned().collect(),
            result: &summary,
            message_list: &mut r.list,
            state: r.states.get_mut(slot),
            request_context: &r.cx,
            retry_count: r.retry_count,
        };
        let outcome = called!(
            r,
            guard(id, Hook::OutputResult, p.dyn_process_output_result(args)).await,
            |r: Run, tw| r.end_with_tripwire(tw, None)
        );
        if let Some(OutputOutcome::Messages(ms)) = outcome {
            let view = ids(r.list.response());
            tri!(
                r,
                r.list
                    .reconcile(&view, ms, MessageSource::Response)
                    .map_err(|e| invalid(id, Hook::OutputResult, e))
            );
            summary.text = response_text(&r.list);
        }
    }

    Ok(GenerateResult {
        run_id: r.run_id.to_string(),
        text: summary.text,
        steps: r.steps,
        finish_reason: last_reason,
        usage: r.usage,
        tool_calls: all_calls,
        tool_results: all_results,
        tripwire: None,
        response_messages: r.list.response().cloned().collect(),
        warnings: r.warnings,
    })
}

/// Saves data written at the end of the run with the last answer (or as an answer of its own).
fn attach_data(list: &mut MessageList, data: Vec<Part>) {
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

/// Applies one processor's step overrides (rule 2: only what it names changes).
fn apply_overrides(
    list: &mut MessageList,
    config: &mut StepConfig,
    o: StepOverrides,
    id: &str,
) -> Result<(), AgentError> {
    if let Some(m) = o.model {
        config.model = m;
    }
    if let Some(t) = o.tools {
        config.tools = t;
    }
    if let Some(c) = o.tool_choice {
        config.tool_choice = c;
    }
    if let Some(p) = o.provider_options {
        config.provider_options = p;
    }
    if let Some(s) = o.model_settings {
        config.model_settings = s;
    }
    if let Some(active) = o.active_tools {
        if let Some(unknown) = active
            .iter()
            .find(|n| !config.tools.iter().any(|t| t.name() == n.as_str()))
        {
            return Err(invalid(
                id,
                Hook::InputStep,
                format!("active_tools names `{unknown}`, which is not among the step's tools"),
            ));
        }
        config.active_tools = Some(active);
    }
    if let Some(system) = o.system_messages {
        list.reconcile_system(system)
            .map_err(|e| invalid(id, Hook::InputStep, e))?;
    }
    if let Some(ms) = o.messages {
        let view = ids(list.all());
        list.reconcile(&view, ms, MessageSource::Context)
            .map_err(|e| invalid(id, Hook::InputStep, e))?;
    }
    Ok(())
}
