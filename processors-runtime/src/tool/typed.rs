//! Typed tools: what `#[tool]` generates stands on this. A tool function's arguments are
//! parsed from the model's JSON before the call (a mismatch goes back to the model as the
//! tool's error, naming the argument), their JSON Schema comes from their types, and what the
//! function returns is written back as JSON.

use super::Tool;
use crate::error::BoxError;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// What the builder's [`tool`](crate::agent::AgentBuilder::tool) and `agent!`'s `tools:`
/// take: a `#[tool]` function's type, any [`Tool`], or a shared one.
pub trait IntoTool {
    /// The tool, shared.
    fn into_tool(self) -> Arc<dyn Tool>;
}

impl<T: Tool> IntoTool for T {
    fn into_tool(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

impl<T: Tool> IntoTool for Arc<T> {
    fn into_tool(self) -> Arc<dyn Tool> {
        self
    }
}

impl IntoTool for Arc<dyn Tool> {
    fn into_tool(self) -> Arc<dyn Tool> {
        self
    }
}

/// A type a `#[tool]` function's parameter may have: the model's JSON is read into it.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's parameter: it has no `Deserialize`",
    label = "the model's JSON is read into this type",
    note = "derive `serde::Deserialize` on it (and `schemars::JsonSchema`), or use a type that has both (`String`, numbers, `bool`, `Vec<T>`, `Option<T>`, `serde_json::Value`, …)"
)]
pub trait ToolParamRead: DeserializeOwned {}

impl<T: DeserializeOwned> ToolParamRead for T {}

/// A type a `#[tool]` function's parameter may have: its JSON Schema tells the model what to
/// send.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's parameter: it has no `JsonSchema`",
    label = "this type's JSON Schema tells the model what to send",
    note = "derive `schemars::JsonSchema` on it (and `serde::Deserialize`), or use a type that has both (`String`, numbers, `bool`, `Vec<T>`, `Option<T>`, `serde_json::Value`, …)"
)]
pub trait ToolParamSchema: JsonSchema {}

impl<T: JsonSchema> ToolParamSchema for T {}

/// A type a `#[tool]` function may return (or return inside `Ok`): written as JSON for the
/// model.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be what a tool returns",
    label = "the tool's result is written as JSON for the model: this type needs `Serialize`",
    note = "derive `serde::Serialize` on it, or return a `serde_json::Value`"
)]
pub trait ToolOutput: Serialize {}

impl<T: Serialize> ToolOutput for T {}

/// The error type a `#[tool]` function may return in `Err`: anything that converts into a
/// boxed error (`String`, `&str`, any `std::error::Error + Send + Sync`, `BoxError`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's error",
    label = "the tool's error is shown to the model as text: this type needs to convert into `BoxError`",
    note = "return `Result<T, E>` where `E` is a `String`, a `&'static str`, or an error type that implements `std::error::Error + Send + Sync`"
)]
pub trait ToolError {
    /// The error, boxed.
    fn into_box(self) -> BoxError;
}

impl<E: Into<BoxError>> ToolError for E {
    fn into_box(self) -> BoxError {
        self.into()
    }
}

/// One parameter of a `#[tool]` function, as its schema lists it.
#[doc(hidden)]
pub struct ParamSpec {
    /// The argument's name (the parameter's).
    pub name: &'static str,
    /// Its doc comment.
    pub description: Option<&'static str>,
    /// Its schema.
    pub schema: fn(&mut SchemaGenerator) -> Schema,
    /// Whether the model must send it (its type is not an `Option`).
    pub required: bool,
}

/// The schema of `T`, for a parameter.
#[doc(hidden)]
pub fn param_schema<T: ToolParamSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

/// The generator tool schemas are made with: JSON Schema 2020-12, subschemas inlined where
/// they are not recursive (models read a flat schema best).
fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
}

