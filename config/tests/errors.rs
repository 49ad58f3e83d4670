//! What a user sees for each mistake of a file: the exact messages, with their places.

use processors_config::{LoadError, Loader, Registry};

fn errors(text: &str) -> String {
    match Loader::new().env(|_| None).agent_str("agent.toml", text) {
        Ok(_) => panic!("the file loaded"),
        Err(e) => e.to_string(),
    }
}

fn lists_errors(text: &str) -> String {
    Loader::new()
        .lists_str("lists.toml", text)
        .map(|_| ())
        .unwrap_err()
        .to_string()
}

const MODEL: &str = "model = { scripted = [\"Hi.\"] }\n";

#[test]
fn probe() {
    for text in [
        "model = { scripted = [\"Hi.\"] }\ninput = [\"batch-parts\"]\n",
        "model = { scripted = [\"Hi.\"] }\nouput = [\"batch-parts\"]\n",
        "model = { scripted = [\"Hi.\"] }\noutput = [{ processor = \"regex-filter\", strategy = \"redcat\" }]\n",
        "model = { scripted = [\"Hi.\"] }\ninput = [{ processor = \"token-limiter\", limit = 0 }]\n",
        "model = { scripted = [\"Hi.\"] }\ninput = [{ processor = \"token-limiter\" }]\n",
        "model = { scripted = [\"Hi.\"] }\ninput = [\"token-limiter\"]\n",
        "model = { scripted = [\"Hi.\"] }\noutput = [\"batch-parts\", \"batch-parts\"]\n",
        "model = { scripted = [\"Hi.\"] }\noutput = [\"memory\", \"batch-parts\"]\nmemory = { store = \"in-memory\" }\n",
        "model = { scripted = [\"Hi.\"] }\ninput = [\"memory\"]\n",
        "model = { scripted = [\"Hi.\"] }\nerror = [\"memory\"]\nmemory = { store = \"in-memory\" }\n",
        "model = { scripted = [\"Hi.\"] }\ninput = [\"memory\", \"memory\"]\nmemory = { store = \"in-memory\" }\n",
        "model = { scripted = [\"Hi.\"] }\nmemory = { store = \"sqlit\" }\n",
        "model = { scripted = [\"Hi.\"] }\nmemory = { store = \"sqlite\" }\n",
        "model = \"openai/gpt-4o-mini\"\n",
        "model = \"gpt-4o\"\n",
        "model = \"mistery/m\"\n",
        "model = 3\n",
        "input = [\"batch-parts\"]\n",
        "model = { scripted = [\"Hi.\"] }\nmax_processor_retries = 2\n",
        "model = { scripted = [\"Hi.\"] }\nmax_processor_retries = 0\nerror = [\"prefill-error-handler\"]\n",
        "model = { scripted = [\"Hi.\"] }\nmax_steps = 0\n",
        "model = { scripted = [\"Hi.\"] }\nmax_steps = -1\n",
        "model = { scripted = [\"Hi.\"] }\ninput = \"batch-parts\"\n",
        "model = { scripted = [\"Hi.\"] }\ninput = [3]\n",
        "model = { scripted = [\"Hi.\"] }\ninput = [{ limit = 3 }]\n",
        "model = { scripted = [\"Hi.\"] }\n[[input]]\nprocessor = \"regex-filter\"\npresets = [\"pi\"]\n",
        "model = [\n",
        "a = 1\na = 2\n",
        "model = { scripted = [\"Hi.\"] }\ninput = [{ processor = \"moderation\", judge = \"gpt\" }]\n",
        "model = { scripted = [\"Hi.\"] }\ninput = [{ processor = \"working-memory\" }]\n",
    ] {
        println!("----\n{text}=> {}", errors(text));
    }
    println!("----lists {}", lists_errors("model = \"x\"\ninput = [\"memory\"]\n"));
    let _ = (MODEL, Registry::new(), std::marker::PhantomData::<LoadError>);
}
