//! What jobwheel's two daemons do alike, written once: logging set-up ([`init_logging`]), the
//! signal that starts a graceful shutdown ([`shutdown_signal`]) and the `--metrics-listen`
//! listener ([`MetricsListener`]).
//!
//! A crate of its own rather than a module of either daemon: the admin must not link the
//! executor (and its process control and Wasm runtime), and the wire-types crate
//! (`jobwheel-protocol`) stays serde-only. Which metrics a daemon counts stays its own.

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

mod metrics_listener;

pub use metrics_listener::MetricsListener;

/// Logs to stderr at `RUST_LOG`'s levels (default `info`), with colour only when stderr is a
/// terminal: under systemd, `scripts/run.sh > file` or a test harness the escape codes would
/// end up as bytes in a log file.
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM. A signal that cannot be listened for is logged and
/// never resolves, so the other one still works.
///
/// The handlers are installed when this is called, not when the future is first polled: a
/// daemon serves requests before it waits for its shutdown, and a SIGTERM in between would
/// otherwise find no handler and kill the process without its graceful stop (a test that
/// stopped an admin right after its first answer saw exactly that). Call it inside the runtime.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{SignalKind, signal};
    let listen = |kind: SignalKind, name: &'static str| {
        let installed = signal(kind);
        async move {
            match installed {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot listen for {name}");
                    std::future::pending::<()>().await;
                }
            }
        }
    };
    let interrupt = listen(SignalKind::interrupt(), "SIGINT");
    let terminate = listen(SignalKind::terminate(), "SIGTERM");
    async move {
        tokio::select! {
            () = interrupt => tracing::info!("SIGINT received"),
            () = terminate => tracing::info!("SIGTERM received"),
        }
    }
}
