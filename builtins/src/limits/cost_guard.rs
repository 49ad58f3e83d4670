//! [`CostGuard`]: a spending limit in tokens or money, per run or shared across runs of a
//! resource (a user, a tenant) or a thread.
//!
//! The guard accounts what each model call used (the usage the provider reports), priced by
//! the model that made it, and:
//!
//! - **before each call** (`process_input_step`), refuses the call once the budget is spent,
//!   ending the run with a trip wire;
//! - **after each call** (`process_output_step`), adds the call's usage, and when the budget is
//!   passed ends the run before the tools of the step run; a final answer that passes it is
//!   already paid for, so it is delivered (with a warning), and the next call is refused;
//! - **warns** once per run, through `on_violation` (kind `warn`), when the spending reaches
//!   [`warn_at_percent`](CostGuardBuilder::warn_at_percent) of the budget.
//!
//! Place the same guard in both lists (clone it: the two share the run's state, as processors
//! with one id do): the input side learns which model each step calls (put it last among the
//! input processors, after any that switch models) and gates the calls, the output side counts.
//! A guard only in the output list counts token budgets, and money budgets when a
//! [`fallback_price`](CostGuardBuilder::fallback_price) prices every model.
//!
//! # Budgets and prices
//!
//! [`Budget::Tokens`] counts input and output tokens together. [`Budget::Cost`] prices them with
//! a [`PriceTable`] (per million input and output tokens, in any currency, the budget's), by the
//! longest model-id prefix in the table. The default table, [`PriceTable::example`], holds list
//! prices of a few well-known models as an example only: prices change, so give your own with
//! [`prices`](CostGuardBuilder::prices). A money budget and a model with no price fail the run
//! with an error naming the model, before the call.
//!
//! # Scopes
//!
//! [`CostScope::Run`] (the default) counts one run. [`CostScope::Resource`] and
//! [`CostScope::Thread`] count into a [`CostLedger`] you keep (cheap to clone, shared, safe
//! across threads), keyed by the request context's resource id or thread id
//! ([`RequestContext::with_thread`]); a run without that id fails with an error. The ledger
//! has no clock: reset a key when its period ends. Runs in flight at once may pass a shared
//! budget by what their calls in flight cost, since each call is checked before it starts.
//!
//! # Example
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::cost_guard::{Budget, CostGuard, CostLedger, CostScope};
//! use processors::prelude::*;
//!
//! let ledger = CostLedger::new();
//! let guard = CostGuard::builder(Budget::Tokens(1_000))
//!     .scope(CostScope::Resource(ledger.clone()))
//!     .warn_at_percent(80)
//!     .build()?;
//! let agent = Agent::builder()
//!     .model(ScriptedModel::cycle([Turn::text("Hi!").usage(400, 200)]))
//!     .input(guard.clone())
//!     .output(guard)
//!     .build()?;
//! let as_user = |id: &str| {
//!     GenerateOptions::new().request_context(RequestContext::new().with_thread("t", id))
//! };
//!
//! assert_eq!(agent.generate_with("hello", as_user("u-1")).await?.text, "Hi!");
//! assert_eq!(ledger.spent("u-1").tokens(), 600);
//! agent.generate_with("hello again", as_user("u-1")).await?; // passes the budget
//! let refused = agent.generate_with("one more", as_user("u-1")).await?;
//! assert!(refused.tripwire.unwrap().reason.starts_with("the budget is spent"));
//! assert_eq!(agent.generate_with("hello", as_user("u-2")).await?.text, "Hi!");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! [`RequestContext::with_thread`]: processors_runtime::RequestContext::with_thread

use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::chunk::{FinishReason, Usage};
use processors_runtime::context::RequestContext;
use processors_runtime::message::ToolCall;
use processors_runtime::model::LanguageModel;
use processors_runtime::processor::extract::RunUsage;
use processors_runtime::processor::{Abort, ProcessorError, StepConfig};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// A spending limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// Input and output tokens together.
    Tokens(u64),
    /// Money, in the currency of the [`PriceTable`].
    Cost(f64),
}

