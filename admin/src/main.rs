//! `jobwheel-admin`: parses configuration, installs logging, and runs the admin (or a one-off
//! `users` or `secrets` task).
#![allow(clippy::print_stdout, reason = "a one-off task prints its result, e.g. a new password")]

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser as _;
use jobwheel_admin::app::run;
use jobwheel_admin::cli::{Cli, Command};
use jobwheel_admin::config::{AdminConfig, default_data_dir};
use jobwheel_admin::engine_core::EngineCore;
use jobwheel_admin::http::AdminCore;
use jobwheel_daemon::{init_logging, shutdown_signal};

/// mimalloc instead of glibc's malloc: a profile of the admin at 6 000 triggers/s spent ~20 % of
/// its CPU in glibc's allocator (`_int_malloc`, `malloc_consolidate`, `unlink_chunk`, …) on the
/// trigger path's short-lived rows, strings and futures (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Exit code for a configuration error (sysexits `EX_USAGE`).
const EX_USAGE: u8 = 64;

#[tokio::main]
async fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    if let Some(Command::Users(task)) = &cli.command {
        return match jobwheel_admin::users::run(&cli.database_url, task).await {
            Ok(output) => {
                println!("{output}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                tracing::error!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(Command::Secrets(task)) = &cli.command {
        let data_dir = cli.data_dir.clone().unwrap_or_else(|| default_data_dir(&cli.database_url));
        return match jobwheel_admin::secret_key::run(
            &cli.database_url,
            cli.secret_key.as_deref(),
            &data_dir,
            task,
        )
        .await
        {
            Ok(output) => {
                println!("{output}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                tracing::error!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    let config = match AdminConfig::from_cli(&cli) {
        Ok(config) => config,
        Err(e) => {
            tracing::error!("configuration error: {e}");
            return ExitCode::from(EX_USAGE);
        }
    };
    let listener = match tokio::net::TcpListener::bind(cli.listen).await {
        Ok(listener) => listener,
        Err(e) => {
            tracing::error!("cannot listen on {}: {e}", cli.listen);
            return ExitCode::FAILURE;
        }
    };
    let engine_config = config.clone();
    let make_core =
        move |context| EngineCore::start(context, &engine_config).map(|core| core as Arc<dyn AdminCore>);
    match run(config, make_core, listener, shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("admin failed: {e:#}");
            ExitCode::FAILURE
        }
    }
}
