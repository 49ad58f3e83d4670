//! Judging models for the detectors' tests: scripted verdicts computed from the content, a
//! judge that never answers, and one that measures how many calls run at once.
#![allow(dead_code)]

use futures::FutureExt;
use futures::future::BoxFuture;
use processors_runtime::model::{ApiError, LanguageModel, ModelRequest, ModelStream};
use processors_runtime::prelude::*;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The content a judge was asked about: what is between `<content>` and `</content>`.
pub fn content(request: &ModelRequest) -> String {
    let text = request.prompt.last().map(Message::text).unwrap_or_default();
    let start = text
        .find("<content>\n")
        .map_or(0, |i| i + "<content>\n".len());
    let end = text.rfind("\n</content>").unwrap_or(text.len());
    text[start..end].to_owned()
}

/// The contents of every request `judge` got, in order.
pub fn contents(judge: &ScriptedModel) -> Vec<String> {
    judge.requests().iter().map(content).collect()
}

/// A judge answering `verdict(content)` as JSON, with usage 100 in and 10 out.
pub fn judge(verdict: impl Fn(&str) -> Value + Send + Sync + 'static) -> ScriptedModel {
    ScriptedModel::responder(move |request, _| {
        Turn::text(verdict(&content(request)).to_string()).usage(100, 10)
    })
    .named("judge")
}

/// A judge answering these raw texts, in order.
pub fn answers<I: IntoIterator<Item = S>, S: Into<String>>(texts: I) -> ScriptedModel {
    ScriptedModel::new(texts.into_iter().map(|t| Turn::text(t).usage(100, 10))).named("judge")
}

/// A judge that accepts the call and never answers.
#[derive(Clone, Default)]
pub struct Hang;

impl LanguageModel for Hang {
    fn provider(&self) -> &str {
        "test"
    }
    fn model_id(&self) -> &str {
        "hang"
    }
    fn stream(&self, _: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        futures::future::pending().boxed()
    }
}

/// A judge that answers `verdict` after `delay` (a Tokio timer) and records the most calls
/// in flight at once, and the contents in the order the calls started.
#[derive(Clone)]
pub struct Gauge {
    pub verdict: Value,
    pub delay: Duration,
    pub now: Arc<AtomicUsize>,
    pub max: Arc<AtomicUsize>,
    pub started: Arc<Mutex<Vec<String>>>,
}

impl Gauge {
    pub fn new(verdict: Value, delay: Duration) -> Self {
        Gauge {
            verdict,
            delay,
            now: Arc::default(),
            max: Arc::default(),
            started: Arc::default(),
        }
    }
}

impl LanguageModel for Gauge {
    fn provider(&self) -> &str {
        "test"
    }
    fn model_id(&self) -> &str {
        "gauge"
    }
    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        async move {
            self.started.lock().unwrap().push(content(&request));
            let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.max.fetch_max(n, Ordering::SeqCst);
            tokio::time::sleep(self.delay).await;
            self.now.fetch_sub(1, Ordering::SeqCst);
            let turn = ScriptedModel::new([Turn::text(self.verdict.to_string())]);
            turn.stream(ModelRequest::default()).await
        }
        .boxed()
    }
}
