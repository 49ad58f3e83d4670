//! The few fields a stream decoder reads from an event's JSON, found without building a tree.
//!
//! An event is a small object of which a decoder reads a handful of fields. Parsing it into a
//! `serde_json::Value` builds a map per object and a string per key and value, only to drop
//! them. Here an object is scanned once for the named fields, which are kept as borrowed raw
//! JSON and parsed only when read; strings without escapes are borrowed, not copied.
//!
//! The readers answer as `Value`'s accessors do: a missing field, or one of another type,
//! reads as absent (`Value::as_str`, `as_u64`, `as_array`, indexing a non-object), and of a
//! field given twice the last counts.

use serde::Deserializer as _;
use serde::de::{self, Deserialize, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// Whether `text` has a backslash followed by `u` (a `\u` escape, or an escaped backslash
/// before a `u`): the backslashes are found with `memchr`, with no substring searcher built
/// for each event.
pub(crate) fn has_u_escape(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr_iter(b'\\', bytes).any(|at| bytes.get(at + 1) == Some(&b'u'))
}

/// A JSON value's text, parsed when read; absent for a missing field.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Raw<'a>(Option<&'a RawValue>);

impl<'a> Raw<'a> {
    /// The value of `name`s in `document`, a whole JSON text: fails only when `document` is
    /// not JSON; a document that is not an object has none of them.
    pub(crate) fn document<const N: usize>(
        document: &'a str,
        names: [&str; N],
    ) -> Result<[Raw<'a>; N], serde_json::Error> {
        // Skipping a value checks its syntax but not what its `\u` escapes decode to: a
        // document with any is decoded whole, so that a lone surrogate fails it as before.
        if has_u_escape(document) {
            serde_json::from_str::<Value>(document)?;
        }
        let mut de = serde_json::Deserializer::from_str(document);
        match (&mut de).deserialize_map(Fields(&names)) {
            Ok(fields) => {
                de.end()?;
                Ok(fields.map(Raw))
            }
            // Not an object (a type error): valid JSON without these fields, or not JSON.
            Err(e) if e.is_data() => {
                serde_json::from_str::<IgnoredAny>(document)?;
                Ok([Raw(None); N])
            }
            Err(e) => Err(e),
        }
    }

    /// The values of `names` in this object (none when it is not one).
    pub(crate) fn fields<const N: usize>(self, names: [&str; N]) -> [Raw<'a>; N] {
        self.of_type(b'{')
            .and_then(|raw| {
                (&mut serde_json::Deserializer::from_str(raw))
                    .deserialize_map(Fields(&names))
                    .ok()
            })
            .map_or([Raw(None); N], |fields| fields.map(Raw))
    }

    /// The string, borrowed unless it has escapes (none when it is not a string).
    pub(crate) fn str(self) -> Option<Cow<'a, str>> {
        let raw = self.of_type(b'"')?;
        (&mut serde_json::Deserializer::from_str(raw))
            .deserialize_str(CowStr)
            .ok()
    }

    /// The number, when it is a non-negative integer that fits.
    pub(crate) fn u64(self) -> Option<u64> {
        let raw = self.0?.get();
        match raw.as_bytes().first() {
            Some(b'0'..=b'9' | b'-') => serde_json::from_str(raw).ok(),
            _ => None,
        }
    }

    /// The first element (none when this is not an array or the array is empty).
    pub(crate) fn first(self) -> Option<Raw<'a>> {
        let raw = self.of_type(b'[')?;
        (&mut serde_json::Deserializer::from_str(raw))
            .deserialize_seq(First(PhantomData))
            .ok()
            .flatten()
            .map(|first| Raw(Some(first)))
    }

    /// The elements (none when this is not an array).
    pub(crate) fn elements(self) -> Option<Vec<Raw<'a>>> {
        let raw = self.of_type(b'[')?;
        let elements: Vec<&RawValue> = serde_json::from_str(raw).ok()?;
        Some(elements.into_iter().map(|e| Raw(Some(e))).collect())
    }

    /// The raw text when the value starts with `first` (an object, an array or a string):
    /// reading another type as one would fail, and a failure costs an allocated error.
    fn of_type(self, first: u8) -> Option<&'a str> {
        self.0
            .map(RawValue::get)
            .filter(|raw| raw.as_bytes().first() == Some(&first))
    }

    /// Whether the field is there and not `null`.
    pub(crate) fn is_present(self) -> bool {
        self.0.is_some_and(|raw| raw.get() != "null")
    }

    /// Whether this is an object.
    pub(crate) fn is_object(self) -> bool {
        self.of_type(b'{').is_some()
    }

    /// The value as a tree (`null` when absent), for the rare paths that need all of it.
    pub(crate) fn value(self) -> Value {
        self.0
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or(Value::Null)
    }
}