/// The price of a model, per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Per million input (prompt) tokens.
    pub input_per_million: f64,
    /// Per million output (completion) tokens.
    pub output_per_million: f64,
}

impl Price {
    /// A price per million input and output tokens.
    pub const fn per_million(input: f64, output: f64) -> Price {
        Price {
            input_per_million: input,
            output_per_million: output,
        }
    }

    /// What `input` and `output` tokens cost.
    ///
    /// ```
    /// use processors::builtins::cost_guard::Price;
    /// let price = Price::per_million(2.0, 8.0);
    /// assert_eq!(price.cost(500_000, 250_000), 3.0);
    /// ```
    pub fn cost(&self, input: u64, output: u64) -> f64 {
        (input as f64 * self.input_per_million + output as f64 * self.output_per_million)
            / 1_000_000.0
    }

    fn is_valid(&self) -> bool {
        [self.input_per_million, self.output_per_million]
            .iter()
            .all(|p| p.is_finite() && *p >= 0.0)
    }
}

/// Prices by model id; a model takes the price of the longest entry its id starts with (its
/// id with or without a `provider/` prefix).
///
/// ```
/// use processors::builtins::cost_guard::{Price, PriceTable};
/// let table = PriceTable::new()
///     .with("gpt-4o", Price::per_million(2.5, 10.0))
///     .with("gpt-4o-mini", Price::per_million(0.15, 0.6));
/// assert_eq!(table.price_of("gpt-4o-2024-08-06"), Some(Price::per_million(2.5, 10.0)));
/// assert_eq!(table.price_of("openai/gpt-4o-mini"), Some(Price::per_million(0.15, 0.6)));
/// assert_eq!(table.price_of("llama3"), None);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable {
    entries: Vec<(String, Price)>,
}

impl Default for PriceTable {
    /// [`PriceTable::example`].
    fn default() -> Self {
        Self::example()
    }
}

impl PriceTable {
    /// An empty table.
    pub fn new() -> Self {
        PriceTable {
            entries: Vec::new(),
        }
    }

    /// An example table: list prices in US dollars of a few well-known models, as published
    /// when it was written. Prices change; use it to try things out, and give your own table
    /// for real budgets.
    ///
    /// | model | input / M | output / M |
    /// |---|---|---|
    /// | `gpt-4o` | 2.50 | 10.00 |
    /// | `gpt-4o-mini` | 0.15 | 0.60 |
    /// | `gpt-4.1` | 2.00 | 8.00 |
    /// | `gpt-4.1-mini` | 0.40 | 1.60 |
    /// | `gpt-4.1-nano` | 0.10 | 0.40 |
    /// | `o4-mini` | 1.10 | 4.40 |
    /// | `claude-3-5-haiku` | 0.80 | 4.00 |
    /// | `claude-sonnet-4` | 3.00 | 15.00 |
    /// | `claude-opus-4` | 15.00 | 75.00 |
    pub fn example() -> Self {
        [
            ("gpt-4o", 2.5, 10.0),
            ("gpt-4o-mini", 0.15, 0.6),
            ("gpt-4.1", 2.0, 8.0),
            ("gpt-4.1-mini", 0.4, 1.6),
            ("gpt-4.1-nano", 0.1, 0.4),
            ("o4-mini", 1.1, 4.4),
            ("claude-3-5-haiku", 0.8, 4.0),
            ("claude-sonnet-4", 3.0, 15.0),
            ("claude-opus-4", 15.0, 75.0),
        ]
        .into_iter()
        .fold(PriceTable::new(), |t, (model, i, o)| {
            t.with(model, Price::per_million(i, o))
        })
    }

    /// The table with `model` priced at `price` (replacing an entry for the same id).
    pub fn with(mut self, model: impl Into<String>, price: Price) -> Self {
        let model = model.into();
        self.entries.retain(|(m, _)| *m != model);
        self.entries.push((model, price));
        self
    }

