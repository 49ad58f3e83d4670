// Processors shared by the agent! cases (included with `include!`).

/// Upper-cases streamed text (output only).
#[processor(output_stream)]
fn shout(chunk: &Chunk) -> StreamAction {
    let _ = chunk;
    StreamAction::Pass
}

/// Trims the input (input only).
#[processor(input)]
fn trim(messages: Vec<Message>) -> Vec<Message> {
    messages
}

/// Rejects empty answers, asking for a retry (output step).
#[processor(output_step)]
fn not_empty(text: &str, abort: Abort) -> Result<(), ProcessorError> {
    if text.is_empty() {
        return Err(abort.reason("say something").retry(true).into());
    }
    Ok(())
}

/// Retries rejected requests (error).
#[processor(api_error)]
fn retry_all() -> ApiErrorAction {
    ApiErrorAction::Retry
}
