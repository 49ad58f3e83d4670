//! DirectoryContext (behaviour 86 of docs/builtins.md): the listing's order, depth, limits,
//! ignore files, hidden entries, and the system message.

use crate::common;

use common::{saved, temp_dir, thread};
use futures::executor::block_on;
use processors_builtins::ConfigError;
use processors_builtins::DirectoryContext;
use processors_builtins::directory_context::DIRECTORY_TAG;
use processors_runtime::prelude::*;
use std::path::{Path, PathBuf};

fn write(root: &Path, path: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "").unwrap();
}

/// The listing's lines between its first and last.
fn lines(listing: &str) -> Vec<&str> {
    let lines: Vec<&str> = listing.lines().collect();
    lines[1..lines.len() - 1].to_vec()
}

/// A project: sources, a build folder and logs the ignore file leaves out, hidden files.
fn project(name: &str) -> PathBuf {
    let root = temp_dir(name);
    for path in [
        "src/lib.rs",
        "src/billing/mod.rs",
        "src/billing/tax.rs",
        "target/debug/app",
        "build.log",
        "docs/guide.md",
        "docs/keep.log",
        ".env",
        ".github/ci.yml",
        ".git/HEAD",
        "Cargo.toml",
        "README.md",
    ] {
        write(&root, path);
    }
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n!docs/keep.log\n").unwrap();
    root
}

#[test]
fn bi_86_folders_first_by_name_as_deep_as_asked_without_what_is_ignored() {
    let root = project("listing");
    let listing = DirectoryContext::builder(&root).build().unwrap().listing();
    assert!(listing.starts_with(&format!("<directory path=\"{}\">\n", root.display())));
    assert!(listing.ends_with("\n</directory>"));
    assert_eq!(
        lines(&listing),
        [
            "docs/",
            "  guide.md",
            "  keep.log",
            "src/",
            "  billing/",
            "  lib.rs",
            "Cargo.toml",
            "README.md",
        ]
    );

    // Deeper, with hidden entries, without the ignore files.
    let all = DirectoryContext::builder(&root)
        .max_depth(3)
        .hidden(true)
        .ignore_files(false)
        .build()
        .unwrap()
        .listing();
    let all = lines(&all);
    for line in [
        "  billing/",
        "    mod.rs",
        "    tax.rs",
        "target/",
        "  debug/",
        "build.log",
        ".env",
        ".github/",
        ".gitignore",
    ] {
        assert!(all.contains(&line), "{line:?} in {all:?}");
    }
    assert!(!all.iter().any(|l| l.trim() == ".git/"), "{all:?}");
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn past_the_limit_entries_are_counted_not_listed() {
    let root = temp_dir("limit");
    for i in 0..12 {
        write(&root, &format!("f{i:02}.txt"));
    }
    let listing = |n| {
        DirectoryContext::builder(&root)
            .max_entries(n)
            .build()
            .unwrap()
            .listing()
    };
    assert_eq!(
        lines(&listing(10)),
        [
            "f00.txt",
            "f01.txt",
            "f02.txt",
            "f03.txt",
            "f04.txt",
            "f05.txt",
            "f06.txt",
            "f07.txt",
            "f08.txt",
            "f09.txt",
            "[2 more entries not listed]"
        ]
    );
    assert_eq!(
        lines(&listing(11)).last(),
        Some(&"[1 more entry not listed]")
    );
    assert_eq!(lines(&listing(12)).last(), Some(&"f11.txt"));
    std::fs::remove_dir_all(&root).ok();
}

#[cfg(unix)]
#[test]
fn symbolic_links_are_listed_not_followed() {
    let root = temp_dir("links");
    let outside = temp_dir("links-outside");
    write(&outside, "secret/key.pem");
    std::os::unix::fs::symlink(outside.join("secret"), root.join("linked")).unwrap();
    let listing = DirectoryContext::builder(&root)
        .max_depth(3)
        .build()
        .unwrap()
        .listing();
    assert_eq!(lines(&listing), ["linked"]);
    std::fs::remove_dir_all(&root).ok();
    std::fs::remove_dir_all(&outside).ok();
}

#[test]
fn the_listing_is_one_system_message_read_at_each_run_and_never_saved() {
    let root = temp_dir("message");
    write(&root, "a.txt");
    let store = InMemoryStore::new();
    let model = ScriptedModel::cycle([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .memory(Memory::new(store.clone()))
        .input(DirectoryContext::builder(&root).build().unwrap())
        .build()
        .unwrap();
    block_on(agent.generate_with("hi", thread())).unwrap();
    write(&root, "b.txt");
    block_on(agent.generate_with("again", thread())).unwrap();
    let system: Vec<String> = model.requests()[1]
        .prompt
        .iter()
        .filter(|m| m.role == Role::System)
        .map(Message::text)
        .collect();
    assert_eq!(system.len(), 1);
    assert_eq!(lines(&system[0]), ["a.txt", "b.txt"]);
    assert!(saved(&store).iter().all(|m| m.role != Role::System));
    assert_eq!(DIRECTORY_TAG, "directory");
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn bad_configurations_are_errors_from_build() {
    let e = DirectoryContext::builder("/no/such/dir")
        .build()
        .unwrap_err();
    assert!(matches!(e, ConfigError::File { .. }), "{e}");
    let root = temp_dir("bad");
    write(&root, "file.txt");
    let e = DirectoryContext::builder(root.join("file.txt"))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("must be a folder"), "{e}");
    for e in [
        DirectoryContext::builder(&root)
            .max_depth(0)
            .build()
            .unwrap_err(),
        DirectoryContext::builder(&root)
            .max_entries(0)
            .build()
            .unwrap_err(),
    ] {
        assert!(matches!(e, ConfigError::Zero { .. }), "{e}");
    }
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn ignore_files_apply_outside_a_repository_and_excludes_inside_one() {
    let plain = temp_dir("plain");
    write(&plain, "app.rs");
    write(&plain, "debug.log");
    write(&plain, "notes.tmp");
    std::fs::write(plain.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(plain.join(".ignore"), "*.tmp\n").unwrap();
    let listing = DirectoryContext::builder(&plain).build().unwrap().listing();
    assert_eq!(lines(&listing), ["app.rs"]);

    let repo = temp_dir("repo");
    write(&repo, ".git/HEAD");
    write(&repo, "app.rs");
    write(&repo, "secret.env");
    std::fs::create_dir_all(repo.join(".git/info")).unwrap();
    std::fs::write(repo.join(".git/info/exclude"), "*.env\n").unwrap();
    let listing = DirectoryContext::builder(&repo).build().unwrap().listing();
    assert_eq!(lines(&listing), ["app.rs"]);
    std::fs::remove_dir_all(&plain).ok();
    std::fs::remove_dir_all(&repo).ok();
}