    /// The price of a model, by the longest entry its id starts with.
    pub fn price_of(&self, model_id: &str) -> Option<Price> {
        let bare = model_id.rsplit('/').next().unwrap_or(model_id);
        self.entries
            .iter()
            .filter(|(m, _)| model_id.starts_with(m.as_str()) || bare.starts_with(m.as_str()))
            .max_by_key(|(m, _)| m.len())
            .map(|(_, p)| *p)
    }
}

/// What was spent: tokens and their cost.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
    /// Their cost, by the price table (0 when no price was needed).
    pub cost: f64,
}

impl Spend {
    /// Input and output tokens together.
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    fn add(&mut self, other: Spend) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cost += other.cost;
    }
}

/// Spending shared across runs, keyed by resource or thread id: clones share it, and it is
/// safe to use from many threads. One ledger serves one scope.
///
/// ```
/// use processors::builtins::cost_guard::{CostLedger, Spend};
/// let ledger = CostLedger::new();
/// ledger.add("u-1", Spend { input_tokens: 10, output_tokens: 5, cost: 0.01 });
/// assert_eq!(ledger.clone().spent("u-1").tokens(), 15);
/// ledger.reset("u-1"); // a new billing period
/// assert_eq!(ledger.spent("u-1"), Spend::default());
/// ```
#[derive(Debug, Clone, Default)]
pub struct CostLedger {
    spent: Arc<Mutex<HashMap<String, Spend>>>,
}

impl CostLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Spend>) -> T) -> T {
        f(&mut self.spent.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// What `key` spent so far.
    pub fn spent(&self, key: &str) -> Spend {
        self.with(|m| m.get(key).copied().unwrap_or_default())
    }

    /// Adds to what `key` spent (the guard does this after each call; add spending made
    /// elsewhere, or restored from storage, the same way).
    pub fn add(&self, key: &str, spend: Spend) {
        self.with(|m| m.entry(key.to_owned()).or_default().add(spend));
    }

    /// Forgets what `key` spent.
    pub fn reset(&self, key: &str) {
        self.with(|m| m.remove(key));
    }
}

/// Whose spending a budget limits.
#[derive(Debug, Clone, Default)]
pub enum CostScope {
    /// One run.
    #[default]
    Run,
    /// Every run of the request context's resource, in this ledger.
    Resource(CostLedger),
    /// Every run of the request context's thread, in this ledger.
    Thread(CostLedger),
}

impl CostScope {
    fn name(&self) -> &'static str {
        match self {
            CostScope::Run => "run",
            CostScope::Resource(_) => "resource",
            CostScope::Thread(_) => "thread",
        }
    }
}

/// Limits spending in tokens or money; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct CostGuard {
    budget: Budget,
    scope: CostScope,
    warn_at: Option<u8>,
    prices: PriceTable,
    fallback: Option<Price>,
}

/// Builds a [`CostGuard`]; see [`CostGuard::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct CostGuardBuilder {
    inner: CostGuard,
}

impl CostGuardBuilder {
    /// Whose spending the budget limits ([`CostScope::Run`] by default).
    pub fn scope(mut self, scope: CostScope) -> Self {
        self.inner.scope = scope;
        self
    }

    /// Warns once per run when the spending reaches this percentage of the budget (no warning
    /// by default).
    pub fn warn_at_percent(mut self, percent: u8) -> Self {
        self.inner.warn_at = Some(percent);
        self
    }

    /// The prices of money budgets ([`PriceTable::example`] by default).
    pub fn prices(mut self, prices: PriceTable) -> Self {
        self.inner.prices = prices;
        self
    }

    /// The price of models the table does not list (by default, such a model fails the run).
    pub fn fallback_price(mut self, price: Price) -> Self {
        self.inner.fallback = Some(price);
        self
    }