/// The schema of a `#[tool]` function's parameters: an object with one property each, the
/// ones that may not be left out required, no others allowed.
#[doc(hidden)]
pub fn params_schema(params: &[ParamSpec]) -> Value {
    let mut g = generator();
    let mut properties = Map::new();
    let mut required = Vec::new();
    for p in params {
        let mut schema = (p.schema)(&mut g);
        if let Some(d) = p.description {
            schema.insert("description".into(), d.into());
        }
        properties.insert(p.name.into(), schema.to_value());
        if p.required {
            required.push(p.name);
        }
    }
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    let defs = g.take_definitions(true);
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    schema
}

/// The schema of a `#[tool]` function's `#[args]` type.
#[doc(hidden)]
pub fn args_schema<T: ToolParamSchema>() -> Value {
    let mut schema = generator().into_root_schema_for::<T>();
    schema.remove("title");
    schema.to_value()
}

/// A tool call's arguments, taken one parameter at a time.
#[doc(hidden)]
pub struct ToolArgs {
    tool: &'static str,
    args: Map<String, Value>,
}

impl ToolArgs {
    /// The arguments of a call of `tool`, whose parameters are `names`: an object (or
    /// nothing, for a tool without parameters) with no other keys.
    pub fn new(tool: &'static str, args: Value, names: &[&str]) -> Result<Self, BoxError> {
        let args = match args {
            Value::Object(args) => args,
            Value::Null => Map::new(),
            other => {
                return Err(format!(
                    "the arguments of `{tool}` must be a JSON object, not {}",
                    kind(&other)
                )
                .into());
            }
        };
        if let Some(unknown) = args.keys().find(|k| !names.contains(&k.as_str())) {
            let takes = match names {
                [] => "it takes none".to_owned(),
                _ => format!(
                    "it takes {}",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            return Err(format!("`{tool}` has no argument `{unknown}`: {takes}").into());
        }
        Ok(ToolArgs { tool, args })
    }

    /// The argument `name`, read as `T`; a missing one is `None` for an `Option`.
    pub fn take<T: ToolParamRead>(&mut self, name: &str) -> Result<T, BoxError> {
        let tool = self.tool;
        match self.args.remove(name) {
            Some(value) => serde_path_to_error::deserialize(value)
                .map_err(|e| parse_error(tool, name, e).into()),
            None => T::deserialize(Value::Null)
                .map_err(|_| format!("`{tool}` needs the argument `{name}`").into()),
        }
    }
}

/// The arguments of a call of `tool` read whole as its `#[args]` type.
#[doc(hidden)]
pub fn args_struct<T: ToolParamRead>(tool: &str, args: Value) -> Result<T, BoxError> {
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match path.as_str() {
            "." => format!("the arguments of `{tool}` do not fit: {inner}").into(),
            _ => format!("argument `{path}` of `{tool}`: {inner}").into(),
        }
    })
}

/// The error the model reads for an argument that does not parse, naming where it failed.
fn parse_error(tool: &str, name: &str, e: serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = e.path().to_string();
    let at = match path.as_str() {
        "." => name.to_owned(),
        p if p.starts_with('[') => format!("{name}{p}"),
        p => format!("{name}.{p}"),
    };
    format!("argument `{at}` of `{tool}`: {}", e.into_inner())
}

/// What a JSON value is, in words.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What a `#[tool]` function returned, as JSON.
#[doc(hidden)]
pub fn tool_output<T: ToolOutput>(value: T) -> Result<Value, BoxError> {
    serde_json::to_value(value)
        .map_err(|e| format!("the tool's result could not be written as JSON: {e}").into())
}

