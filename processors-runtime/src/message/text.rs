//! [`Text`]: a message's text, shared between the copies a run keeps of it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::{Borrow, Cow};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// Text that costs nothing to clone: the text of a message [`Part`](super::Part), of a
/// [`StepResult`](crate::step::StepResult) and of a
/// [`GenerateResult`](crate::GenerateResult).
///
/// A run's answer appears in its response message, in its step and in its result; all three
/// are one buffer (for a long answer, the one the streamed text was written into; text of
/// up to 512 bytes is copied once). Clones of a message (for a hook, for memory) share their
/// text too.
///
/// `Text` reads as a [`str`] (it dereferences to one), compares with `str`, `&str` and
/// `String`, and serializes as a string. It is immutable where shared: to edit one in place,
/// [`make_mut`](Text::make_mut) gives a `String`, copied first only if another clone holds it.
///
/// ```
/// use processors_runtime::message::Text;
///
/// let answer = Text::from(String::from("Hello there."));
/// let kept = answer.clone(); // no copy of the text
/// assert_eq!(kept, "Hello there.");
/// assert!(kept.starts_with("Hello"));
///
/// let mut edited = kept.clone();
/// edited.make_mut().push_str(" Bye.");
/// assert_eq!(edited, "Hello there. Bye.");
/// assert_eq!(answer, "Hello there."); // the others keep theirs
/// ```
#[derive(Clone)]
pub struct Text(Repr);

#[derive(Clone)]
enum Repr {
    /// A literal.
    Static(&'static str),
    /// Short text, copied once into a reference-counted `str`.
    Short(Arc<str>),
    /// Longer text: the `String` it was made from, moved behind a reference count, so a
    /// streamed answer is never copied.
    Long(Arc<String>),
}

/// Text up to this length is copied into one allocation; longer text keeps its `String`.
const COPY_UP_TO: usize = 512;

impl Text {
    /// The empty text (no allocation).
    pub const fn new() -> Self {
        Self(Repr::Static(""))
    }

    /// A literal (no allocation).
    pub const fn from_static(text: &'static str) -> Self {
        Self(Repr::Static(text))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(s) => s,
            Repr::Short(s) => s,
            Repr::Long(s) => s,
        }
    }

    /// The text as a `String` to edit: a long text's own buffer when no other clone shares
    /// it; otherwise (shared, short or a literal) a copy first.
    pub fn make_mut(&mut self) -> &mut String {
        if !matches!(self.0, Repr::Long(_)) {
            self.0 = Repr::Long(Arc::new(self.as_str().to_owned()));
        }
        match &mut self.0 {
            Repr::Long(s) => Arc::make_mut(s),
            // Just made `Long`.
            Repr::Static(_) | Repr::Short(_) => unreachable!("the text was just made a `String`"),
        }
    }

    /// Shortens the text to its first `len` bytes: a long text in place when no other clone
    /// shares it, a literal by slicing it, otherwise by copying only what is kept. Does
    /// nothing when `len` is not shorter.
    ///
    /// # Panics
    ///
    /// When `len` is not on a `char` boundary, as [`String::truncate`].
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len() {
            return;
        }
        if let Repr::Static(s) = self.0 {
            self.0 = Repr::Static(&s[..len]);
        } else if let Repr::Long(s) = &mut self.0
            && let Some(s) = Arc::get_mut(s)
        {
            s.truncate(len);
        } else {
            *self = Text::from(&self.as_str()[..len]);
        }
    }

    /// The text as a `String`: moved out when no other clone shares it, copied otherwise.
    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Long(s) => Arc::try_unwrap(s).unwrap_or_else(|s| String::clone(&s)),
            Repr::Static(s) => s.to_owned(),
            Repr::Short(s) => s.as_ref().to_owned(),
        }
    }

    /// Whether `self` and `other` are one buffer (clones of each other), not only equal.
    pub fn shares(&self, other: &Text) -> bool {
        match (&self.0, &other.0) {
            (Repr::Short(a), Repr::Short(b)) => Arc::ptr_eq(a, b),
            (Repr::Long(a), Repr::Long(b)) => Arc::ptr_eq(a, b),
            (Repr::Static(a), Repr::Static(b)) => std::ptr::eq(*a, *b),
            _ => false,
        }
    }
}