    /// Checks the configuration.
    pub fn build(self) -> Result<CostGuard, ConfigError> {
        let g = self.inner;
        let budget_ok = match g.budget {
            Budget::Tokens(n) => n > 0,
            Budget::Cost(c) => c.is_finite() && c > 0.0,
        };
        if !budget_ok {
            return Err(ConfigError::OutOfRange {
                option: "budget",
                value: format!("{:?}", g.budget),
                expected: "give a positive number of tokens or a positive, finite amount",
            });
        }
        if let Some(p) = g.warn_at
            && !(1..=99).contains(&p)
        {
            return Err(ConfigError::OutOfRange {
                option: "warn_at_percent",
                value: p.to_string(),
                expected: "give a percentage from 1 to 99",
            });
        }
        if g.prices.entries.iter().any(|(m, _)| m.is_empty()) {
            return Err(ConfigError::Empty {
                what: "a model id in the price table",
                why: "an entry with an empty id would price every model",
            });
        }
        let prices = g.prices.entries.iter().map(|(m, p)| (m.as_str(), p));
        for (model, price) in prices.chain(g.fallback.as_ref().map(|p| ("fallback", p))) {
            if !price.is_valid() {
                return Err(ConfigError::OutOfRange {
                    option: "prices",
                    value: format!("{price:?} for `{model}`"),
                    expected: "prices are finite and not negative",
                });
            }
        }
        Ok(g)
    }
}

/// The per-request state of a [`CostGuard`].
#[derive(Debug, Default)]
pub struct CostGuardState {
    /// The model of the step under way, as the input side saw it.
    model: Option<String>,
    /// The run's usage accounted so far.
    seen: Usage,
    /// What the run spent.
    run: Spend,
    /// Whether the run was warned.
    warned: bool,
}

/// How a budget stands.
enum Standing {
    Within,
    Warn,
    Spent,
}

impl CostGuard {
    /// A guard of `budget` for each run, with the example prices and no warning.
    pub fn new(budget: Budget) -> Result<Self, ConfigError> {
        Self::builder(budget).build()
    }

    /// Starts configuring a guard of `budget`.
    ///
    /// ```
    /// use processors::builtins::cost_guard::*;
    /// let guard = CostGuard::builder(Budget::Cost(2.0))
    ///     .scope(CostScope::Thread(CostLedger::new()))
    ///     .warn_at_percent(75)
    ///     .prices(PriceTable::new().with("my-model", Price::per_million(1.0, 3.0)))
    ///     .fallback_price(Price::per_million(5.0, 15.0))
    ///     .build()
    ///     .unwrap();
    /// assert!(CostGuard::new(Budget::Tokens(0)).is_err());
    /// ```
    pub fn builder(budget: Budget) -> CostGuardBuilder {
        CostGuardBuilder {
            inner: CostGuard {
                budget,
                scope: CostScope::Run,
                warn_at: None,
                prices: PriceTable::example(),
                fallback: None,
            },
        }
    }

