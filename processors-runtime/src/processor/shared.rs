//! A processor behind a shared pointer is a processor: `Arc<P>` and `&'static P` run `P`'s
//! hooks, under `P`'s id and with `P`'s state, so one configured value can serve several
//! agents (or lists) without being cloned.

use super::table::for_each_hook;
use super::*;
use std::sync::Arc;

/// Implements, from the hook table, each hook of a pointer type by calling the pointee's.
macro_rules! delegate_hooks {
    ($a:lifetime; $(
        $hook:ident {
            method: $method:ident, dyn_method: $dyn_method:ident,
            args: $args:ident, parts: $parts:ident, extractor: $extractor:ident,
            outcome: $outcome:ty, context: $context:ident,
            $($rest:tt)*
        }
    )*) => { $(
        #[inline]
        fn $method(
            &self,
            args: $args<'_, Self::State>,
        ) -> impl Future<Output = Result<$outcome, ProcessorError>> + Send {
            P::$method(self, args)
        }
    )* };
}

/// Implements [`Processor`] and the marker traits for a pointer to a processor.
macro_rules! shared_processor {
    ($($pointer:ty),*) => { $(
        impl<P: Processor> Processor for $pointer {
            type State = P::State;
            const HOOKS: Hooks = P::HOOKS;
            const STATIC_ID: Option<&'static str> = P::STATIC_ID;
            const READS_MESSAGES: Hooks = P::READS_MESSAGES;
            const SYNC_HOOKS: Hooks = P::SYNC_HOOKS;

            #[inline]
            fn id(&self) -> &str {
                P::id(self)
            }

            #[inline]
            fn hooks(&self) -> Hooks {
                P::hooks(self)
            }

            #[inline]
            fn __type_id(&self) -> std::any::TypeId {
                P::__type_id(self)
            }

            #[inline]
            fn process_data_parts(&self) -> bool {
                P::process_data_parts(self)
            }

            #[inline]
            fn keeps_stream_history(&self) -> bool {
                P::keeps_stream_history(self)
            }

            for_each_hook!(delegate_hooks);
        }

        impl<P: InputProcessor> InputProcessor for $pointer {}
        impl<P: OutputProcessor> OutputProcessor for $pointer {}
        impl<P: ErrorProcessor> ErrorProcessor for $pointer {}
        impl<P: crate::processor::known::Known> crate::processor::known::Known for $pointer {
            const HOOKS: Hooks = <P as crate::processor::known::Known>::HOOKS;
            const STATIC_ID: Option<&'static str> = <P as crate::processor::known::Known>::STATIC_ID;
        }
        impl<P: crate::processor::known::Retries> crate::processor::known::Retries for $pointer {
            type Asks = P::Asks;
        }
    )* };
}

shared_processor!(Arc<P>, &'static P);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prelude::*;

    struct Upper {
        id: &'static str,
    }

    impl Processor for Upper {
        type State = usize;
        const HOOKS: Hooks = Hooks::OUTPUT_STREAM;
        const STATIC_ID: Option<&'static str> = Some("upper");
        fn id(&self) -> &str {
            self.id
        }
        async fn process_output_stream(
            &self,
            args: OutputStreamArgs<'_, usize>,
        ) -> Result<StreamAction, ProcessorError> {
            *args.state += 1;
            Ok(args.chunk.clone().map_text(|t| t.to_uppercase()).into())
        }
    }
    impl OutputProcessor for Upper {}

    static SHARED: Upper = Upper { id: "upper" };

    fn output<P: OutputProcessor>(_: &P) -> (Hooks, Option<&'static str>) {
        (P::HOOKS, P::STATIC_ID)
    }

    #[test]
    fn a_pointer_to_a_processor_has_its_hooks_id_and_state() {
        let arc = Arc::new(Upper { id: "upper" });
        assert_eq!(output(&arc), (Hooks::OUTPUT_STREAM, Some("upper")));
        assert_eq!(output(&&SHARED), (Hooks::OUTPUT_STREAM, Some("upper")));
        assert_eq!(arc.dyn_id(), "upper");
        assert_eq!(arc.dyn_state_type().0, std::any::TypeId::of::<usize>());
    }

    fn run<O: Pipeline>(output: O, text: &str) -> String {
        let agent = Agent::builder()
            .model(ScriptedModel::new([Turn::text(text)]))
            .output_pipeline(output)
            .build()
            .expect("a valid agent");
        futures::executor::block_on(agent.generate("hi"))
            .expect("a run")
            .text
            .into()
    }

    #[test]
    fn one_shared_processor_serves_two_agents() {
        let shared = Arc::new(Upper { id: "upper" });
        assert_eq!(run((Arc::clone(&shared),), "hello"), "HELLO");
        assert_eq!(run((shared,), "bye"), "BYE");
        assert_eq!(run((&SHARED,), "static"), "STATIC");
    }
}
