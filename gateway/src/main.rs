//! `processors-gateway`: the gateway's command.
//!
//! ```text
//! processors-gateway [--listen ADDR] [--config FILE]   serve (default 127.0.0.1:8787, the embedded config)
//! processors-gateway hash-key KEY                       print the `sha256` of a key, for the file
//! processors-gateway check --config FILE                check a file and exit
//! ```
//!
//! It logs to stderr at the level `PGW_LOG` names (`info` by default). Built with the feature
//! `otel`, `--otlp URL` also exports every request's spans to an OpenTelemetry collector
//! (`http://localhost:4318/v1/traces`).
#![forbid(unsafe_code)]

use processors_gateway::{Config, DEFAULT_CONFIG, Gateway, KeyHash};
use std::process::ExitCode;
use tracing_subscriber::Layer;

const USAGE: &str = "usage: processors-gateway [--listen ADDR] [--config FILE] [--otlp URL]\n       processors-gateway hash-key KEY\n       processors-gateway check --config FILE";

struct Args {
    listen: Option<String>,
    config: Option<String>,
    otlp: Option<String>,
    command: Command,
}

enum Command {
    Serve,
    HashKey(String),
    Check,
}

fn args() -> Result<Args, String> {
    let mut args = Args {
        listen: None,
        config: None,
        otlp: None,
        command: Command::Serve,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--listen" => args.listen = Some(it.next().ok_or("--listen takes an address")?),
            "--config" => args.config = Some(it.next().ok_or("--config takes a file")?),
            "--otlp" => args.otlp = Some(it.next().ok_or("--otlp takes a collector's URL")?),
            "hash-key" => args.command = Command::HashKey(it.next().ok_or("hash-key takes a key")?),
            "check" => args.command = Command::Check,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(args)
}

/// Logs to stderr at the level `PGW_LOG` names (`error`, `warn`, `info` by default, `debug`,
/// `trace`), and exports spans to `otlp` when given. Returns the exporter, to flush at exit.
fn log(otlp: Option<&str>) -> Result<Option<Exporter>, String> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let level = std::env::var("PGW_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::INFO);
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(tracing_subscriber::filter::LevelFilter::from_level(level));
    let registry = tracing_subscriber::registry().with(fmt);
    let Some(url) = otlp else {
        let _ = registry.try_init();
        return Ok(None);
    };
    let exporter = exporter(url)?;
    let _ = registry.with(exporter.layer()).try_init();
    Ok(Some(exporter))
}

#[cfg(feature = "otel")]
type Exporter = processors::otel::Otel;

#[cfg(feature = "otel")]
fn exporter(url: &str) -> Result<Exporter, String> {
    processors::otel::Otel::http(url, "processors-gateway").map_err(|e| e.to_string())
}

#[cfg(not(feature = "otel"))]
type Exporter = NoExporter;

/// What `--otlp` needs when the binary was built without it.
#[cfg(not(feature = "otel"))]
struct NoExporter;

#[cfg(not(feature = "otel"))]
impl NoExporter {
    fn layer(&self) -> tracing_subscriber::layer::Identity {
        tracing_subscriber::layer::Identity::new()
    }
    fn shutdown(&self) -> Result<(), String> {
        Ok(())
    }
}

#[cfg(not(feature = "otel"))]
fn exporter(_: &str) -> Result<Exporter, String> {
    Err("--otlp needs the gateway's `otel` feature (`cargo run -p processors-gateway --features otel`)".to_owned())
}

fn main() -> ExitCode {
    let args = match args() {
        Ok(args) => args,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("{message}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let exporter = match log(args.otlp.as_deref()) {
        Ok(exporter) => exporter,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if let Command::HashKey(key) = &args.command {
        println!("{}", KeyHash::of(key));
        return ExitCode::SUCCESS;
    }
    let loaded = match &args.config {
        Some(path) => Config::from_path(path),
        None => Config::from_str("<embedded default config>", DEFAULT_CONFIG, None),
    };
    let mut config = match loaded {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Command::Check = args.command {
        return match runtime.block_on(Gateway::new(&config)) {
            Ok(_) => {
                println!("{}: ok", config.file());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    let served = runtime.block_on(serve(&mut config, args.listen));
    if let Some(exporter) = exporter
        && let Err(e) = exporter.shutdown()
    {
        eprintln!("the spans could not all be exported: {e}");
    }
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(
    config: &mut Config,
    listen: Option<String>,
) -> Result<(), Box<dyn std::error::Error>> {
    if config.keys.is_empty() {
        let key = config.add_development_key()?;
        println!("no key is configured; this run's development key: {key}");
    }
    let gateway = Gateway::new(config).await?;
    let address = listen
        .or_else(|| config.listen.clone())
        .unwrap_or_else(|| "127.0.0.1:8787".to_owned());
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    println!("listening on http://{}", listener.local_addr()?);
    gateway.serve(listener, shutdown()).await?;
    Ok(())
}

/// Resolves at Ctrl-C or SIGTERM.
async fn shutdown() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
