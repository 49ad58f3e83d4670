//! [`ToolSearch`]: with many tools, the model sees two meta-tools, `search_tools` and
//! `load_tool`, instead of every schema, and loads the tools it needs.
//!
//! The searchable tools (the catalog) are given to the processor, not to the agent. Before
//! each model call (`process_input_step`) it offers:
//!
//! - the agent's own tools, always;
//! - [`search_tools`](SEARCH_TOOLS) `{ "query": "…" }`, which returns the names and
//!   descriptions of the catalog tools that best match the query's words (by name first, then
//!   description);
//! - [`load_tool`](LOAD_TOOL) `{ "name": "…" }`, which loads a catalog tool (an unknown name is
//!   a tool error the model sees, with a hint to search);
//! - every catalog tool loaded so far in the request: a tool loaded by one step is offered, with
//!   its schema, from the next step to the end of the request. A new request starts with none
//!   loaded.
//!
//! Active tools set by an earlier input processor are kept, with the meta-tools and the loaded
//! tools added to them.
//!
//! # Example
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::tool_search::ToolSearch;
//! use processors::prelude::*;
//! use serde_json::json;
//!
//! let catalog = ["weather", "stocks", "translate", "calendar"].map(|name| {
//!     tool(name, format!("Looks up {name}."), json!({ "type": "object" }), move |_| async move {
//!         Ok(json!(format!("{name} result")))
//!     })
//! });
//! // Searches, loads, calls, then answers.
//! let model = ScriptedModel::new([
//!     Turn::empty().tool_call("c1", "search_tools", json!({ "query": "weather in Oslo" })),
//!     Turn::empty().tool_call("c2", "load_tool", json!({ "name": "weather" })),
//!     Turn::empty().tool_call("c3", "weather", json!({ "city": "Oslo" })),
//!     Turn::text("It is sunny."),
//! ]);
//! let agent = Agent::builder()
//!     .model(model.clone())
//!     .input(ToolSearch::new(catalog)?)
//!     .build()?;
//! let result = agent.generate("weather in Oslo?").await?;
//! assert_eq!(result.text, "It is sunny.");
//!
//! let offered = |i: usize| -> Vec<String> {
//!     model.requests()[i].tools.iter().map(|t| t.name.clone()).collect()
//! };
//! assert_eq!(offered(0), ["search_tools", "load_tool"]);
//! assert_eq!(offered(3), ["search_tools", "load_tool", "weather"]);
//! assert_eq!(result.tool_results[2].result, json!("weather result"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::BoxError;
use processors_runtime::agent::StepResult;
use processors_runtime::processor::{StepConfig, StepOverrides};
use processors_runtime::tool::{Tool, tool};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The name of the meta-tool that searches the catalog.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The name of the meta-tool that loads a catalog tool.
pub const LOAD_TOOL: &str = "load_tool";

/// The searchable tools, with the words each is found by.
struct Catalog {
    tools: Vec<Arc<dyn Tool>>,
    /// Per tool: the words of its name, and of its description.
    words: Vec<(Vec<String>, Vec<String>)>,
    max_results: usize,
}

