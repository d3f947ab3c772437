//! `jobwheel-executor`: parses configuration, installs logging, and runs the executor daemon.

use std::process::ExitCode;

use clap::Parser;
use jobwheel_executor::{Cli, ExecutorConfig, Handlers, builtin};

/// Exit code for a configuration error (sysexits `EX_USAGE`).
const EX_USAGE: u8 = 64;

#[tokio::main]
async fn main() -> ExitCode {
    jobwheel_daemon::init_logging();
    let cli = Cli::parse();
    let config = match ExecutorConfig::from_cli(&cli) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("configuration error: {e}");
            return ExitCode::from(EX_USAGE);
        }
    };
    let mut handlers = Handlers::new();
    let http = builtin::HttpPolicy { allow_private: cli.http_handler_allow_private };
    builtin::register(&mut handlers, http, config.script_glue);
    let listener = match tokio::net::TcpListener::bind(cli.listen).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("cannot listen on {}: {e}", cli.listen);
            return ExitCode::FAILURE;
        }
    };
    match jobwheel_executor::run(config, handlers, listener, jobwheel_executor::shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("executor failed: {e:#}");
            ExitCode::FAILURE
        }
    }
}
