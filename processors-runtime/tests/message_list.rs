//! The message list: sources, views, system messages and reconciliation.

use processors_runtime::message::{Message, MessageList, MessageSource, ReconcileError, Role};

fn ids(list: &MessageList) -> Vec<String> {
    list.all().map(|m| m.id.clone()).collect()
}

#[test]
fn reconcile_removes_missing_replaces_in_place_and_appends_new() {
    let mut list = MessageList::new();
    list.add(
        Message::user("remembered").with_id("m"),
        MessageSource::Memory,
    );
    list.add(Message::user("a").with_id("a"), MessageSource::Input);
    list.add(Message::user("b").with_id("b"), MessageSource::Input);
    list.add(
        Message::assistant("r").with_id("r"),
        MessageSource::Response,
    );
    let view: Vec<String> = list.input().map(|m| m.id.clone()).collect();
    let returned = vec![
        Message::user("b changed").with_id("b"),
        Message::user("new").with_id("n"),
        Message::system("sys").with_id("s"),
    ];
    list.reconcile(&view, returned, MessageSource::Input)
        .unwrap();
    assert_eq!(ids(&list), ["m", "b", "r", "n"]);
    assert_eq!(list.get("b").unwrap().text(), "b changed");
    assert_eq!(list.source_of("b"), Some(MessageSource::Input));
    assert_eq!(list.source_of("m"), Some(MessageSource::Memory));
    assert_eq!(list.system_messages()[0].id, "s");
}

#[test]
fn reconcile_refuses_duplicate_ids_and_changes_nothing() {
    let mut list = MessageList::new();
    list.add(Message::user("a").with_id("a"), MessageSource::Input);
    let err = list
        .reconcile(
            &["a".into()],
            vec![
                Message::user("x").with_id("x"),
                Message::user("y").with_id("x"),
            ],
            MessageSource::Input,
        )
        .unwrap_err();
    assert_eq!(err, ReconcileError::DuplicateId("x".into()));
    assert_eq!(ids(&list), ["a"]);
}

#[test]
fn system_set_must_hold_only_system_messages() {
    let mut list = MessageList::new();
    list.add_system(Message::system("keep"), None);
    let err = list
        .reconcile_system(vec![Message::user("u").with_id("u")])
        .unwrap_err();
    assert_eq!(
        err,
        ReconcileError::NotSystem {
            id: "u".into(),
            role: Role::User
        }
    );
    assert_eq!(list.system_messages()[0].text(), "keep");
}

#[test]
fn tagged_and_untagged_system_messages_are_apart() {
    let mut list = MessageList::new();
    list.add_system(Message::system("instructions"), None);
    list.add_system(Message::system("feedback"), Some("retry"));
    list.add(Message::user("hi"), MessageSource::Input);
    list.replace_all_system(vec![Message::system("other")]);
    let prompt: Vec<_> = list.to_prompt().iter().map(Message::text).collect();
    assert_eq!(prompt, ["other", "feedback", "hi"]);
    assert_eq!(list.tagged_system_messages("retry").count(), 1);
    list.clear_tag("retry");
    assert_eq!(list.all_system_messages().count(), 1);
}

#[test]
fn remembered_messages_go_before_the_input() {
    let mut list = MessageList::new();
    list.add(Message::user("now").with_id("now"), MessageSource::Input);
    list.add_remembered([
        Message::user("old1").with_id("o1"),
        Message::assistant("old2").with_id("o2"),
    ]);
    assert_eq!(ids(&list), ["o1", "o2", "now"]);
    assert_eq!(list.remembered().count(), 2);
    let removed = list.remove(&["o1"]);
    assert_eq!(removed.len(), 1);
    assert_eq!(ids(&list), ["o2", "now"]);
}

// Found by the `message_list` fuzz target (fuzz/): no id is ever held twice, and system
// messages stay apart from the conversation, whatever role a returned message has.

fn system_ids(list: &MessageList) -> Vec<String> {
    list.all_system_messages().map(|m| m.id.clone()).collect()
}

#[test]
fn a_returned_system_set_takes_a_conversation_message_with_its_id_out_of_the_conversation() {
    let mut list = MessageList::new();
    list.add(Message::user("a").with_id("a"), MessageSource::Input);
    list.add_system(Message::system("tagged").with_id("t"), Some("tag"));
    list.reconcile_system(vec![
        Message::system("was a").with_id("a"),
        Message::system("was t").with_id("t"),
    ])
    .unwrap();
    assert!(ids(&list).is_empty());
    assert_eq!(system_ids(&list), ["a", "t"]);
    assert_eq!(list.tagged_system_messages("tag").count(), 0);
}

#[test]
fn reconcile_moves_a_system_message_turned_user_into_the_conversation() {
    let mut list = MessageList::new();
    list.add_system(Message::system("s").with_id("s"), None);
    list.add_system(Message::system("t").with_id("t"), Some("tag"));
    let returned = vec![
        Message::user("was s").with_id("s"),
        Message::user("was t").with_id("t"),
    ];
    list.reconcile(&[], returned, MessageSource::Input).unwrap();
    assert_eq!(ids(&list), ["s", "t"]);
    assert!(system_ids(&list).is_empty());
}

#[test]
fn reconcile_replaces_a_tagged_system_message_in_place() {
    let mut list = MessageList::new();
    list.add_system(Message::system("t").with_id("t"), Some("tag"));
    list.reconcile(
        &[],
        vec![Message::system("t changed").with_id("t")],
        MessageSource::Input,
    )
    .unwrap();
    assert_eq!(system_ids(&list), ["t"]);
    let tagged: Vec<String> = list
        .tagged_system_messages("tag")
        .map(Message::text)
        .collect();
    assert_eq!(tagged, ["t changed"]);
}

#[test]
fn replace_with_another_role_moves_between_conversation_and_system_messages() {
    let mut list = MessageList::new();
    list.add(Message::user("a").with_id("a"), MessageSource::Input);
    list.add(Message::user("b").with_id("b"), MessageSource::Input);
    list.add_system(Message::system("s").with_id("s"), None);

    assert!(list.replace(Message::system("a, now system").with_id("a")));
    assert_eq!(ids(&list), ["b"]);
    assert_eq!(system_ids(&list), ["s", "a"]);

    assert!(list.replace(Message::user("s, now user").with_id("s")));
    assert_eq!(ids(&list), ["b", "s"]);
    assert_eq!(list.source_of("s"), Some(MessageSource::Context));
    assert_eq!(system_ids(&list), ["a"]);
}

#[test]
fn remove_returns_the_tagged_system_messages_it_removed() {
    let mut list = MessageList::new();
    list.add(Message::user("a").with_id("a"), MessageSource::Input);
    list.add_system(Message::system("t").with_id("t"), Some("tag"));
    let removed: Vec<String> = list.remove(&["a", "t"]).into_iter().map(|m| m.id).collect();
    assert_eq!(removed, ["a", "t"]);
    assert!(system_ids(&list).is_empty());
}
