//! `MessageList` under arbitrary sequences of its operations, against a model of what each
//! one documents: the conversation keeps its order and sources, system messages stay apart
//! from it, and no id is ever held twice.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use processors_runtime::message::{Message, MessageList, MessageSource, Role};
use std::collections::HashSet;

/// A message: an id from a small pool (so operations meet the same ids), and a role.
#[derive(Arbitrary, Debug, Clone, Copy)]
struct Msg {
    id: u8,
    role: u8,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Source {
    Input,
    Response,
    Memory,
    Context,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Add(Msg, Source),
    AddAll(Vec<Msg>, Source),
    Remove(Vec<u8>),
    Replace(Msg),
    AddSystem(Msg, Option<u8>),
    ReplaceAllSystem(Vec<Msg>),
    ClearTag(u8),
    Reconcile {
        view: Vec<u8>,
        returned: Vec<Msg>,
        source: Source,
    },
    ReconcileSystem(Vec<Msg>),
    AddRemembered(Vec<Msg>),
}

const IDS: u8 = 8;
const TAGS: [&str; 3] = ["t0", "t1", "t2"];

fn id(n: u8) -> String {
    format!("m{}", n % IDS)
}

fn source(s: Source) -> MessageSource {
    match s {
        Source::Input => MessageSource::Input,
        Source::Response => MessageSource::Response,
        Source::Memory => MessageSource::Memory,
        Source::Context => MessageSource::Context,
    }
}

/// What the model knows of a message: its id, role and version (the text it carries).
#[derive(Debug, Clone, PartialEq)]
struct M {
    id: String,
    role: Role,
    text: String,
}

impl M {
    fn of(m: &Message) -> M {
        M {
            id: m.id.clone(),
            role: m.role,
            text: m.text(),
        }
    }
}

/// The list as its documentation describes it.
#[derive(Debug, Default)]
struct Model {
    entries: Vec<(M, MessageSource)>,
    system: Vec<M>,
    tagged: Vec<(String, M)>,
}

impl Model {
    fn ids(&self) -> HashSet<String> {
        self.entries
            .iter()
            .map(|(m, _)| m.id.clone())
            .chain(self.system.iter().map(|m| m.id.clone()))
            .chain(self.tagged.iter().map(|(_, m)| m.id.clone()))
            .collect()
    }

    fn add(&mut self, m: M, s: MessageSource) {
        if m.role == Role::System {
            self.system.push(m);
        } else {
            self.entries.push((m, s));
        }
    }

    /// Takes the message with this id out of wherever it is.
    fn take(&mut self, id: &str) -> Vec<M> {
        let mut out = Vec::new();
        self.entries.retain(|(m, _)| {
            let hit = m.id == id;
            if hit {
                out.push(m.clone());
            }
            !hit
        });
        self.system.retain(|m| {
            let hit = m.id == id;
            if hit {
                out.push(m.clone());
            }
            !hit
        });
        self.tagged.retain(|(_, m)| {
            let hit = m.id == id;
            if hit {
                out.push(m.clone());
            }
            !hit
        });
        out
    }

    fn replace(&mut self, m: M) -> bool {
        if let Some(i) = self.entries.iter().position(|(e, _)| e.id == m.id) {
            if m.role == Role::System {
                self.entries.remove(i);
                self.system.push(m);
            } else {
                self.entries[i].0 = m;
            }
            return true;
        }
        if let Some(i) = self.system.iter().position(|s| s.id == m.id) {
            if m.role == Role::System {
                self.system[i] = m;
            } else {
                self.system.remove(i);
                self.entries.push((m, MessageSource::Context));
            }
            return true;
        }
        false
    }

    fn reconcile(&mut self, view: &[String], returned: Vec<M>, s: MessageSource) -> bool {
        let mut seen = HashSet::new();
        if !returned.iter().all(|m| seen.insert(m.id.clone())) {
            return false;
        }
        self.entries
            .retain(|(e, _)| !view.contains(&e.id) || seen.contains(&e.id));
        for m in returned {
            if m.role == Role::System {
                self.entries.retain(|(e, _)| e.id != m.id);
                if let Some(x) = self.system.iter_mut().find(|x| x.id == m.id) {
                    *x = m;
                } else if let Some((_, x)) = self.tagged.iter_mut().find(|(_, x)| x.id == m.id) {
                    *x = m;
                } else {
                    self.system.push(m);
                }
            } else if let Some((e, _)) = self.entries.iter_mut().find(|(e, _)| e.id == m.id) {
                *e = m;
            } else {
                self.take(&m.id);
                self.entries.push((m, s));
            }
        }
        true
    }

    fn reconcile_system(&mut self, returned: Vec<M>) -> bool {
        let mut seen = HashSet::new();
        if !returned
            .iter()
            .all(|m| m.role == Role::System && seen.insert(m.id.clone()))
        {
            return false;
        }
        self.entries.retain(|(e, _)| !seen.contains(&e.id));
        self.tagged.retain(|(_, e)| !seen.contains(&e.id));
        self.system = returned;
        true
    }

    fn add_remembered(&mut self, ms: Vec<M>) {
        let mut at = self
            .entries
            .iter()
            .rposition(|(_, s)| *s == MessageSource::Memory)
            .map_or(0, |i| i + 1);
        for m in ms {
            if m.role == Role::System {
                self.system.push(m);
            } else {
                self.entries.insert(at, (m, MessageSource::Memory));
                at += 1;
            }
        }
    }
}

struct Harness {
    list: MessageList,
    model: Model,
    version: u32,
}

impl Harness {
    /// A fresh message (a new version of the id).
    fn message(&mut self, m: Msg) -> Message {
        self.version += 1;
        let role = match m.role % 4 {
            0 => Role::User,
            1 => Role::Assistant,
            2 => Role::System,
            _ => Role::Tool,
        };
        let mut message = Message::new(
            role,
            vec![processors_runtime::message::Part::Text {
                text: format!("v{}", self.version).into(),
            }],
        );
        message.id = id(m.id);
        message
    }