    /// The ledger key of the request, for the shared scopes.
    fn key<'c>(&self, cx: &'c RequestContext) -> Result<Option<&'c str>, ProcessorError> {
        let (key, what) = match &self.scope {
            CostScope::Run => return Ok(None),
            CostScope::Resource(_) => (cx.resource_id(), "resource"),
            CostScope::Thread(_) => (cx.thread_id(), "thread"),
        };
        match key {
            Some(k) => Ok(Some(k)),
            None => Err(ProcessorError::msg(format!(
                "CostGuard counts per {what}, but the request context has no {what} id; set one with RequestContext::with_thread"
            ))),
        }
    }

    /// What the scope spent, this run's spending included.
    fn spent(&self, state: &CostGuardState, key: Option<&str>) -> Spend {
        match (&self.scope, key) {
            (CostScope::Resource(l) | CostScope::Thread(l), Some(k)) => l.spent(k),
            _ => state.run,
        }
    }

    /// The price of `model`, when the budget needs one.
    fn price(&self, model: Option<&str>) -> Result<Option<Price>, ProcessorError> {
        if let Budget::Tokens(_) = self.budget {
            return Ok(None);
        }
        let listed = model.and_then(|m| self.prices.price_of(m));
        match (listed.or(self.fallback), model) {
            (Some(p), _) => Ok(Some(p)),
            (None, Some(m)) => Err(ProcessorError::msg(format!(
                "CostGuard has no price for model `{m}`; add it to the price table or set a fallback price"
            ))),
            (None, None) => Err(ProcessorError::msg(
                "CostGuard prices a call by its model, which it learns in process_input_step; place it in the input list as well, or set a fallback price",
            )),
        }
    }

    fn standing(&self, spent: &Spend) -> Standing {
        let (spent, budget) = match self.budget {
            Budget::Tokens(n) => (spent.tokens() as f64, n as f64),
            Budget::Cost(c) => (spent.cost, c),
        };
        if spent >= budget {
            Standing::Spent
        } else if self
            .warn_at
            .is_some_and(|p| spent >= budget * f64::from(p) / 100.0)
        {
            Standing::Warn
        } else {
            Standing::Within
        }
    }

    /// How the budget and the spending read in reports.
    fn describe(&self, spent: &Spend) -> (String, Value) {
        let (text, budget, amount, unit) = match self.budget {
            Budget::Tokens(n) => (
                format!("{} of {n} tokens", spent.tokens()),
                json!(n),
                json!(spent.tokens()),
                "tokens",
            ),
            Budget::Cost(c) => (
                format!("{:.4} of {c:.4}", spent.cost),
                json!(c),
                json!(spent.cost),
                "cost",
            ),
        };
        let metadata = json!({
            "scope": self.scope.name(),
            "unit": unit,
            "budget": budget,
            "spent": amount,
            "inputTokens": spent.input_tokens,
            "outputTokens": spent.output_tokens,
        });
        (text, metadata)
    }

    /// The warning that spending reached the threshold: once per run.
    fn warn(&self, state: &mut CostGuardState, spent: &Spend) -> Result<(), ProcessorError> {
        if state.warned {
            return Ok(());
        }
        state.warned = true;
        let (text, metadata) = self.describe(spent);
        let percent = self.warn_at.unwrap_or(100);
        let reason = format!("spending reached {percent}% of the budget ({text})");
        Err(Abort::new().reason(reason).metadata(metadata).warn())
    }

    /// The warning that a final answer passed the budget (the run ends with it).
    fn passed_by_answer(&self, spent: &Spend) -> ProcessorError {
        let (text, metadata) = self.describe(spent);
        let reason = format!("the budget is spent ({text}) by the final answer");
        Abort::new().reason(reason).metadata(metadata).warn()
    }
}

#[processor(crate = processors_runtime, id = "cost-guard")]
impl CostGuard {
    /// Before each call: learns the model, and refuses the call once the budget is spent.
    fn process_input_step(
        &self,
        config: &StepConfig,
        request_context: &RequestContext,
        state: &mut CostGuardState,
    ) -> Result<(), ProcessorError> {
        let model = config.model.model_id();
        self.price(Some(model))?;
        state.model = Some(model.to_owned());
        let key = self.key(request_context)?;
        let spent = self.spent(state, key);
        match self.standing(&spent) {
            Standing::Within => Ok(()),
            Standing::Warn => self.warn(state, &spent),
            Standing::Spent => {
                let (text, metadata) = self.describe(&spent);
                Err(Abort::new()
                    .reason(format!("the budget is spent ({text}); no more model calls"))
                    .metadata(metadata)
                    .into())
            }
        }
    }