impl Default for Text {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<String> for Text {
    fn from(mut text: String) -> Self {
        if text.len() <= COPY_UP_TO {
            return Self(Repr::Short(Arc::from(text.as_str())));
        }
        // A buffer grown by appending may hold far more than its text; giving back the slack
        // shrinks it in place.
        if text.capacity() - text.len() > text.len() / 8 {
            text.shrink_to_fit();
        }
        Self(Repr::Long(Arc::new(text)))
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Self {
        Self(Repr::Short(Arc::from(text)))
    }
}

impl From<&String> for Text {
    fn from(text: &String) -> Self {
        Self::from(text.as_str())
    }
}

impl From<&mut str> for Text {
    fn from(text: &mut str) -> Self {
        Self::from(&*text)
    }
}

impl From<Arc<str>> for Text {
    /// Shares the `str`: no copy.
    fn from(text: Arc<str>) -> Self {
        Self(Repr::Short(text))
    }
}

impl From<Box<str>> for Text {
    fn from(text: Box<str>) -> Self {
        Self(Repr::Short(Arc::from(text)))
    }
}

impl From<Cow<'_, str>> for Text {
    fn from(text: Cow<'_, str>) -> Self {
        match text {
            Cow::Borrowed(s) => Self::from(s),
            Cow::Owned(s) => Self::from(s),
        }
    }
}

impl From<char> for Text {
    fn from(c: char) -> Self {
        Self::from(c.encode_utf8(&mut [0; 4]) as &str)
    }
}

impl From<Text> for String {
    fn from(text: Text) -> Self {
        text.into_string()
    }
}

impl<'a> FromIterator<&'a str> for Text {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> Self {
        Self::from(iter.into_iter().collect::<String>())
    }
}

impl FromIterator<String> for Text {
    fn from_iter<I: IntoIterator<Item = String>>(iter: I) -> Self {
        Self::from(iter.into_iter().collect::<String>())
    }
}

impl FromIterator<char> for Text {
    fn from_iter<I: IntoIterator<Item = char>>(iter: I) -> Self {
        Self::from(iter.into_iter().collect::<String>())
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.shares(other) || self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Text) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Text) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

/// `Text == x` and `x == Text` for the string types a caller compares with.
macro_rules! eq_str {
    ($($ty:ty),*) => { $(
        impl PartialEq<$ty> for Text {
            fn eq(&self, other: &$ty) -> bool {
                self.as_str() == AsRef::<str>::as_ref(other)
            }
        }

        impl PartialEq<Text> for $ty {
            fn eq(&self, other: &Text) -> bool {
                AsRef::<str>::as_ref(self) == other.as_str()
            }
        }
    )* };
}

eq_str!(str, &str, String, Cow<'_, str>);

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Text {
    /// Short text is copied once from the input into its buffer; a `String` the deserializer
    /// owns is kept (`Cow<str>`'s own `Deserialize` would always make a `String` first).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl serde::de::Visitor<'_> for TextVisitor {
            type Value = Text;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Text, E> {
                Ok(Text::from(s))
            }

            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Text, E> {
                Ok(Text::from(s))
            }
        }

        deserializer.deserialize_string(TextVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long(n: usize) -> String {
        "abcdefgh".repeat(n / 8 + 1)
    }

    #[test]
    fn a_long_string_is_moved_not_copied() {
        let s = long(COPY_UP_TO * 4);
        let at = s.as_ptr();
        let text = Text::from(s);
        assert_eq!(text.as_ptr(), at);
        assert_eq!(text.clone().as_ptr(), at, "clones share the buffer");
    }

    #[test]
    fn slack_is_given_back_when_it_is_large() {
        let mut s = String::with_capacity(COPY_UP_TO * 8);
        s.push_str(&long(COPY_UP_TO * 2));
        let len = s.len();
        let Repr::Long(buf) = Text::from(s).0 else {
            panic!("long text keeps its String")
        };
        assert!(
            buf.capacity() <= len + len / 8,
            "{} for {len}",
            buf.capacity()
        );
    }

    #[test]
    fn make_mut_copies_only_what_is_shared() {
        let mut a = Text::from(long(COPY_UP_TO * 2));
        a.make_mut().push('!');
        assert!(a.ends_with('!'));
        let b = a.clone();
        a.make_mut().push('?');
        assert!(a.ends_with("!?"));
        assert!(b.ends_with('!'), "the clone kept its text");
        assert_ne!(a.as_ptr(), b.as_ptr());

        let mut short = Text::from("hi");
        short.make_mut().push('!');
        assert_eq!(short, "hi!");
        let mut lit = Text::from_static("lit");
        lit.make_mut().push('!');
        assert_eq!(lit, "lit!");
    }

    #[test]
    fn truncate_cuts_in_place_or_copies_what_it_keeps() {
        let mut only = Text::from(long(COPY_UP_TO * 2));
        let at = only.as_ptr();
        only.truncate(3);
        assert_eq!((only.as_str(), only.as_ptr()), ("abc", at));
        let mut shared = Text::from(long(COPY_UP_TO * 2));
        let other = shared.clone();
        shared.truncate(2);
        assert_eq!(shared, "ab");
        assert!(other.len() > COPY_UP_TO * 2, "the clone kept its text");
        let mut lit = Text::from_static("literal");
        lit.truncate(3);
        assert_eq!(lit, "lit");
        let mut short = Text::from("héllo");
        short.truncate(3);
        assert_eq!(short, "hé");
        short.truncate(10);
        assert_eq!(short, "hé");
    }

    #[test]
    fn into_string_moves_an_unshared_buffer() {
        let s = long(COPY_UP_TO * 2);
        let at = s.as_ptr();
        let back = Text::from(s).into_string();
        assert_eq!(back.as_ptr(), at);
        let shared = Text::from(long(COPY_UP_TO * 2));
        let other = shared.clone();
        assert_eq!(shared.into_string(), *other);
    }

    #[test]
    fn equality_ordering_and_hashing_follow_the_text() {
        use std::collections::HashSet;
        let kinds = [
            Text::from_static("same"),
            Text::from("same"),
            Text::from(String::from("same")),
        ];
        for a in &kinds {
            for b in &kinds {
                assert_eq!(a, b);
            }
            assert_eq!(*a, "same");
            assert_eq!(a, &String::from("same"));
            let owned = String::from("same");
            assert!("same" == *a && owned == *a);
        }
        let shared: Arc<str> = Arc::from("same");
        let from_arc = Text::from(shared.clone());
        assert_eq!(from_arc, "same");
        assert_eq!(
            from_arc.as_ptr(),
            shared.as_ptr(),
            "an `Arc<str>` is shared, not copied"
        );
        assert_eq!(Text::from(String::from("same").as_mut_str()), "same");
        let set: HashSet<Text> = kinds.iter().cloned().collect();
        assert_eq!(set.len(), 1);
        assert!(set.contains("same"), "looked up by `str`");
        let (a, b) = (Text::from("a"), Text::from("b"));
        assert!(a < b);
        assert_ne!(Text::from("a"), "b");
    }

    #[test]
    fn it_serializes_as_a_string() {
        for text in [Text::new(), Text::from("é\"x"), Text::from(long(2_000))] {
            let json = serde_json::to_string(&text).unwrap();
            assert_eq!(json, serde_json::to_string(text.as_str()).unwrap());
            let back: Text = serde_json::from_str(&json).unwrap();
            assert_eq!(back, text);
        }
        assert_eq!(format!("{:?}", Text::from("a\"b")), r#""a\"b""#);
        assert_eq!(Text::from("shown").to_string(), "shown");
    }
}