/// Lower-case words of letters and digits (`get_weather` → `get`, `weather`).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl Catalog {
    /// The tools that best match `query`, best first.
    fn search(&self, query: &str) -> Vec<&Arc<dyn Tool>> {
        // A one-letter word would match the start of almost anything.
        let terms: Vec<String> = words(query).into_iter().filter(|w| w.len() > 1).collect();
        let mut scored: Vec<(usize, &Arc<dyn Tool>)> = self
            .tools
            .iter()
            .zip(&self.words)
            .map(|(tool, (name, description))| {
                let score = terms
                    .iter()
                    .map(|t| {
                        let in_name = if name.contains(t) {
                            4
                        } else if name.iter().any(|w| w.starts_with(t.as_str()))
                            || tool.name().to_lowercase().contains(t.as_str())
                        {
                            2
                        } else {
                            0
                        };
                        let in_description = description
                            .iter()
                            .filter(|w| w.starts_with(t.as_str()))
                            .count()
                            .min(2);
                        in_name + in_description
                    })
                    .sum::<usize>();
                (score, tool)
            })
            .filter(|(score, _)| *score > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name().cmp(b.1.name())));
        scored
            .into_iter()
            .take(self.max_results)
            .map(|(_, t)| t)
            .collect()
    }

    /// What `search_tools` answers: the best matches' names and descriptions.
    fn answer_search(&self, args: &Value) -> Result<Value, BoxError> {
        let query = match args["query"].as_str().map(str::trim) {
            Some(q) if !q.is_empty() => q,
            _ => return Err("give a non-empty `query`: words describing the tool you need".into()),
        };
        let tools: Vec<Value> = self
            .search(query)
            .into_iter()
            .map(|t| json!({ "name": t.name(), "description": t.description() }))
            .collect();
        Ok(match tools.is_empty() {
            true => json!({ "tools": [], "hint": "No tool matches; try other words." }),
            false => json!({ "tools": tools }),
        })
    }

    /// What `load_tool` answers: the tool loaded, or why none was.
    fn answer_load(&self, args: &Value) -> Result<Value, BoxError> {
        let name = args["name"].as_str().unwrap_or_default();
        match self.tools.iter().find(|t| t.name() == name) {
            Some(t) => Ok(json!({ "loaded": t.name(), "description": t.description() })),
            None => Err(format!(
                "there is no tool named `{name}`; call `{SEARCH_TOOLS}` to find one"
            )
            .into()),
        }
    }
}

/// Offers meta-tools to search and load catalog tools; see the [module docs](self).
#[derive(Clone)]
pub struct ToolSearch {
    catalog: Arc<Catalog>,
    search: Arc<dyn Tool>,
    load: Arc<dyn Tool>,
}

impl std::fmt::Debug for ToolSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSearch")
            .field(
                "catalog",
                &self
                    .catalog
                    .tools
                    .iter()
                    .map(|t| t.name())
                    .collect::<Vec<_>>(),
            )
            .field("max_results", &self.catalog.max_results)
            .finish()
    }
}

/// Builds a [`ToolSearch`]; see [`ToolSearch::builder`].
#[must_use]
pub struct ToolSearchBuilder {
    tools: Vec<Arc<dyn Tool>>,
    max_results: usize,
}

impl ToolSearchBuilder {
    /// How many tools a search returns at most (5 by default).
    pub fn max_results(mut self, n: usize) -> Self {
        self.max_results = n;
        self
    }

    /// Checks the catalog and makes the meta-tools.
    pub fn build(self) -> Result<ToolSearch, ConfigError> {
        if self.tools.is_empty() {
            return Err(ConfigError::Empty {
                what: "the catalog",
                why: "give the tools the model may search",
            });
        }
        if self.max_results == 0 {
            return Err(ConfigError::Zero {
                option: "max_results",
                why: "a search would never find a tool; give at least 1",
            });
        }
        let mut names = BTreeSet::new();
        for t in &self.tools {
            if t.name() == SEARCH_TOOLS || t.name() == LOAD_TOOL {
                return Err(ConfigError::InvalidName {
                    what: "catalog tool",
                    name: t.name().to_owned(),
                    why: "it is the name of a meta-tool; rename the tool",
                });
            }
            if !names.insert(t.name()) {
                return Err(ConfigError::Duplicate {
                    what: "tools in the catalog",
                    name: t.name().to_owned(),
                });
            }
        }
        let words = self
            .tools
            .iter()
            .map(|t| (words(t.name()), words(t.description())))
            .collect();
        let catalog = Arc::new(Catalog {
            tools: self.tools,
            words,
            max_results: self.max_results,
        });
        Ok(ToolSearch {
            search: search_tool(&catalog),
            load: load_tool(&catalog),
            catalog,
        })
    }
}

