//! `agent!` compiles wherever an expression does: in a generic function, a method of a generic
//! impl, a closure and an `async` block, with processors whose types are the function's type
//! parameters, generic processors, shared and shadowed ones, and closures. What only the types
//! know (hooks, ids) is checked when such a function is instantiated.

use processors::prelude::*;
use std::future::Future;
use std::sync::Arc;

#[processor(output_stream)]
fn shout(chunk: &Chunk) -> StreamAction {
    chunk.clone().map_text(|t| t.to_uppercase()).into()
}

#[processor(output_stream)]
fn exclaim(chunk: &Chunk) -> StreamAction {
    chunk.clone().map_text(|t| format!("{t}!")).into()
}

#[processor(input)]
fn keep(messages: Vec<Message>) -> InputOutcome {
    messages.into()
}

#[processor(output_step)]
fn non_empty(text: &str, abort: Abort) -> Result<(), ProcessorError> {
    match text.is_empty() {
        true => Err(abort.reason("say something").retry(true).into()),
        false => Ok(()),
    }
}

/// Drops streamed text that contains one of its words.
struct Filter<T> {
    words: Vec<T>,
}

#[processor]
impl<T: AsRef<str> + Send + Sync + 'static> Filter<T> {
    fn process_output_stream(&self, chunk: &Chunk) -> StreamAction {
        match chunk.text_delta() {
            Some(t) if self.words.iter().any(|w| t.contains(w.as_ref())) => StreamAction::Drop,
            _ => StreamAction::Pass,
        }
    }
}

fn model() -> ScriptedModel {
    ScriptedModel::new([Turn::text("fine")])
}

/// Two processors of the caller's choosing.
fn with<A: OutputProcessor, B: OutputProcessor>(a: A, b: B) -> Agent<(), (A, B), ()> {
    agent! { model: model(), output: [a, b] }
}

/// A generic processor, shared and shadowed ones and a retry limit, all over type parameters.
fn mixed<A, T>(a: A, words: Vec<T>) -> Agent<(), (Filter<T>, Arc<A>, Shadow<Shout>, Arc<NonEmpty>), ()>
where
    A: OutputProcessor,
    T: AsRef<str> + Send + Sync + 'static,
{
    let shared = Arc::new(NonEmpty);
    agent! {
        model: model(),
        output: [Filter { words }, Arc::new(a), shadow(Shout), shared],
        max_processor_retries: 1,
    }
}

/// A generic processor named in the function's where clause, which the checks made while
/// type-checking must not depend on.
fn named<T>(words: Vec<T>) -> Agent<(), (Filter<T>,), ()>
where
    T: AsRef<str> + Send + Sync + 'static,
    Filter<T>: OutputProcessor,
{
    agent! { model: model(), output: [Filter { words }] }
}

/// A processor whose impl's where clause names `Self`.
struct Echo<T>(T);

#[processor]
impl<T> Echo<T>
where
    T: Send + Sync + 'static,
    Self: Sized,
{
    fn process_output_stream(&self, chunk: &Chunk) -> StreamAction {
        let _ = &self.0;
        chunk.clone().into()
    }
}

/// An `async fn`, with a processor made of a closure beside the caller's.
async fn tagged<A: InputProcessor>(a: A) -> String {
    let tag = input_fn("tag", |_args: &mut InputArgs<'_, ()>| InputOutcome::Unchanged);
    let agent = agent! { model: model(), input: [a, tag] };
    agent.generate("x").await.unwrap().text.to_string()
}

struct Factory<P> {
    make: fn() -> P,
}

impl<P: OutputProcessor> Factory<P> {
    /// A method of a generic impl.
    fn agent(&self) -> Agent<(), (P,), ()> {
        agent! { model: model(), output: [(self.make)()] }
    }
}

/// An `async` block returned as `impl Future`.
fn later<A: OutputProcessor>(a: A) -> impl Future<Output = String> {
    async move {
        let agent = agent! { model: model(), output: [a] };
        agent.generate("x").await.unwrap().text.to_string()
    }
}

fn main() {
    futures::executor::block_on(async {
        assert_eq!(with(Shout, Exclaim).generate("x").await.unwrap().text, "FINE!");
        let agent = mixed(Exclaim, vec!["secret"]);
        assert_eq!(agent.generate("x").await.unwrap().text, "fine!");
        assert_eq!(tagged(Keep).await, "fine");
        let factory = Factory { make: || Shout };
        assert_eq!(factory.agent().generate("x").await.unwrap().text, "FINE");
        let closure = |a| agent! { model: model(), output: [Filter { words: vec![a] }] };
        assert_eq!(closure("secret").generate("x").await.unwrap().text, "fine");
        assert_eq!(later(Exclaim).await, "fine!");
        assert_eq!(named(vec!["secret"]).generate("x").await.unwrap().text, "fine");
        let echo = agent! { model: model(), output: [Echo(1)] };
        assert_eq!(echo.generate("x").await.unwrap().text, "fine");
    });
}
