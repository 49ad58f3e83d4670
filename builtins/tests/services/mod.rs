//! The servers the storage tests use: PostgreSQL and Redis on loopback, started (and
//! installed when missing) by `scripts/services.sh` the first time a test finds one down.
#![allow(dead_code)]

use std::net::TcpStream;
use std::sync::Mutex;
use std::time::Duration;

/// The PostgreSQL URL of the tests (`PROCESSORS_POSTGRES_URL`, or the script's server), once
/// it answers; `None` when it is down and `PROCESSORS_SKIP_SERVICES` is set.
pub fn postgres_url() -> Option<String> {
    let url = std::env::var("PROCESSORS_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:55432/processors".to_owned());
    up("postgres", &url, "127.0.0.1:55432").then_some(url)
}

/// The Redis URL of the tests (`PROCESSORS_REDIS_URL`, or the script's server), once it
/// answers; `None` when it is down and `PROCESSORS_SKIP_SERVICES` is set.
pub fn redis_url() -> Option<String> {
    let url = std::env::var("PROCESSORS_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:56379/".to_owned());
    up("redis", &url, "127.0.0.1:56379").then_some(url)
}

fn answers(addr: &str) -> bool {
    addr.parse()
        .is_ok_and(|a| TcpStream::connect_timeout(&a, Duration::from_secs(1)).is_ok())
}

/// Whether the server answers, after starting it with the script if it did not.
fn up(service: &str, url: &str, addr: &str) -> bool {
    // One start at a time: tests run in parallel.
    static STARTING: Mutex<()> = Mutex::new(());
    let _one = STARTING.lock().unwrap_or_else(|e| e.into_inner());
    let custom = std::env::var_os(format!("PROCESSORS_{}_URL", service.to_uppercase())).is_some();
    if custom || answers(addr) {
        return true;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/services.sh");
    let started = std::process::Command::new("bash")
        .arg(script)
        .arg(service)
        .status()
        .is_ok_and(|s| s.success());
    if started && answers(addr) {
        return true;
    }
    if std::env::var_os("PROCESSORS_SKIP_SERVICES").is_some() {
        eprintln!("skipped: {service} is down at {url}, and PROCESSORS_SKIP_SERVICES is set");
        return false;
    }
    panic!(
        "{service} is not running at {url} and `scripts/services.sh {service}` could not start it; \
         start it (bash scripts/services.sh), point PROCESSORS_{}_URL at one, or set \
         PROCESSORS_SKIP_SERVICES=1 to skip the tests that need it",
        service.to_uppercase()
    );
}

/// A name no other test uses (a schema, a key prefix).
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{prefix}_{}_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis()),
        N.fetch_add(1, Ordering::Relaxed)
    )
}