/// Whether an object with these fields is an error object rather than data (as
/// [`is_error_object`](crate::error::is_error_object)).
pub(crate) fn is_error(error: Raw<'_>, kind: Raw<'_>, object: Raw<'_>) -> bool {
    error.is_present()
        || kind.str().is_some_and(|t| t == "error")
        || object.str().is_some_and(|o| o == "error")
}

/// [`is_error`] for the fields of a one-pass reader: `error` given (and not null), or a
/// `type` or `object` of `"error"`.
pub(crate) fn is_error_read(error: bool, kind: &Option<Str<'_>>, object: &Option<Str<'_>>) -> bool {
    let is_error = |s: &Option<Str<'_>>| s.as_ref().is_some_and(|s| s.0 == "error");
    error || is_error(kind) || is_error(object)
}

/// Finds the named fields of an object, skipping the others.
struct Fields<'n, const N: usize>(&'n [&'n str; N]);

impl<'de, const N: usize> Visitor<'de> for Fields<'_, N> {
    type Value = [Option<&'de RawValue>; N];

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = [None; N];
        while let Some(Str(key)) = map.next_key()? {
            match self.0.iter().position(|name| *name == key) {
                Some(i) => found[i] = Some(map.next_value()?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
}

/// The first element of an array, the rest skipped.
struct First<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for First<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let first = seq.next_element()?;
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(first)
    }
}

/// For `#[serde(deserialize_with)]`: the first element of an array (the rest skipped); none
/// for an empty one.
pub(crate) fn first<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_seq(First(PhantomData))
}

/// A `T` read from a JSON object only (a derived struct would also take an array).
pub(crate) struct Obj<T>(pub(crate) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Map<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Map<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(Map(PhantomData)).map(Obj)
    }
}

/// A string, borrowed from the input when it has no escapes.
struct CowStr;

impl<'de> Visitor<'de> for CowStr {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(s))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s))
    }
}

/// A string borrowed from the input when it has no escapes: an object's key, or a field of a
/// derived reader. (A derived `Option<Cow<str>>` field is always an owned copy, even with
/// `#[serde(borrow)]`; `Option<Str>` borrows.)
pub(crate) struct Str<'de>(pub(crate) Cow<'de, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(CowStr).map(Str)
    }
}

/// Strategies for the decoders' property tests: events of every shape.
#[cfg(test)]
pub(crate) mod shapes {
    use proptest::prelude::*;

    /// A field's value as JSON text, or `None` to leave the field out: values of every type,
    /// then the JSON texts of `extra`.
    pub(crate) fn values(extra: &[&str]) -> BoxedStrategy<Option<String>> {
        let common = [
            "null",
            r#""text""#,
            r#""with \"escapes\"\n""#,
            r#""""#,
            "7",
            "-1",
            "1.5",
            "[]",
            "{}",
            r#""error""#,
        ];
        let all: Vec<Option<String>> = std::iter::once(None)
            .chain(common.iter().chain(extra).map(|v| Some((*v).to_owned())))
            .collect();
        proptest::sample::select(all).boxed()
    }

