//! The `jobwheel-admin` command line: every flag, its environment variable and default, and
//! the subcommands. [`AdminConfig::from_cli`](crate::config::AdminConfig::from_cli) validates it.
//!
//! Every flag can also be set as `JOBWHEEL_<FLAG>`. The mapping from upstream's `xxl.job.*`
//! properties is in `docs/admin.md`.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::alarm::SmtpTls;
use crate::lang::MessageLang;

/// The admin's default listen address (upstream `server.port=8080`, but loopback only).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// The embedded default database.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/jobwheel.db";

#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "jobwheel-admin",
    version,
    about = "jobwheel admin: schedules jobs on jobwheel and xxl-job executors"
)]
pub struct Cli {
    /// A one-off task instead of running the admin (it uses `--database-url`).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Address the admin (UI, JSON API and executor API) listens on.
    #[arg(long, env = "JOBWHEEL_LISTEN", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Database: `sqlite://FILE`, `postgres://…` or `mysql://…` (`mariadb://…`).
    #[arg(long, env = "JOBWHEEL_DATABASE_URL", default_value = DEFAULT_DATABASE_URL, hide_env_values = true, global = true)]
    pub database_url: String,
    /// Shared secret executors send in `XXL-JOB-ACCESS-TOKEN` (and the admin sends to them).
    /// Unset: a token is generated on first start and kept in `{data-dir}/access-token`.
    #[arg(long, env = "JOBWHEEL_ACCESS_TOKEN", hide_env_values = true)]
    pub access_token: Option<String>,
    /// Key sealing the secret values of Wasm jobs, 64 hex characters. Unset: generated on first
    /// start and kept in `{data-dir}/secret-key`. Admins sharing a database must share it.
    #[arg(long, env = "JOBWHEEL_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,
    /// Directory for the generated access token (default: the SQLite database's directory, or
    /// `data` for PostgreSQL/MySQL).
    #[arg(long, env = "JOBWHEEL_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Language of UI texts and trigger/alarm messages.
    #[arg(long, env = "JOBWHEEL_I18N", value_enum, default_value = "zh_CN")]
    pub i18n: MessageLang,
    /// Most concurrent triggers of the fast trigger pool (values below 200 are raised to 200).
    #[arg(long, env = "JOBWHEEL_TRIGGER_POOL_FAST_MAX", default_value_t = 300)]
    pub trigger_pool_fast_max: usize,
    /// Most concurrent triggers of the slow pool (jobs whose trigger took > 500 ms more than
    /// 10 times in the current minute; values below 100 are raised to 100).
    #[arg(long, env = "JOBWHEEL_TRIGGER_POOL_SLOW_MAX", default_value_t = 200)]
    pub trigger_pool_slow_max: usize,
    /// Triggers that may wait for the fast pool; beyond it a trigger is dropped with an error
    /// (its ring claim is then fired late by recovery). Upstream ≥ 2.5: 2000, which caps one
    /// ring second at about 2 300 triggers; raise it for thousands of jobs per second.
    #[arg(long, env = "JOBWHEEL_TRIGGER_POOL_FAST_QUEUE", default_value_t = 2000)]
    pub trigger_pool_fast_queue: usize,
    /// Triggers that may wait for the slow pool (upstream ≥ 2.5: 5000).
    #[arg(long, env = "JOBWHEEL_TRIGGER_POOL_SLOW_QUEUE", default_value_t = 5000)]
    pub trigger_pool_slow_queue: usize,
    /// Triggers sent whose outcome is not yet written to the database; at this many the pools
    /// stop sending until outcomes are written, so a database that falls behind slows the
    /// triggers down instead of growing the admin's memory.
    #[arg(long, env = "JOBWHEEL_TRIGGER_OUTCOME_BACKLOG", default_value_t = crate::engine::OUTCOME_BACKLOG)]
    pub trigger_outcome_backlog: usize,
    /// Milliseconds before each second at which that second's triggers do their database work,
    /// so only the route and `/run` are left at it (0–400; 0: all at the second, as upstream).
    // The range is `engine::MAX_FIRE_LEAD`.
    #[arg(long, env = "JOBWHEEL_FIRE_LEAD_MS", default_value_t = 200, value_parser = clap::value_parser!(u64).range(0..=400))]
    pub fire_lead_ms: u64,
    /// Threads that run the admin's tasks (the engine and the HTTP edge); its SQLite
    /// connections and blocking work (password hashing, module checks) have threads of their
    /// own. One worker spends less CPU per trigger than two (docs/benchmarks.md, "One runtime
    /// worker").
    #[arg(long, env = "JOBWHEEL_WORKER_THREADS", default_value_t = 1, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=256))]
    pub worker_threads: usize,
    /// Seconds after which a running log whose executor is no longer registered is marked
    /// lost (upstream: 600). The lost-job monitor runs every minute, or every half of this.
    #[arg(long, env = "JOBWHEEL_LOST_JOB_TIMEOUT", default_value_t = 600)]
    pub lost_job_timeout: u64,
    /// Seconds without a heartbeat after which an executor's registration is dead and its
    /// address leaves automatic groups (upstream `DEAD_TIMEOUT`: 90, three missed 30 s beats).
    /// Executors must beat more often than this (`jobwheel-executor --beat-interval`).
    #[arg(long, env = "JOBWHEEL_EXECUTOR_DEAD_TIMEOUT", default_value_t = 90)]
    pub executor_dead_timeout: u64,
    /// Days to keep trigger logs; below 3 disables cleanup.
    #[arg(long, env = "JOBWHEEL_LOG_RETENTION_DAYS", default_value_t = 30)]
    pub log_retention_days: u32,
    /// Seconds to wait for an executor on `/run`, `/beat`, `/idleBeat`, `/kill`, `/log`.
    #[arg(long, env = "JOBWHEEL_EXECUTOR_TIMEOUT", default_value_t = 3)]
    pub executor_timeout: u64,
    /// SMTP server for alarm mails; unset disables mail alarms.
    #[arg(long, env = "JOBWHEEL_SMTP_HOST")]
    pub smtp_host: Option<String>,
    /// SMTP port (default: 465 with `--smtp-tls tls`, 587 with `starttls`, 25 with `none`).
    #[arg(long, env = "JOBWHEEL_SMTP_PORT")]
    pub smtp_port: Option<u16>,
    /// SMTP user name.
    #[arg(long, env = "JOBWHEEL_SMTP_USERNAME")]
    pub smtp_username: Option<String>,
    /// SMTP password.
    #[arg(long, env = "JOBWHEEL_SMTP_PASSWORD", hide_env_values = true)]
    pub smtp_password: Option<String>,
    /// Sender address of alarm mails.
    #[arg(long, env = "JOBWHEEL_SMTP_FROM")]
    pub smtp_from: Option<String>,
    /// Transport security to the SMTP server.
    #[arg(long, env = "JOBWHEEL_SMTP_TLS", value_enum, default_value = "starttls")]
    pub smtp_tls: SmtpTls,
    /// URL that receives a JSON POST for every alarm; unset disables webhook alarms.
    #[arg(long, env = "JOBWHEEL_ALARM_WEBHOOK_URL")]
    pub alarm_webhook_url: Option<String>,
    /// Seconds to finish in-flight requests and queued callbacks on SIGINT/SIGTERM.
    #[arg(long, env = "JOBWHEEL_SHUTDOWN_GRACE", default_value_t = 10)]
    pub shutdown_grace: u64,
    /// Mark the login cookie `Secure` (set it when users reach the admin over HTTPS, e.g.
    /// behind a TLS-terminating proxy; browsers then never send it over plain HTTP).
    #[arg(long, env = "JOBWHEEL_SECURE_COOKIE")]
    pub secure_cookie: bool,
    /// While an upstream xxl-job admin shares the database: keep users' upstream password hashes
    /// (MD5 hex on 2.x, SHA-256 hex on 3.x) instead of replacing them with argon2 at login, and
    /// store passwords set here in that format, so the same passwords work in both admins.
    /// Weaker than argon2: turn it off when the upstream admin is gone (docs/storage.md).
    #[arg(long, env = "JOBWHEEL_KEEP_UPSTREAM_PASSWORD_HASHES")]
    pub keep_upstream_password_hashes: bool,
    /// Reverse proxies (addresses or CIDR networks, comma-separated) whose `X-Forwarded-For`
    /// names the client: the login throttle then counts failures per client, not per proxy.
    /// Unset: the header is ignored.
    #[arg(long, env = "JOBWHEEL_TRUSTED_PROXIES", value_name = "CIDR,…")]
    pub trusted_proxies: Option<String>,
    /// Private networks (addresses or CIDR networks, comma-separated) that alarm channels'
    /// webhooks may reach besides public addresses, e.g. an in-house chat server. Unset: public
    /// addresses only (docs/alarms.md).
    #[arg(long, env = "JOBWHEEL_ALARM_ALLOW_PRIVATE", value_name = "CIDR,…")]
    pub alarm_allow_private: Option<String>,
    /// Seconds a failed run waits before its retry (0: retry at the fail monitor's next pass,
    /// as upstream; at most 86400). A job's own `retryBackoff` overrides this and the next
    /// three flags.
    #[arg(long, env = "JOBWHEEL_RETRY_BACKOFF", default_value_t = 0)]
    pub retry_backoff: u64,
    /// `fixed`: the same wait before every retry; `exponential`: doubled before each further
    /// retry, up to `--retry-backoff-max`.
    #[arg(long, env = "JOBWHEEL_RETRY_BACKOFF_STRATEGY", default_value = "fixed",
        value_parser = ["fixed", "exponential"])]
    pub retry_backoff_strategy: String,
    /// Ceiling of an exponential backoff, seconds (at least `--retry-backoff`, at most 86400).
    #[arg(long, env = "JOBWHEEL_RETRY_BACKOFF_MAX", default_value_t = 3600)]
    pub retry_backoff_max: u64,
    /// Up to this percentage (0–100) of each wait is taken off at random, so runs that failed
    /// together do not all retry in the same second.
    #[arg(long, env = "JOBWHEEL_RETRY_JITTER", default_value_t = 0)]
    pub retry_jitter: u64,
    /// Also serve `/metrics` on this address, without credentials (for a Prometheus on a
    /// private network). Unset: `/metrics` is only on `--listen`, for administrators' API tokens.
    #[arg(long, env = "JOBWHEEL_METRICS_LISTEN", value_name = "ADDR:PORT")]
    pub metrics_listen: Option<SocketAddr>,
    /// Requests per second xxl-job 3.5's job OpenAPI (`/api/addJob`, …) accepts from each
    /// executor group, with bursts of as many; a request waits up to 1 s for its turn, then is
    /// answered 502 "Too many requests" (upstream's limiter: 100/s for all callers).
    #[arg(long, env = "JOBWHEEL_OPENAPI_RATE_LIMIT", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub openapi_rate_limit: u32,
    /// Pre-read every job under upstream's exclusive schedule lock, one admin at a time, instead
    /// of sharing the jobs out among the admins on a PostgreSQL or MySQL database
    /// (docs/engine.md, "Shared scheduling"). SQLite is always exclusive.
    #[arg(long, env = "JOBWHEEL_EXCLUSIVE_SCHEDULING")]
    pub exclusive_scheduling: bool,
    /// On an empty database, create a sample executor group and a GLUE_WASM job running this
    /// `.wasm` module (what `scripts/run.sh` does for a first run). Ignored otherwise.
    #[arg(long, env = "JOBWHEEL_DEMO_JOB", value_name = "MODULE.wasm")]
    pub demo_job: Option<PathBuf>,
    /// Single sign-on settings (a TOML file: OpenID Connect and LDAP providers, their group
    /// mapping, whether local passwords stay on; docs/sso.md).
    #[arg(long, env = "JOBWHEEL_SSO_CONFIG", value_name = "FILE.toml")]
    pub sso_config: Option<PathBuf>,
}

/// One-off tasks of `jobwheel-admin`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Account tasks for when nobody can log in.
    #[command(subcommand)]
    Users(crate::users::UsersCommand),
    /// Secret key tasks (stop the admins sharing the database first).
    #[command(subcommand)]
    Secrets(crate::secret_key::SecretsCommand),
}