    /// After each call: adds what it used; past the budget, ends the run before its tools.
    fn process_output_step(
        &self,
        run_usage: RunUsage,
        tool_calls: &[ToolCall],
        finish_reason: FinishReason,
        request_context: &RequestContext,
        state: &mut CostGuardState,
    ) -> Result<(), ProcessorError> {
        // The run's usage includes calls this hook did not see (attempts rejected before it).
        let RunUsage(usage) = run_usage;
        let input = usage.input_tokens.saturating_sub(state.seen.input_tokens);
        let output = usage.output_tokens.saturating_sub(state.seen.output_tokens);
        state.seen = usage;
        let price = self.price(state.model.as_deref())?;
        let spend = Spend {
            input_tokens: input,
            output_tokens: output,
            cost: price.map_or(0.0, |p| p.cost(input, output)),
        };
        state.run.add(spend);
        let key = self.key(request_context)?;
        if let (CostScope::Resource(l) | CostScope::Thread(l), Some(k)) = (&self.scope, key) {
            l.add(k, spend);
        }
        let spent = self.spent(state, key);
        let goes_on = !tool_calls.is_empty() || finish_reason == FinishReason::ToolCalls;
        match self.standing(&spent) {
            Standing::Within => Ok(()),
            Standing::Spent if goes_on => {
                let (text, metadata) = self.describe(&spent);
                Err(Abort::new()
                    .reason(format!("the budget is spent ({text}); the run stops here"))
                    .metadata(metadata)
                    .into())
            }
            Standing::Spent => Err(self.passed_by_answer(&spent)),
            Standing::Warn => self.warn(state, &spent),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_prices_a_model() {
        let table = PriceTable::example();
        assert_eq!(
            table.price_of("gpt-4.1-mini-2025-04-14"),
            Some(Price::per_million(0.4, 1.6))
        );
        assert_eq!(
            table.price_of("gpt-4.1"),
            Some(Price::per_million(2.0, 8.0))
        );
        assert_eq!(
            table.price_of("anthropic/claude-sonnet-4-20250514"),
            Some(Price::per_million(3.0, 15.0))
        );
        assert_eq!(table.price_of("mistral-large"), None);
        let replaced = table.with("gpt-4o", Price::per_million(1.0, 1.0));
        assert_eq!(
            replaced.price_of("gpt-4o"),
            Some(Price::per_million(1.0, 1.0))
        );
    }

    #[test]
    fn bad_configurations_are_refused() {
        for budget in [
            Budget::Tokens(0),
            Budget::Cost(0.0),
            Budget::Cost(-1.0),
            Budget::Cost(f64::NAN),
            Budget::Cost(f64::INFINITY),
        ] {
            assert!(matches!(
                CostGuard::new(budget).unwrap_err(),
                ConfigError::OutOfRange {
                    option: "budget",
                    ..
                }
            ));
        }
        for p in [0, 100, 250] {
            assert!(matches!(
                CostGuard::builder(Budget::Tokens(10))
                    .warn_at_percent(p)
                    .build()
                    .unwrap_err(),
                ConfigError::OutOfRange {
                    option: "warn_at_percent",
                    ..
                }
            ));
        }
        let bad = Price::per_million(-1.0, 2.0);
        let err = CostGuard::builder(Budget::Cost(1.0))
            .prices(PriceTable::new().with("m", bad))
            .build()
            .unwrap_err();
        assert!(matches!(
            err,
            ConfigError::OutOfRange {
                option: "prices",
                ..
            }
        ));
        let err = CostGuard::builder(Budget::Cost(1.0))
            .fallback_price(Price::per_million(f64::NAN, 1.0))
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("`fallback`"));
        let err = CostGuard::builder(Budget::Cost(1.0))
            .prices(PriceTable::new().with("", Price::per_million(1.0, 1.0)))
            .build()
            .unwrap_err();
        assert!(matches!(
            err,
            ConfigError::Empty {
                what: "a model id in the price table",
                ..
            }
        ));
    }

    #[test]
    fn a_ledger_is_shared_across_threads() {
        let ledger = CostLedger::new();
        let spend = Spend {
            input_tokens: 1,
            output_tokens: 1,
            cost: 0.5,
        };
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let ledger = ledger.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        ledger.add("u", spend);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(ledger.spent("u").tokens(), 1_600);
        assert_eq!(ledger.spent("u").cost, 400.0);
        assert_eq!(ledger.spent("other"), Spend::default());
    }
}