/// `search_tools`: the best matches of a query.
fn search_tool(catalog: &Arc<Catalog>) -> Arc<dyn Tool> {
    let catalog = catalog.clone();
    let description = format!(
        "Finds tools by keywords. {} more tools are available than you are offered: search for what you need, then load a tool with `{LOAD_TOOL}` to be able to call it.",
        catalog.tools.len()
    );
    let parameters = json!({
        "type": "object",
        "properties": {
            "query": { "type": "string", "description": "Words describing the tool you need." }
        },
        "required": ["query"],
    });
    tool(SEARCH_TOOLS, description, parameters, move |args: Value| {
        let found = catalog.answer_search(&args);
        async move { found }
    })
}

/// `load_tool`: makes a catalog tool available from the next step.
fn load_tool(catalog: &Arc<Catalog>) -> Arc<dyn Tool> {
    let catalog = catalog.clone();
    let parameters = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "The tool's name, as search_tools gave it." }
        },
        "required": ["name"],
    });
    let description = format!(
        "Loads a tool found with `{SEARCH_TOOLS}`; you can call it from your next step on."
    );
    tool(LOAD_TOOL, description, parameters, move |args: Value| {
        let loaded = catalog.answer_load(&args);
        async move { loaded }
    })
}

/// The per-request state of a [`ToolSearch`]: the tools loaded so far.
#[derive(Debug, Default)]
pub struct ToolSearchState {
    loaded: BTreeSet<String>,
    /// How many of the run's steps were read.
    read: usize,
}

impl ToolSearch {
    /// Searches these tools, returning at most 5 per search.
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Result<Self, ConfigError> {
        Self::builder(tools).build()
    }

