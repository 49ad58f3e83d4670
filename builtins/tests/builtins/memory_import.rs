//! MemoryImport (behaviour 84 of docs/builtins.md): instruction files with nested imports,
//! what is not an import, cycles, escapes, limits, refusals, and the system message.

use crate::common;

use common::{saved, temp_dir, thread};
use futures::executor::block_on;
use processors_builtins::ConfigError;
use processors_builtins::MemoryImport;
use processors_builtins::at_file::OnRefusal;
use processors_builtins::memory_import::MEMORY_IMPORT_TAG;
use processors_runtime::prelude::*;
use std::path::Path;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn noting(root: &Path) -> MemoryImport {
    MemoryImport::builder(root)
        .on_refusal(OnRefusal::Note)
        .build()
        .unwrap()
}

#[test]
fn bi_84_imports_nest_relative_to_the_file_that_imports_them() {
    let root = temp_dir("nest");
    write(
        &root,
        "AGENTS.md",
        "# Rules\n@docs/style.md\nSee @docs/style.md for more.\n  @docs/api/limits.md  \n",
    );
    write(&root, "docs/style.md", "Short sentences.\n@api/limits.md\n");
    write(&root, "docs/api/limits.md", "At most 10 calls.\n");
    let text = noting(&root).load().unwrap().unwrap();
    assert_eq!(
        text,
        "<memory path=\"AGENTS.md\">\n# Rules\nShort sentences.\nAt most 10 calls.\n\
         See @docs/style.md for more.\n[@docs/api/limits.md: imported above]\n</memory>"
    );
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn code_blocks_addresses_and_names_are_not_imports() {
    let root = temp_dir("not-imports");
    write(
        &root,
        "AGENTS.md",
        "```\n@secret.md\n```\n~~~sh\n```\n@secret.md\n~~~\n@alice\nmail @bob@example.com\n",
    );
    write(&root, "secret.md", "never read");
    let text = noting(&root).load().unwrap().unwrap();
    assert!(!text.contains("never read"), "{text}");
    assert!(text.contains("```\n@secret.md\n```\n~~~sh\n```\n@secret.md\n~~~\n@alice\n"));
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn cycles_escapes_and_limits_are_refused_with_a_note_or_a_trip_wire() {
    let dir = temp_dir("refusals");
    let root = dir.join("root");
    write(&dir, "secret.md", "top secret");
    write(&root, "a.md", "A\n@b.md\n");
    write(&root, "b.md", "B\n@a.md\n");
    write(&root, "big.md", &"x".repeat(2_000));
    write(&root, "bin.md", "");
    std::fs::write(root.join("bin.md"), [0xff, 0xfe]).unwrap();
    write(&root, "deep/1.md", "@2.md\n");
    write(&root, "deep/2.md", "@3.md\n");
    write(&root, "deep/3.md", "bottom\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.join("secret.md"), root.join("link.md")).unwrap();
    let imports = |file: &str, text: &str| {
        write(&root, file, text);
        MemoryImport::builder(&root)
            .file(file)
            .max_bytes(1_000)
            .max_depth(2)
            .on_refusal(OnRefusal::Note)
            .build()
            .unwrap()
            .load()
            .unwrap()
            .unwrap()
    };
    let cycle = imports("start.md", "@a.md\n");
    assert!(
        cycle.contains(
            "A\nB\n[@a.md was not imported: it imports itself through the files that import it]"
        ),
        "{cycle}"
    );
    let escapes = imports(
        "start.md",
        "@../secret.md\n@link.md\n@/etc/hosts\n@missing.md\n",
    );
    assert!(!escapes.contains("top secret"), "{escapes}");
    assert!(escapes.contains("[@../secret.md was not imported: the path leads outside the root]"));
    #[cfg(unix)]
    assert!(escapes.contains("[@link.md was not imported: the path leads outside the root]"));
    assert!(escapes.contains("[@/etc/hosts was not imported: absolute paths are not allowed"));
    assert!(escapes.contains("[@missing.md was not imported: no such file under the root]"));
    let limits = imports("start.md", "@big.md\n@bin.md\n@deep/1.md\n");
    assert!(limits.contains("[@big.md was not imported: 2000 bytes, over what is left"));
    assert!(limits.contains("[@bin.md was not imported: not UTF-8 text]"));
    assert!(limits.contains("[@3.md was not imported: imports nest deeper than 2]"));

    // Under the default, the run ends before the model is called, naming the import.
    write(&root, "AGENTS.md", "@a.md\n");
    let model = ScriptedModel::new([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(MemoryImport::builder(&root).build().unwrap())
        .build()
        .unwrap();
    let trip = block_on(agent.generate("hi"))
        .unwrap()
        .tripwire
        .expect("a trip wire");
    assert_eq!(
        trip.reason,
        "@a.md: it imports itself through the files that import it"
    );
    assert_eq!(trip.processor_id, "memory-import");
    assert_eq!(model.calls(), 0);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_files_are_one_system_message_read_at_each_run_and_never_saved() {
    let root = temp_dir("message");
    write(&root, "AGENTS.md", "first");
    write(&root, "TEAM.md", "team");
    let store = InMemoryStore::new();
    let model = ScriptedModel::cycle([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .memory(Memory::new(store.clone()))
        .input(
            MemoryImport::builder(&root)
                .file("AGENTS.md")
                .file("TEAM.md")
                .file("MISSING.md")
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    block_on(agent.generate_with("hi", thread())).unwrap();
    write(&root, "AGENTS.md", "second");
    block_on(agent.generate_with("again", thread())).unwrap();
    let prompt = &model.requests()[1].prompt;
    let system: Vec<String> = prompt
        .iter()
        .filter(|m| m.role == Role::System)
        .map(Message::text)
        .collect();
    assert_eq!(
        system,
        [
            "<memory path=\"AGENTS.md\">\nsecond\n</memory>\n\n<memory path=\"TEAM.md\">\nteam\n</memory>"
        ]
    );
    let saved = saved(&store);
    assert_eq!(saved.len(), 4, "two turns saved");
    assert!(saved.iter().all(|m| m.role != Role::System), "{saved:?}");
    assert_eq!(MEMORY_IMPORT_TAG, "memory-import");

    // No file at all: no message.
    let empty = temp_dir("empty");
    assert_eq!(
        MemoryImport::builder(&empty)
            .build()
            .unwrap()
            .load()
            .unwrap(),
        None
    );
    std::fs::remove_dir_all(&root).ok();
    std::fs::remove_dir_all(&empty).ok();
}

#[test]
fn bad_configurations_are_errors_from_build() {
    let e = MemoryImport::builder("/no/such/root").build().unwrap_err();
    assert!(matches!(e, ConfigError::File { .. }), "{e}");
    assert!(
        e.to_string().starts_with("/no/such/root cannot be used"),
        "{e}"
    );
    let e = MemoryImport::builder(".").max_bytes(0).build().unwrap_err();
    assert!(matches!(
        e,
        ConfigError::Zero {
            option: "max_bytes",
            ..
        }
    ));
}