    /// Messages to add: those whose ids the list does not hold yet (adding a held id is the
    /// caller's mistake, which the list does not check).
    fn fresh(&mut self, ms: &[Msg], role: Option<Role>) -> Vec<Message> {
        let mut taken = self.model.ids();
        let mut out = Vec::new();
        for &m in ms {
            let mut message = self.message(m);
            if let Some(role) = role {
                message.role = role;
            }
            if taken.insert(message.id.clone()) {
                out.push(message);
            }
        }
        out
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Add(m, s) => {
                for m in self.fresh(&[m], None) {
                    self.model.add(M::of(&m), source(s));
                    self.list.add(m, source(s));
                }
            }
            Op::AddAll(ms, s) => {
                let ms = self.fresh(&ms, None);
                for m in &ms {
                    self.model.add(M::of(m), source(s));
                }
                self.list.add_all(ms, source(s));
            }
            Op::Remove(ids) => {
                let ids: Vec<String> = ids.iter().map(|&n| id(n)).collect();
                let mut expected: Vec<M> = Vec::new();
                for i in &ids {
                    expected.extend(self.model.take(i));
                }
                let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                let removed = self.list.remove(&refs);
                let mut got: Vec<String> = removed.iter().map(|m| m.id.clone()).collect();
                let mut want: Vec<String> = expected.iter().map(|m| m.id.clone()).collect();
                got.sort();
                want.sort();
                assert_eq!(got, want, "remove returns every message it removed");
            }
            Op::Replace(m) => {
                let m = self.message(m);
                let want = self.model.replace(M::of(&m));
                assert_eq!(self.list.replace(m), want, "replace found the message");
            }
            Op::AddSystem(m, tag) => {
                for m in self.fresh(&[m], Some(Role::System)) {
                    let tag = tag.map(|t| TAGS[usize::from(t) % TAGS.len()]);
                    match tag {
                        None => self.model.system.push(M::of(&m)),
                        Some(t) => self.model.tagged.push((t.to_owned(), M::of(&m))),
                    }
                    self.list.add_system(m, tag);
                }
            }
            Op::ReplaceAllSystem(ms) => {
                // The untagged system messages go; the new ones must not clash with the rest.
                self.model.system.clear();
                let ms = self.fresh(&ms, Some(Role::System));
                self.model.system = ms.iter().map(M::of).collect();
                self.list.replace_all_system(ms);
            }
            Op::ClearTag(t) => {
                let tag = TAGS[usize::from(t) % TAGS.len()];
                self.model.tagged.retain(|(x, _)| x != tag);
                self.list.clear_tag(tag);
            }
            Op::Reconcile {
                view,
                returned,
                source: s,
            } => {
                let view: Vec<String> = view.iter().map(|&n| id(n)).collect();
                let returned: Vec<Message> = returned.iter().map(|&m| self.message(m)).collect();
                let ok =
                    self.model
                        .reconcile(&view, returned.iter().map(M::of).collect(), source(s));
                let got = self.list.reconcile(&view, returned, source(s));
                assert_eq!(got.is_ok(), ok, "reconcile accepted: {got:?}");
            }
            Op::ReconcileSystem(ms) => {
                let returned: Vec<Message> = ms.iter().map(|&m| self.message(m)).collect();
                let ok = self
                    .model
                    .reconcile_system(returned.iter().map(M::of).collect());
                let got = self.list.reconcile_system(returned);
                assert_eq!(got.is_ok(), ok, "reconcile_system accepted: {got:?}");
            }
            Op::AddRemembered(ms) => {
                let ms = self.fresh(&ms, None);
                self.model.add_remembered(ms.iter().map(M::of).collect());
                self.list.add_remembered(ms);
            }
        }
    }

    fn check(&self) {
        let list = &self.list;
        let all: Vec<(M, MessageSource)> = list
            .all()
            .map(|m| {
                (
                    M::of(m),
                    list.source_of(&m.id)
                        .expect("a listed message has a source"),
                )
            })
            .collect();
        assert_eq!(all, self.model.entries, "the conversation");
        let system: Vec<M> = list.system_messages().iter().map(M::of).collect();
        assert_eq!(system, self.model.system, "the untagged system messages");
        for tag in TAGS {
            let got: Vec<M> = list.tagged_system_messages(tag).map(M::of).collect();
            let want: Vec<M> = self
                .model
                .tagged
                .iter()
                .filter(|(t, _)| t == tag)
                .map(|(_, m)| m.clone())
                .collect();
            assert_eq!(got, want, "the system messages tagged {tag}");
        }
        assert!(
            list.all().all(|m| m.role != Role::System),
            "a system message in the conversation"
        );
        assert!(
            list.all_system_messages().all(|m| m.role == Role::System),
            "a message of another role among the system messages"
        );
        let mut ids = HashSet::new();
        for m in list.all().chain(list.all_system_messages()) {
            assert!(ids.insert(&m.id), "the id {} is held twice", m.id);
        }
        assert_eq!(list.len(), self.model.entries.len());
        assert_eq!(list.to_prompt().len(), ids.len());
    }
}

fuzz_target!(|ops: Vec<Op>| {
    let mut h = Harness {
        list: MessageList::new(),
        model: Model::default(),
        version: 0,
    };
    for op in ops {
        h.apply(op);
        h.check();
    }
});
