//! Reading a judge's answer: the JSON object in it, and the scores and spans it gives.
//!
//! Models wrap JSON in code fences, put a sentence before it or after it; that is tolerated.
//! An answer without a JSON object, or whose object lacks what the detector asked for, is a
//! [`JudgeError::Malformed`], never a verdict that nothing was found.

use super::JudgeError;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// How many `{` the reader tries before giving up on an answer.
const MAX_STARTS: usize = 64;

/// The first JSON object in `answer` (inside code fences, after or before prose).
pub(crate) fn object(answer: &str) -> Result<Map<String, Value>, JudgeError> {
    for (i, _) in answer.match_indices('{').take(MAX_STARTS) {
        let mut values = serde_json::Deserializer::from_str(&answer[i..]).into_iter::<Value>();
        if let Some(Ok(Value::Object(map))) = values.next() {
            return Ok(map);
        }
    }
    Err(JudgeError::Malformed(format!(
        "no JSON object in the answer {}",
        excerpt(answer)
    )))
}

/// The start of `text`, quoted, for an error message.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX: usize = 120;
    let cut = text.char_indices().nth(MAX).map_or(text.len(), |(i, _)| i);
    match cut < text.len() {
        true => format!("{:?}…", &text[..cut]),
        false => format!("{text:?}"),
    }
}

/// A category's name as detectors compare it: trimmed, lowercase, `_` and spaces as `-`.
pub(crate) fn normalise(name: &str) -> String {
    name.trim()
        .to_lowercase()
        .chars()
        .map(|c| if c == '_' || c == ' ' { '-' } else { c })
        .collect()
}

/// A score from 0 to 1.
fn score(name: &str, v: &Value) -> Result<f64, JudgeError> {
    match v.as_f64() {
        Some(s) if (0.0..=1.0).contains(&s) => Ok(s),
        _ => Err(JudgeError::Malformed(format!(
            "the score of `{name}` is {v}, not a number from 0 to 1"
        ))),
    }
}

/// The category scores of a verdict, in either shape a judge gives: ours (`categories`, a
/// score each), or the reference's (`category_scores`, a score each, beside `categories` as
/// booleans; booleans alone count as 1 for true and 0 for false).
pub(crate) fn category_scores(
    verdict: &Map<String, Value>,
) -> Result<BTreeMap<String, f64>, JudgeError> {
    if verdict.contains_key("category_scores") {
        return scores(verdict, "category_scores");
    }
    if let Some(Value::Object(map)) = verdict.get("categories")
        && !map.is_empty()
        && map.values().all(Value::is_boolean)
    {
        let flag = |v: &Value| if v.as_bool() == Some(true) { 1.0 } else { 0.0 };
        return Ok(map.iter().map(|(k, v)| (normalise(k), flag(v))).collect());
    }
    scores(verdict, "categories")
}

/// The scores under `key`: an object `{"hate": 0.1, …}` or a list
/// `[{"category": "hate", "score": 0.1}, …]`. Names are [normalised](normalise).
pub(crate) fn scores(
    verdict: &Map<String, Value>,
    key: &str,
) -> Result<BTreeMap<String, f64>, JudgeError> {
    let missing = || JudgeError::Malformed(format!("the verdict has no `{key}` scores"));
    let mut out = BTreeMap::new();
    match verdict.get(key).ok_or_else(missing)? {
        Value::Object(map) => {
            for (name, v) in map {
                out.insert(normalise(name), score(name, v)?);
            }
        }
        Value::Array(items) => {
            for item in items {
                let name = item
                    .get("category")
                    .or_else(|| item.get("name"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        JudgeError::Malformed(format!("an entry of `{key}` has no category name"))
                    })?;
                let s = item.get("score").ok_or_else(|| {
                    JudgeError::Malformed(format!("the entry `{name}` of `{key}` has no score"))
                })?;
                out.insert(normalise(name), score(name, s)?);
            }
        }
        other => {
            return Err(JudgeError::Malformed(format!(
                "`{key}` is {other}, not an object of scores"
            )));
        }
    }
    Ok(out)
}

/// An optional string field; present but not a string is malformed.
pub(crate) fn opt_str<'a>(
    verdict: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, JudgeError> {
    match verdict.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(JudgeError::Malformed(format!(
            "`{key}` is {other}, not a string"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_in_code_fences_after_prose_is_read() {
        let answer = "Sure, here is my verdict:\n```json\n{\"categories\": {\"hate\": 0.2}}\n```\nHope it helps {really}.";
        let v = object(answer).unwrap();
        assert_eq!(scores(&v, "categories").unwrap()["hate"], 0.2);
    }

    #[test]
    fn braces_in_prose_before_the_object_are_skipped() {
        let v = object("I use {braces} too. {\"a\": 1}").unwrap();
        assert_eq!(v["a"], 1);
    }

    #[test]
    fn an_answer_without_an_object_is_malformed() {
        for answer in ["", "no", "[1, 2]", "{\"categories\": {\"hate\": 0.9"] {
            assert!(
                matches!(object(answer), Err(JudgeError::Malformed(_))),
                "{answer}"
            );
        }
    }

    #[test]
    fn a_truncated_object_is_not_read_as_its_inner_object_scores() {
        // The inner object parses, but it has no `categories`.
        let v = object("{\"categories\": {\"hate\": 0.9}, \"rewritten\": \"cut").unwrap();
        assert!(matches!(
            scores(&v, "categories"),
            Err(JudgeError::Malformed(_))
        ));
    }

    #[test]
    fn scores_out_of_range_or_not_numbers_are_malformed() {
        for bad in [
            r#"{"c": {"hate": 1.5}}"#,
            r#"{"c": {"hate": "high"}}"#,
            r#"{"c": {"hate": -0.1}}"#,
            r#"{"c": 3}"#,
            r#"{"d": {}}"#,
        ] {
            let v = object(bad).unwrap();
            assert!(
                matches!(scores(&v, "c"), Err(JudgeError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn scores_as_a_list_and_names_are_normalised() {
        let v = object(r#"{"c": [{"category": "Self_Harm", "score": 0.7}, {"name": "hate speech", "score": 0}]}"#).unwrap();
        let s = scores(&v, "c").unwrap();
        assert_eq!(s["self-harm"], 0.7);
        assert_eq!(s["hate-speech"], 0.0);
    }

    #[test]
    fn excerpts_are_cut_on_a_char_boundary() {
        let long = "é".repeat(500);
        assert!(excerpt(&long).ends_with('…'));
    }
}
