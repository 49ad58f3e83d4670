//! `system-prompt-injector`, `environment-context`, `at-file-expansion`, `slash-commands`,
//! `memory-import`, `editor-context`, `directory-context`, `memory-input-filter`,
//! `working-memory`.

use super::{NoOptions, set};
use crate::registry::{Cx, Refusal, Registry};
use processors_builtins::at_file::OnRefusal;
use processors_builtins::shell_injection::ShellInjection;
use processors_builtins::slash_commands::OnUnknown;
use processors_builtins::{
    AtFileExpansion, DirectoryContext, EditorContext, EnvironmentContext, MemoryImport,
    MemoryInputFilter, SlashCommands, SystemPromptInjector, WorkingMemory,
};
use processors_runtime::memory::WorkingMemoryScope;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub(super) fn register(registry: Registry) -> Registry {
    registry
        .builtin("system-prompt-injector", system_prompt_injector)
        .builtin("environment-context", environment_context)
        .builtin("at-file-expansion", at_file_expansion)
        .builtin("slash-commands", slash_commands)
        .builtin("memory-import", memory_import)
        .builtin("editor-context", editor_context)
        .builtin("directory-context", directory_context)
        .builtin("memory-input-filter", memory_input_filter)
        .builtin("working-memory", working_memory)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InjectorOptions {
    text: String,
    #[serde(default)]
    first: bool,
}

fn system_prompt_injector(o: InjectorOptions, _: &Cx<'_>) -> Result<SystemPromptInjector, Refusal> {
    if o.text.trim().is_empty() {
        return Err(Refusal::Option(
            "text",
            "`text` is empty; give the instructions to add".to_owned(),
        ));
    }
    let injector = SystemPromptInjector::new(o.text);
    Ok(match o.first {
        true => injector.first(),
        false => injector,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvironmentOptions {
    #[serde(default)]
    cwd: bool,
    cwd_at: Option<PathBuf>,
    #[serde(default)]
    git_branch: bool,
    #[serde(default)]
    date: bool,
    #[serde(default)]
    os: bool,
}

fn environment_context(o: EnvironmentOptions, cx: &Cx<'_>) -> Result<EnvironmentContext, Refusal> {
    let mut e = EnvironmentContext::new();
    e = set(e, o.cwd.then_some(()), |e, ()| e.cwd());
    e = set(e, o.cwd_at, |e, dir| e.cwd_at(cx.path(&dir)));
    e = set(e, o.git_branch.then_some(()), |e, ()| e.git_branch());
    e = set(e, o.date.then_some(()), |e, ()| e.date());
    e = set(e, o.os.then_some(()), |e, ()| e.os());
    match o.cwd || o.git_branch || o.date || o.os {
        true => Ok(e),
        false => Err(Refusal::Other(
            "it would tell the model nothing; turn on at least one of `cwd`, `git_branch`, `date` and `os`".to_owned(),
        )),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SlashOptions {
    /// Name to template.
    #[serde(default)]
    commands: BTreeMap<String, String>,
    dir: Option<PathBuf>,
    on_unknown: Option<OnUnknown>,
    shell: Option<ShellOptions>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShellOptions {
    allow: Vec<String>,
    timeout_ms: Option<u64>,
    max_output: Option<usize>,
    dir: Option<PathBuf>,
}

fn slash_commands(o: SlashOptions, cx: &Cx<'_>) -> Result<SlashCommands, Refusal> {
    let mut b = SlashCommands::builder();
    for (name, template) in o.commands {
        b = b.command(name, template);
    }
    b = set(b, o.dir, |b, d| b.dir(cx.path(&d)));
    b = set(b, o.on_unknown, |b, u| b.on_unknown(u));
    if let Some(s) = o.shell {
        let mut shell = ShellInjection::allow(s.allow);
        shell = set(shell, s.timeout_ms, |sh, ms| {
            sh.timeout(Duration::from_millis(ms))
        });
        shell = set(shell, s.max_output, |sh, n| sh.max_output(n));
        shell = set(shell, s.dir, |sh, d| sh.dir(cx.path(&d)));
        b = b.shell(shell);
    }
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryImportOptions {
    root: PathBuf,
    #[serde(default)]
    files: Vec<String>,
    max_bytes: Option<u64>,
    max_depth: Option<usize>,
    on_refusal: Option<OnRefusal>,
}

fn memory_import(o: MemoryImportOptions, cx: &Cx<'_>) -> Result<MemoryImport, Refusal> {
    let mut b = MemoryImport::builder(cx.path(&o.root));
    for file in o.files {
        b = b.file(file);
    }
    b = set(b, o.max_bytes, |b, n| b.max_bytes(n));
    b = set(b, o.max_depth, |b, n| b.max_depth(n));
    b = set(b, o.on_refusal, |b, r| b.on_refusal(r));
    Ok(b.build()?)
}

fn memory_input_filter(_: NoOptions, _: &Cx<'_>) -> Result<MemoryInputFilter, Refusal> {
    Ok(MemoryInputFilter::new())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DirectoryOptions {
    root: PathBuf,
    max_depth: Option<usize>,
    max_entries: Option<usize>,
    hidden: Option<bool>,
    ignore_files: Option<bool>,
}

fn directory_context(o: DirectoryOptions, cx: &Cx<'_>) -> Result<DirectoryContext, Refusal> {
    let mut b = DirectoryContext::builder(cx.path(&o.root));
    b = set(b, o.max_depth, |b, n| b.max_depth(n));
    b = set(b, o.max_entries, |b, n| b.max_entries(n));
    b = set(b, o.hidden, |b, h| b.hidden(h));
    b = set(b, o.ignore_files, |b, i| b.ignore_files(i));
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditorOptions {
    max_selection: Option<usize>,
}

fn editor_context(o: EditorOptions, _: &Cx<'_>) -> Result<EditorContext, Refusal> {
    Ok(set(EditorContext::new(), o.max_selection, |e, n| {
        e.max_selection(n)
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AtFileOptions {
    root: PathBuf,
    max_bytes: Option<u64>,
    max_files: Option<usize>,
    on_refusal: Option<OnRefusal>,
}

fn at_file_expansion(o: AtFileOptions, cx: &Cx<'_>) -> Result<AtFileExpansion, Refusal> {
    let root = cx.path(&o.root);
    let mut e = AtFileExpansion::new(&root).map_err(|error| {
        Refusal::Option(
            "root",
            format!("cannot use {} as the root: {error}", root.display()),
        )
    })?;
    e = set(e, o.max_bytes, |e, n| e.max_bytes(n));
    e = set(e, o.max_files, |e, n| e.max_files(n));
    e = set(e, o.on_refusal, |e, r| e.on_refusal(r));
    Ok(e)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkingMemoryOptions {
    scope: Option<WorkingMemoryScope>,
    template: Option<String>,
}

fn working_memory(o: WorkingMemoryOptions, cx: &Cx<'_>) -> Result<WorkingMemory, Refusal> {
    let store = cx.memory()?.store().clone();
    let mut w = WorkingMemory::shared(store);
    w = set(w, o.scope, |w, s| w.scope(s));
    w = set(w, o.template, |w, t| w.template(t));
    Ok(w)
}