/// What a `#[tool]` function that returns a `Result` returned, as JSON.
#[doc(hidden)]
pub fn tool_result<T: ToolOutput, E: ToolError>(result: Result<T, E>) -> Result<Value, BoxError> {
    result.map_err(ToolError::into_box).and_then(tool_output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema, Debug)]
    #[allow(dead_code)]
    struct Address {
        city: String,
        zip: u32,
    }

    fn spec<T: JsonSchema>(name: &'static str, description: Option<&'static str>) -> ParamSpec {
        ParamSpec {
            name,
            description,
            schema: param_schema::<T>,
            required: !name.starts_with("opt_"),
        }
    }

    #[test]
    fn a_parameter_schema_lists_each_parameter_and_requires_those_that_cannot_be_left_out() {
        let schema = params_schema(&[
            spec::<String>("city", Some("The city.")),
            spec::<Option<u8>>("opt_days", None),
            spec::<Address>("to", None),
        ]);
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], json!(["city", "to"]));
        assert_eq!(schema["properties"]["city"]["type"], "string");
        assert_eq!(schema["properties"]["city"]["description"], "The city.");
        // Inlined, not a `$ref`.
        assert_eq!(
            schema["properties"]["to"]["properties"]["zip"]["minimum"],
            0
        );
        assert!(schema.get("$defs").is_none());
    }

    #[test]
    fn a_mismatch_names_the_argument_and_where_inside_it() {
        let names = ["city", "to"];
        let mut args = ToolArgs::new("ship", json!({ "city": 5 }), &names).unwrap();
        let e = args.take::<String>("city").unwrap_err().to_string();
        assert!(
            e.starts_with("argument `city` of `ship`: invalid type: integer `5`"),
            "{e}"
        );
        let e = args.take::<Address>("to").unwrap_err().to_string();
        assert_eq!(e, "`ship` needs the argument `to`");

        let mut args = ToolArgs::new(
            "ship",
            json!({ "to": { "city": "Lyon", "zip": "x" } }),
            &names,
        )
        .unwrap();
        let e = args.take::<Address>("to").unwrap_err().to_string();
        assert!(
            e.starts_with("argument `to.zip` of `ship`: invalid type"),
            "{e}"
        );
        assert_eq!(args.take::<Option<String>>("city").unwrap(), None);
    }

    #[test]
    fn unknown_arguments_and_arguments_that_are_not_an_object_are_refused() {
        let e = ToolArgs::new("ship", json!({ "cty": "Lyon" }), &["city"]).err();
        assert_eq!(
            e.unwrap().to_string(),
            "`ship` has no argument `cty`: it takes `city`"
        );
        let e = ToolArgs::new("ship", json!([1]), &["city"]).err();
        assert_eq!(
            e.unwrap().to_string(),
            "the arguments of `ship` must be a JSON object, not an array"
        );
        assert!(ToolArgs::new("now", Value::Null, &[]).is_ok());
    }

    #[test]
    fn an_args_struct_is_read_whole_and_its_errors_name_the_field() {
        let a: Address = args_struct("ship", json!({ "city": "Lyon", "zip": 69001 })).unwrap();
        assert_eq!(a.zip, 69001);
        let e = args_struct::<Address>("ship", json!({ "city": "Lyon", "zip": -1 }));
        let e = e.err().unwrap().to_string();
        assert!(
            e.starts_with("argument `zip` of `ship`: invalid value"),
            "{e}"
        );
        let e = args_struct::<Address>("ship", json!({ "city": "Lyon" }));
        assert_eq!(
            e.err().unwrap().to_string(),
            "the arguments of `ship` do not fit: missing field `zip`"
        );
        let schema = args_schema::<Address>();
        assert_eq!(schema["required"], json!(["city", "zip"]));
        assert!(schema.get("title").is_none() && schema.get("$schema").is_none());
    }

    #[test]
    fn results_and_errors_are_written_for_the_model() {
        assert_eq!(tool_output(vec![1, 2]).unwrap(), json!([1, 2]));
        let failed: Result<u8, &str> = Err("no such order");
        assert_eq!(
            tool_result(failed).unwrap_err().to_string(),
            "no such order"
        );
    }
}
