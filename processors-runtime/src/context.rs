//! [`RequestContext`]: typed values of one request.

use serde_json::Value;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// Values the caller attaches to one request: the memory thread and resource, named JSON
/// values, and typed values.
///
/// Cloning is cheap (typed values are shared).
///
/// ```
/// use processors_runtime::RequestContext;
/// #[derive(Debug, PartialEq)]
/// struct Tenant(&'static str);
/// let cx = RequestContext::new()
///     .with_thread("t-1", "user-7")
///     .with(Tenant("acme"))
///     .with_value("tier", serde_json::json!("gold"));
/// assert_eq!(cx.get::<Tenant>(), Some(&Tenant("acme")));
/// assert_eq!(cx.thread_id(), Some("t-1"));
/// assert_eq!(cx.value("tier").unwrap(), "gold");
/// ```
#[derive(Clone, Default)]
pub struct RequestContext {
    thread_id: Option<String>,
    resource_id: Option<String>,
    values: HashMap<String, Value>,
    typed: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
    /// What processors report to the run besides their results (one per run, shared by the
    /// copies workflows make); `None` outside a run. The processor layer's `RunReports`, which
    /// this layer does not name.
    run: Option<Arc<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("thread_id", &self.thread_id)
            .field("resource_id", &self.resource_id)
            .field("values", &self.values)
            .field("typed", &self.typed.len())
            .finish()
    }
}

impl RequestContext {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the memory thread and the resource (user, tenant) it belongs to.
    pub fn with_thread(
        mut self,
        thread_id: impl Into<String>,
        resource_id: impl Into<String>,
    ) -> Self {
        self.thread_id = Some(thread_id.into());
        self.resource_id = Some(resource_id.into());
        self
    }

    /// Sets the resource (user, tenant) alone, for a call that belongs to no thread: what
    /// processors scoped by resource read (a budget per tenant), memory loading nothing.
    ///
    /// ```
    /// use processors_runtime::RequestContext;
    /// let cx = RequestContext::new().with_resource("acme");
    /// assert_eq!((cx.thread_id(), cx.resource_id()), (None, Some("acme")));
    /// ```
    pub fn with_resource(mut self, resource_id: impl Into<String>) -> Self {
        self.resource_id = Some(resource_id.into());
        self
    }

    /// Adds a typed value (one per type).
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.insert(value);
        self
    }

    /// Adds a named JSON value.
    pub fn with_value(mut self, key: impl Into<String>, value: Value) -> Self {
        self.values.insert(key.into(), value);
        self
    }

    /// Inserts a typed value, replacing one of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.typed.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The typed value of type `T`.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.typed.get(&TypeId::of::<T>())?.downcast_ref()
    }

    /// A named JSON value.
    pub fn value(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    /// Sets a named JSON value.
    pub fn set_value(&mut self, key: impl Into<String>, value: Value) {
        self.values.insert(key.into(), value);
    }

    /// The memory thread id.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// The resource id.
    pub fn resource_id(&self) -> Option<&str> {
        self.resource_id.as_deref()
    }

    /// The run's reports, for the processor layer to read and write; `None` outside a run.
    #[inline]
    pub(crate) fn run_reports(&self) -> Option<&Arc<dyn Any + Send + Sync>> {
        self.run.as_ref()
    }

    /// Attaches a run's reports (whatever an earlier run left).
    pub(crate) fn set_run_reports(&mut self, reports: Arc<dyn Any + Send + Sync>) {
        self.run = Some(reports);
    }
}
