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
}
