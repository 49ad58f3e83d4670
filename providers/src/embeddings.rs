//! [`OpenAiEmbeddings`]: the embeddings API of OpenAI and of the servers that copy it.

use crate::error;
use crate::openai::OPENAI_BASE_URL;
use crate::transport::{ConfigError, HttpConfig, Transport, http_builder_methods};
use processors_runtime::chunk::Usage;
use processors_runtime::model::ApiError;
use serde_json::{Value, json};

/// Vectors for texts from an OpenAI-compatible embeddings API (`POST {base_url}/embeddings`):
/// OpenAI (`text-embedding-3-small`, …), Ollama, vLLM, llama.cpp's server, LM Studio. The same
/// timeouts, retries and error classes as the chat models.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use processors_providers::OpenAiEmbeddings;
/// let embeddings = OpenAiEmbeddings::builder("text-embedding-3-small")
///     .api_key(std::env::var("OPENAI_API_KEY")?)
///     .build()?;
/// let (vectors, usage) = embeddings.embed(&["hello".to_owned(), "world".to_owned()]).await?;
/// assert_eq!(vectors.len(), 2);
/// # let _ = usage;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiEmbeddings {
    model: String,
    dimensions: Option<u32>,
    url: String,
    transport: Transport,
}

/// Builds an [`OpenAiEmbeddings`]; see [`OpenAiEmbeddings::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct OpenAiEmbeddingsBuilder {
    model: String,
    dimensions: Option<u32>,
    http: HttpConfig,
}

impl OpenAiEmbeddings {
    /// Starts building a client for this embedding model, on OpenAI's API and without a key.
    pub fn builder(model: impl Into<String>) -> OpenAiEmbeddingsBuilder {
        OpenAiEmbeddingsBuilder {
            model: model.into(),
            dimensions: None,
            http: HttpConfig::new(OPENAI_BASE_URL),
        }
    }

    /// The model's id.
    pub fn model_id(&self) -> &str {
        &self.model
    }

    /// One vector per text, in the texts' order, and the call's usage. An empty list makes no
    /// call.
    pub async fn embed(&self, texts: &[String]) -> Result<(Vec<Vec<f32>>, Usage), ApiError> {
        if texts.is_empty() {
            return Ok((Vec::new(), Usage::default()));
        }
        let mut body = json!({
            "model": self.model,
            "input": texts,
            "encoding_format": "float",
        });
        if let Some(d) = self.dimensions {
            body["dimensions"] = json!(d);
        }
        let answer = self.transport.json(&self.url, &body).await?;
        read(&answer, texts.len())
    }
}

/// The vectors without the usage, for semantic recall and anything else that takes an
/// [`Embedder`](processors_runtime::model::Embedder).
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use processors_providers::OpenAiEmbeddings;
/// use processors_runtime::model::Embedder;
/// let embedder: Box<dyn Embedder> = Box::new(
///     OpenAiEmbeddings::builder("text-embedding-3-small")
///         .api_key(std::env::var("OPENAI_API_KEY")?)
///         .build()?,
/// );
/// # Ok(()) }
/// ```
impl processors_runtime::model::Embedder for OpenAiEmbeddings {
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> futures::future::BoxFuture<'a, Result<Vec<Vec<f32>>, processors_runtime::BoxError>> {
        Box::pin(async move {
            let (vectors, _usage) = OpenAiEmbeddings::embed(self, texts).await?;
            Ok(vectors)
        })
    }
}

impl OpenAiEmbeddingsBuilder {
    http_builder_methods!();

    /// Asks for vectors of this many numbers (models that can shorten theirs, such as
    /// `text-embedding-3-*`).
    pub fn dimensions(mut self, dimensions: u32) -> Self {
        self.dimensions = Some(dimensions);
        self
    }

    /// The client.
    pub fn build(self) -> Result<OpenAiEmbeddings, ConfigError> {
        let auth = self.http.api_key.as_ref().map(|key| {
            (
                "authorization".to_owned(),
                format!("Bearer {}", key.expose()),
            )
        });
        let transport = Transport::new(&self.http, auth)?;
        Ok(OpenAiEmbeddings {
            url: self.http.url("embeddings"),
            model: self.model,
            dimensions: self.dimensions,
            transport,
        })
    }
}

/// The vectors of an answer, in input order: every index once, every vector of numbers.
fn read(answer: &Value, expected: usize) -> Result<(Vec<Vec<f32>>, Usage), ApiError> {
    let text = answer.to_string();
    let bad = |what: &str| error::protocol(format_args!("an embeddings answer {what}"), &text);
    let data = answer["data"]
        .as_array()
        .ok_or_else(|| bad("without a `data` list"))?;
    if data.len() != expected {
        return Err(bad(&format!(
            "with {} vectors for {expected} texts",
            data.len()
        )));
    }
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in data.iter().enumerate() {
        let index = match item.get("index") {
            Some(i) => i
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .ok_or_else(|| bad("with an index that is not a number"))?,
            None => position,
        };
        let slot = vectors
            .get_mut(index)
            .ok_or_else(|| bad(&format!("with the index {index}, past the texts")))?;
        if slot.is_some() {
            return Err(bad(&format!("with the index {index} twice")));
        }
        let numbers = item["embedding"]
            .as_array()
            .ok_or_else(|| bad("whose `embedding` is not a list of numbers"))?;
        let vector = numbers
            .iter()
            .map(|n| n.as_f64().map(|f| f as f32))
            .collect::<Option<Vec<f32>>>()
            .ok_or_else(|| bad("whose `embedding` is not a list of numbers"))?;
        *slot = Some(vector);
    }
    let usage = Usage::new(answer["usage"]["prompt_tokens"].as_u64().unwrap_or(0), 0);
    // Every slot is filled: as many items as texts, each index once and in range.
    Ok((vectors.into_iter().flatten().collect(), usage))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_come_back_in_input_order_whatever_the_answers_order() {
        let answer = json!({
            "data": [
                {"index": 1, "embedding": [0.5, 0.25]},
                {"index": 0, "embedding": [1, 0]},
            ],
            "usage": {"prompt_tokens": 7, "total_tokens": 7}
        });
        let (vectors, usage) = read(&answer, 2).unwrap();
        assert_eq!(vectors, [vec![1.0, 0.0], vec![0.5, 0.25]]);
        assert_eq!(usage, Usage::new(7, 0));
    }

    #[test]
    fn a_wrong_count_a_repeated_or_wild_index_or_a_non_number_is_a_protocol_error() {
        let one = |e: Value| json!({"data": [e]});
        for (answer, expected, words) in [
            (json!({"data": []}), 1, "with 0 vectors for 1 texts"),
            (json!({}), 1, "without a `data` list"),
            (
                one(json!({"index": 5, "embedding": [1]})),
                1,
                "past the texts",
            ),
            (
                one(json!({"index": 0, "embedding": ["x"]})),
                1,
                "not a list of numbers",
            ),
            (
                json!({"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [2]}]}),
                2,
                "the index 0 twice",
            ),
        ] {
            let err = read(&answer, expected).unwrap_err();
            assert!(err.message.contains(words), "{}", err.message);
            assert!(!err.retryable);
        }
    }
}