    /// Objects of fewer than `most` fields named from `names` (a name may come twice), each
    /// with a value of `value` (a field whose value is `None` is left out).
    pub(crate) fn object(
        names: &'static [&'static str],
        value: BoxedStrategy<Option<String>>,
        most: usize,
    ) -> BoxedStrategy<String> {
        proptest::collection::vec((proptest::sample::select(names), value), 0..most)
            .prop_map(|fields| {
                let fields: Vec<String> = fields
                    .into_iter()
                    .filter_map(|(n, v)| v.map(|v| format!("\"{n}\": {v}")))
                    .collect();
                format!("{{{}}}", fields.join(", "))
            })
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_u_escape_is_a_backslash_then_u() {
        for (text, has) in [
            (r#"{"a":"\u00e9"}"#, true),
            (r#"{"a":"\\u"}"#, true),
            (r#"\u"#, true),
            (r#"{"a":"\n u"}"#, false),
            (r#"{"a":"u\\"}"#, false),
            ("\\", false),
            ("", false),
        ] {
            assert_eq!(has_u_escape(text), has, "{text}");
            assert_eq!(memchr::memmem::find(text.as_bytes(), b"\\u").is_some(), has);
        }
    }

    /// A derived reader's optional string borrows from the event; an escaped one is decoded.
    #[test]
    fn an_optional_string_field_borrows_from_the_input() {
        #[derive(serde::Deserialize)]
        struct Read<'a> {
            #[serde(default, borrow)]
            plain: Option<Str<'a>>,
            #[serde(default, borrow)]
            escaped: Option<Str<'a>>,
        }
        let read: Read<'_> =
            serde_json::from_str(r#"{"plain":"chat.completion.chunk","escaped":"a\nb"}"#)
                .expect("a JSON object");
        assert!(matches!(
            read.plain,
            Some(Str(Cow::Borrowed("chat.completion.chunk")))
        ));
        assert!(matches!(read.escaped, Some(Str(Cow::Owned(s))) if s == "a\nb"));
    }

    /// Every reader against `Value`'s accessor, on documents of every shape.
    #[test]
    fn fields_read_as_values_accessors_read_them() {
        let documents = [
            r#"{"a": "x", "b": 5, "c": [1, {"d": "y"}], "e": null, "f": {"g": "\u0068i\n"}}"#,
            r#"{"a": 5, "b": "5", "c": {}, "e": [], "f": "s"}"#,
            r#"{"a": "first", "a": "last", "b": -1, "c": [], "f": {"g": 1.5}}"#,
            r#"{"b": -0, "c": [null], "f": {"g": "\"quoted\""}}"#,
            r#"{"b": 1e2, "f": {"g": null}}"#,
            r#"{"\u0061": "escaped key", "b": 18446744073709551615, "c": "no array"}"#,
            r#"[1, 2]"#,
            r#""text""#,
            "null",
            "  {}  ",
        ];
        for doc in documents {
            let value: Value = serde_json::from_str(doc).unwrap();
            let [a, b, c, e, f] = Raw::document(doc, ["a", "b", "c", "e", "f"]).unwrap();
            assert_eq!(a.str().as_deref(), value["a"].as_str(), "{doc}");
            assert_eq!(b.u64(), value["b"].as_u64(), "{doc}");
            assert_eq!(b.str().as_deref(), value["b"].as_str(), "{doc}");
            assert_eq!(
                c.elements()
                    .map(|v| v.iter().map(|r| r.value()).collect::<Vec<_>>()),
                value["c"].as_array().cloned(),
                "{doc}"
            );
            assert_eq!(
                c.first().map(Raw::value),
                value["c"].as_array().and_then(|c| c.first()).cloned(),
                "{doc}"
            );
            assert_eq!(e.is_present(), !value["e"].is_null(), "{doc}");
            assert_eq!(f.is_object(), value["f"].is_object(), "{doc}");
            let [g] = f.fields(["g"]);
            assert_eq!(g.str().as_deref(), value["f"]["g"].as_str(), "{doc}");
            assert_eq!(g.value(), value["f"]["g"], "{doc}");
        }
    }

    /// Any JSON of a few levels, with keys from a small set so that fields are found.
    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[ab\"\\\n\u{e9}]{0,4}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec(("[abc]", inner), 0..4)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn every_reader_agrees_with_values_accessor(value in json_value()) {
            let text = value.to_string();
            // As read back (a float's last digit may differ from the generated one).
            let value: Value = serde_json::from_str(&text).unwrap();
            let fields = Raw::document(&text, ["a", "b", "c"]).unwrap();
            for (raw, name) in fields.into_iter().zip(["a", "b", "c"]) {
                let v = &value[name];
                let string = raw.str();
                proptest::prop_assert_eq!(string.as_deref(), v.as_str());
                proptest::prop_assert_eq!(raw.u64(), v.as_u64());
                proptest::prop_assert_eq!(raw.is_present(), !v.is_null());
                proptest::prop_assert_eq!(raw.is_object(), v.is_object());
                proptest::prop_assert_eq!(raw.value(), v.clone());
                proptest::prop_assert_eq!(
                    raw.first().map(Raw::value),
                    v.as_array().and_then(|a| a.first()).cloned()
                );
                proptest::prop_assert_eq!(
                    raw.elements().map(|e| e.into_iter().map(Raw::value).collect::<Vec<_>>()),
                    v.as_array().cloned()
                );
                let [inner] = raw.fields(["a"]);
                proptest::prop_assert_eq!(inner.value(), v["a"].clone());
            }
        }
    }

    #[test]
    fn strings_without_escapes_are_borrowed() {
        let [a, b] = Raw::document(r#"{"a": "plain", "b": "line\nbreak"}"#, ["a", "b"]).unwrap();
        assert!(matches!(a.str(), Some(Cow::Borrowed("plain"))));
        assert!(matches!(b.str(), Some(Cow::Owned(s)) if s == "line\nbreak"));
    }

    #[test]
    fn a_document_that_is_not_json_is_an_error() {
        for bad in [r#"{"a": 1"#, r#"{"a": [1,}"#, r#"{"a": 1} x"#, "nul", ""] {
            assert!(Raw::document(bad, ["a"]).is_err(), "{bad}");
        }
    }

    #[test]
    fn error_objects_are_recognised_as_the_tree_version_does() {
        for doc in [
            json!({"error": {"message": "x"}}),
            json!({"error": null}),
            json!({"type": "error"}),
            json!({"object": "error"}),
            json!({"type": "message"}),
            json!({"choices": []}),
        ] {
            let text = doc.to_string();
            let [error, kind, object] = Raw::document(&text, ["error", "type", "object"]).unwrap();
            assert_eq!(
                is_error(error, kind, object),
                crate::error::is_error_object(&doc),
                "{text}"
            );
        }
    }
}