    /// Starts configuring a search over these tools.
    ///
    /// ```
    /// use processors::builtins::ConfigError;
    /// use processors::builtins::tool_search::ToolSearch;
    /// use processors::tool::tool;
    /// use serde_json::json;
    /// let t = |name: &str| tool(name, "A tool.", json!({}), |_| async { Ok(json!(null)) });
    /// let search = ToolSearch::builder([t("a"), t("b")]).max_results(1).build().unwrap();
    /// let err = ToolSearch::new([t("a"), t("a")]).unwrap_err();
    /// assert!(matches!(err, ConfigError::Duplicate { ref name, .. } if name == "a"));
    /// ```
    pub fn builder(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> ToolSearchBuilder {
        ToolSearchBuilder {
            tools: tools.into_iter().collect(),
            max_results: 5,
        }
    }
}

#[processor(crate = processors_runtime, id = "tool-search")]
impl ToolSearch {
    /// Before each call: the agent's tools, the meta-tools, and the tools loaded so far.
    fn process_input_step(
        &self,
        steps: &[StepResult],
        config: &StepConfig,
        state: &mut ToolSearchState,
    ) -> StepOverrides {
        for step in steps.iter().skip(state.read) {
            let loads = step
                .tool_results
                .iter()
                .filter(|r| r.tool_name == LOAD_TOOL && !r.is_error);
            for r in loads {
                if let Some(name) = r.result["loaded"].as_str() {
                    state.loaded.insert(name.to_owned());
                }
            }
        }
        state.read = steps.len();
        let mut tools = config.tools.clone();
        let mut added = vec![self.search.clone(), self.load.clone()];
        added.extend(
            self.catalog
                .tools
                .iter()
                .filter(|t| state.loaded.contains(t.name()))
                .cloned(),
        );
        added.retain(|t| !tools.iter().any(|have| have.name() == t.name()));
        let names: Vec<String> = added.iter().map(|t| t.name().to_owned()).collect();
        tools.extend(added);
        let overrides = StepOverrides::new().tools(tools);
        match &config.active_tools {
            Some(active) => overrides.active_tools(active.iter().cloned().chain(names)),
            None => overrides,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, description: &str) -> Arc<dyn Tool> {
        tool(name, description, json!({}), |_| async { Ok(json!(null)) })
    }

    fn catalog() -> ToolSearch {
        ToolSearch::builder([
            t("get_weather", "Current weather and forecast for a city."),
            t("stock_price", "Latest price of a stock ticker."),
            t("translate", "Translates text between languages."),
            t("weather_alerts", "Severe weather warnings for a region."),
            t("calendar", "Reads and writes calendar events."),
        ])
        .max_results(3)
        .build()
        .unwrap()
    }

    fn names(found: Vec<&Arc<dyn Tool>>) -> Vec<&str> {
        found.into_iter().map(|t| t.name()).collect()
    }

    #[test]
    fn a_search_ranks_name_matches_first() {
        let s = catalog();
        assert_eq!(
            names(s.catalog.search("weather forecast")),
            ["get_weather", "weather_alerts"]
        );
        assert_eq!(names(s.catalog.search("ALERTS")), ["weather_alerts"]);
        assert_eq!(
            names(s.catalog.search("price of AAPL stock")),
            ["stock_price"]
        );
        assert_eq!(
            names(s.catalog.search("transl")),
            ["translate"],
            "a prefix finds"
        );
        assert!(s.catalog.search("quantum chromodynamics").is_empty());
        assert!(s.catalog.search("").is_empty());
        assert!(
            s.catalog.search("a b c").is_empty(),
            "one-letter words find nothing"
        );
        assert_eq!(
            s.catalog.search("weather stock translate calendar").len(),
            3,
            "at most max_results"
        );
    }

    #[test]
    fn the_meta_tools_answer_the_model() {
        let s = catalog();
        let found = s
            .catalog
            .answer_search(&json!({ "query": "weather" }))
            .unwrap();
        assert_eq!(found["tools"][0]["name"], "get_weather");
        assert_eq!(
            found["tools"][0]["description"],
            "Current weather and forecast for a city."
        );
        let nothing = s.catalog.answer_search(&json!({ "query": "zzz" })).unwrap();
        assert_eq!(nothing["tools"], json!([]));
        assert!(nothing["hint"].is_string());
        for bad in [json!({}), json!({ "query": "  " }), json!({ "query": 3 })] {
            let err = s.catalog.answer_search(&bad).unwrap_err();
            assert!(err.to_string().contains("non-empty `query`"));
        }
        let loaded = s
            .catalog
            .answer_load(&json!({ "name": "translate" }))
            .unwrap();
        assert_eq!(loaded["loaded"], "translate");
        let err = s
            .catalog
            .answer_load(&json!({ "name": "nope" }))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "there is no tool named `nope`; call `search_tools` to find one"
        );
        assert!(s.catalog.answer_load(&json!({})).is_err());
    }

    #[test]
    fn bad_catalogs_are_refused() {
        let none: Vec<Arc<dyn Tool>> = Vec::new();
        assert!(matches!(
            ToolSearch::new(none).unwrap_err(),
            ConfigError::Empty {
                what: "the catalog",
                ..
            }
        ));
        assert!(matches!(
            ToolSearch::new([t("load_tool", "x")]).unwrap_err(),
            ConfigError::InvalidName { what: "catalog tool", ref name, .. } if name == "load_tool"
        ));
        assert!(matches!(
            ToolSearch::new([t("search_tools", "x")]).unwrap_err(),
            ConfigError::InvalidName { what: "catalog tool", ref name, .. } if name == "search_tools"
        ));
        assert!(matches!(
            ToolSearch::new([t("a", "x"), t("a", "y")]).unwrap_err(),
            ConfigError::Duplicate { ref name, .. } if name == "a"
        ));
        assert!(matches!(
            ToolSearch::builder([t("a", "x")])
                .max_results(0)
                .build()
                .unwrap_err(),
            ConfigError::Zero {
                option: "max_results",
                ..
            }
        ));
    }
}
