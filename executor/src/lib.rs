//! jobwheel executor: an xxl-job compatible executor as a library and a daemon.
//!
//! The admin (jobwheel's or upstream xxl-job's) pushes triggers to `POST /run`; each job id has
//! one serial queue; results go back to the admin as batched, disk-spooled callbacks. Programs
//! embed the executor and register native async handlers (BEAN mode):
//!
//! ```no_run
//! use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
//!
//! # async fn example() -> anyhow::Result<()> {
//! let mut handlers = Handlers::new();
//! handlers.register("helloHandler", |ctx: JobContext| async move {
//!     ctx.log(format!("hello, {}", ctx.param()));
//!     Ok(())
//! });
//! let mut config = ExecutorConfig::new("my-app", "data/logs".into(), Some("secret".into()));
//! config.admin_addresses = vec!["http://127.0.0.1:8080".into()];
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:9999").await?;
//! jobwheel_executor::run(config, handlers, listener, jobwheel_executor::shutdown_signal()).await
//! # }
//! ```
#![deny(unsafe_code)]

mod admin_client;
mod app;
pub mod builtin;
mod callback;
pub mod config;
mod dial;
mod fire_journal;
mod glue;
mod handler;
mod heartbeat;
mod joblog;
mod jobs;
pub mod metrics;
mod owed;
mod server;
mod spool;

pub use admin_client::AdminError;
pub use app::run;
pub use config::{Cli, ConfigError, ExecutorConfig, JobLogs, ScriptTree, Timings, WasmSettings};
pub use handler::{HandlerFuture, Handlers, JobContext, JobHandler, JobResult};
pub use jobwheel_daemon::shutdown_signal;
