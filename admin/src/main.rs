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

/// Lets a deployment keep transparent huge pages for the admin (`MIMALLOC_ALLOW_THP=1`), as it
/// would for any mimalloc program.
const ALLOW_THP_VAR: &str = "MIMALLOC_ALLOW_THP";

fn main() -> ExitCode {
    init_logging();
    // Transparent huge pages off for this process (`prctl(PR_SET_THP_DISABLE)`, inherited by
    // the mappings made from now on). With the kernel's THP "always", mimalloc's arena is backed
    // by 2 MiB pages as it is touched and a page stays resident while any part of it is in use:
    // at 1 000 triggers/s the admin held 97 MiB instead of 67 MiB, at 3 000/s 123 instead of
    // 98 MiB, at the same CPU (docs/benchmarks.md, "Transparent huge pages").
    if std::env::var_os(ALLOW_THP_VAR).is_none()
        && let Err(e) = nix::sys::prctl::set_thp_disable(true)
    {
        tracing::debug!("transparent huge pages stay on: {e}");
    }
    let cli = Cli::parse();
    // Not `#[tokio::main]`: the number of workers is a flag (`--worker-threads`).
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cli.worker_threads)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(serve(cli))
}

/// The admin, or the one-off task the command line names.
async fn serve(cli: Cli) -> ExitCode {
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
