//! Both macros in a crate without the prelude and without imports: generated code names only
//! `::core` and the runtime's hidden paths.
#![no_implicit_prelude]

/// Upper-cases streamed text.
#[::processors::processor(output_stream)]
fn shout(chunk: &::processors::Chunk) -> ::processors::prelude::StreamAction {
    let upper = ::processors::Chunk::map_text(::core::clone::Clone::clone(chunk), |t| t.to_uppercase());
    ::core::convert::Into::into(upper)
}

/// Rejects empty answers; reads the message list.
#[::processors::processor(output_step)]
async fn not_empty(
    text: &str,
    list: &::processors::MessageList,
    abort: ::processors::Abort,
) -> ::core::result::Result<(), ::processors::ProcessorError> {
    let _ = list;
    match text.is_empty() {
        true => ::core::result::Result::Err(::core::convert::Into::into(abort.reason("say something"))),
        false => ::core::result::Result::Ok(()),
    }
}

/// Counts input messages in its state.
struct Notes;

#[::processors::processor(id = "notes")]
impl Notes {
    async fn process_input(
        &self,
        messages: ::std::vec::Vec<::processors::Message>,
        state: &mut usize,
    ) -> ::std::vec::Vec<::processors::Message> {
        *state += messages.len();
        messages
    }

    fn process_output_result(&self, state: &mut usize) {
        *state = 0;
    }
}

fn main() {
    let agent = ::processors::agent! {
        name: "plain",
        model: ::processors::prelude::ScriptedModel::new([::processors::prelude::Turn::text("hello")]),
        input: [Notes],
        output: [Shout, NotEmpty, Notes],
        max_processor_retries: 1,
    };
    let result = ::futures::executor::block_on(agent.generate("hi")).unwrap();
    ::core::assert_eq!(result.text, "HELLO");
    ::core::assert_eq!(Notes::ID, "notes");
}
