//! Command line and environment configuration, validated once into [`ExecutorConfig`].
//!
//! Every flag can also be set as `JOBWHEEL_<FLAG>`. The mapping from upstream property names
//! is in `docs/configuration.md`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jobwheel_wasm::{NetLimits, NetPolicy};

/// How script runs' process trees are kept (`--script-tree`, `glue/tree.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ScriptTree {
    /// A cgroup v2 per run when the executor may create one, else a child subreaper.
    #[default]
    Auto,
    /// A cgroup v2 per run; the executor refuses to start without a writable cgroup.
    Cgroup,
    /// The executor is a child subreaper and marks each run's processes.
    Subreaper,
}

/// Upstream's executor default port.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9999";

#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "jobwheel-executor",
    version,
    about = "jobwheel executor: runs jobs for a jobwheel or xxl-job admin"
)]
pub struct Cli {
    /// Admin base addresses, comma separated, tried in order (e.g. `http://127.0.0.1:8080`, or
    /// `http://host:8080/xxl-job-admin` for an upstream 2.x admin). Empty: no registry, no callbacks.
    #[arg(long, env = "JOBWHEEL_ADMIN_ADDRESSES", value_delimiter = ',')]
    pub admin_addresses: Vec<String>,
    /// Name of the executor group this executor registers under.
    #[arg(long, env = "JOBWHEEL_APP_NAME", default_value = "jobwheel-executor")]
    pub app_name: String,
    /// Address the executor API listens on.
    #[arg(long, env = "JOBWHEEL_LISTEN", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Shared secret the admin sends in `XXL-JOB-ACCESS-TOKEN`; also sent to the admin.
    #[arg(long, env = "JOBWHEEL_ACCESS_TOKEN", hide_env_values = true)]
    pub access_token: Option<String>,
    /// Run without a token: anyone who can reach the port can run jobs. For local experiments only.
    #[arg(long, env = "JOBWHEEL_INSECURE_NO_TOKEN")]
    pub insecure_no_token: bool,
    /// Directory for job logs, script sources and the callback spool.
    #[arg(long, env = "JOBWHEEL_LOG_PATH", default_value = "data/executor-logs")]
    pub log_path: PathBuf,
    /// Address to register with the admin (default: `http://<listen ip>:<port>/`, with the
    /// machine's IP when listening on all interfaces).
    #[arg(long, env = "JOBWHEEL_ADDRESS")]
    pub address: Option<String>,
    /// Dial out: serve no executor API; open a WebSocket to each admin of `--admin-addresses`
    /// and take its calls over it (docs/executor.md, "Dial-out executors"). `--listen` then
    /// serves only `/healthz`, `/readyz` and `/metrics`, for probes.
    #[arg(long, env = "JOBWHEEL_DIAL_OUT")]
    pub dial_out: bool,
    /// Where runs' log lines go: `files` (a file per run, read over `/log`, upstream), `both`
    /// (the file, and every line shipped to the admins as it is written) or `admin` (shipped
    /// only: no job log files here; docs/executor.md, "Logs kept by the admin").
    #[arg(long, env = "JOBWHEEL_JOB_LOGS", value_enum, default_value_t = JobLogs::Files)]
    pub job_logs: JobLogs,
    /// Serve the executor API under this path, e.g. `/xxl-job-executor`.
    #[arg(long, env = "JOBWHEEL_PATH_PREFIX", default_value = "")]
    pub path_prefix: String,
    /// Days to keep job logs; below 3 disables cleanup.
    #[arg(long, env = "JOBWHEEL_LOG_RETENTION_DAYS", default_value_t = 30)]
    pub log_retention_days: u32,
    /// Allow script GLUE (shell, python, node, php, powershell): code execution with this
    /// process's privileges, so it is off unless asked for.
    #[arg(long, env = "JOBWHEEL_ENABLE_SCRIPT_GLUE")]
    pub enable_script_glue: bool,
    /// Run GLUE jobs at all (xxl-job 3.5's `xxl.job.executor.glueenabled`): `false` makes a
    /// BEAN-only executor that refuses every GLUE type, Wasm included, with 3.5's message.
    #[arg(long, env = "JOBWHEEL_GLUE_ENABLED", default_value_t = true, action = clap::ArgAction::Set)]
    pub glue_enabled: bool,
    /// How a script run's whole process tree is kept, so timeouts and kills reach descendants
    /// that left its process group: `cgroup` (a cgroup v2 per run; needs root or systemd's
    /// `Delegate=yes`), `subreaper` (the executor adopts orphans; an environment marker tells
    /// runs apart), or `auto` (cgroup when possible).
    #[arg(long, env = "JOBWHEEL_SCRIPT_TREE", value_enum, default_value_t = ScriptTree::Auto)]
    pub script_tree: ScriptTree,
    /// Seconds to wait for an admin when registering or sending callbacks (1–10).
    #[arg(long, env = "JOBWHEEL_ADMIN_TIMEOUT", default_value_t = 3)]
    pub admin_timeout: u64,
    /// Seconds running jobs get to finish on SIGINT/SIGTERM before they are killed.
    #[arg(long, env = "JOBWHEEL_SHUTDOWN_GRACE", default_value_t = 10)]
    pub shutdown_grace: u64,
    /// Also serve `/metrics` on this address, without credentials (for a Prometheus on a
    /// private network). Unset: `/metrics` is only on `--listen`, behind the access token.
    #[arg(long, env = "JOBWHEEL_METRICS_LISTEN", value_name = "ADDR:PORT")]
    pub metrics_listen: Option<SocketAddr>,
    /// Most triggers waiting per job; further triggers are rejected with a clear message.
    #[arg(long, env = "JOBWHEEL_MAX_QUEUE", default_value_t = 10_000)]
    pub max_queue: usize,
    /// Most runs executing at once across all jobs (0: no cap, as upstream). Further runs wait
    /// for a slot, highest job priority first, and `/idleBeat` answers busy meanwhile.
    #[arg(long, env = "JOBWHEEL_MAX_CONCURRENT_RUNS", default_value_t = 0)]
    pub max_concurrent_runs: usize,
    /// Most bytes one run may write to its job log; the rest is dropped with a note.
    #[arg(long, env = "JOBWHEEL_MAX_LOG_BYTES", default_value_t = 64 * 1024 * 1024)]
    pub max_log_bytes: u64,
    /// Directory for compiled Wasm modules, so restarts do not recompile. Must be private to
    /// the executor: its files are loaded as native code.
    #[arg(long, env = "JOBWHEEL_WASM_CACHE_DIR", default_value = "data/wasm-cache")]
    pub wasm_cache_dir: PathBuf,
    /// Most linear memory one Wasm run may use, in MiB.
    #[arg(long, env = "JOBWHEEL_WASM_MAX_MEMORY_MB", default_value_t = 64)]
    pub wasm_max_memory_mb: usize,
    /// Largest Wasm module this executor downloads, in MiB.
    #[arg(long, env = "JOBWHEEL_WASM_MAX_MODULE_MB", default_value_t = 32)]
    pub wasm_max_module_mb: u64,
    /// Most fuel (≈ wasm instructions) one Wasm run may use; a job's own budget is capped by it.
    #[arg(long, env = "JOBWHEEL_WASM_MAX_FUEL", default_value_t = 1_000_000_000_000)]
    pub wasm_max_fuel: u64,
    /// Origins Wasm components may call over `wasi:http` at all, comma-separated (same syntax as
    /// a job's network policy, e.g. `https://*.example.com,http://10.0.0.5:8080,10.0.0.0/8`).
    /// A request must match this list *and* the job's policy. Empty (the default): no job may
    /// make requests.
    #[arg(long, env = "JOBWHEEL_WASM_HTTP_ALLOW", value_delimiter = ',')]
    pub wasm_http_allow: Vec<String>,
    /// Ceiling of the requests one Wasm run may make.
    #[arg(long, env = "JOBWHEEL_WASM_HTTP_MAX_REQUESTS", default_value_t = 100)]
    pub wasm_http_max_requests: u32,
    /// Ceiling of the response bytes one Wasm run may read, in MiB.
    #[arg(long, env = "JOBWHEEL_WASM_HTTP_MAX_RESPONSE_MB", default_value_t = 16)]
    pub wasm_http_max_response_mb: u64,
    /// Ceiling of each wait (connect, first byte, between bytes) of one request, in seconds.
    #[arg(long, env = "JOBWHEEL_WASM_HTTP_TIMEOUT_SECS", default_value_t = 30)]
    pub wasm_http_timeout_secs: u64,
    /// Wasm runs that may be instantiated at once from wasmtime's pooling allocator (memory,
    /// tables and stacks reserved at start and reused; further runs wait for a free slot
    /// within their timeout). 0 allocates per run instead.
    #[arg(long, env = "JOBWHEEL_WASM_POOL_SLOTS", default_value_t = 0)]
    pub wasm_pool_slots: u32,
    /// Let the built-in `httpJobHandler` call loopback, private and link-local addresses.
    #[arg(long, env = "JOBWHEEL_HTTP_HANDLER_ALLOW_PRIVATE")]
    pub http_handler_allow_private: bool,
    /// Seconds between registry heartbeats (upstream `BEAT_TIMEOUT`: 30). Must stay below the
    /// admin's `--executor-dead-timeout` (90 by default).
    #[arg(long, env = "JOBWHEEL_BEAT_INTERVAL", default_value_t = 30)]
    pub beat_interval: u64,
    /// Seconds between retries of callbacks spooled while no admin answered (upstream: 30).
    #[arg(long, env = "JOBWHEEL_CALLBACK_RETRY_INTERVAL", default_value_t = 30)]
    pub callback_retry_interval: u64,
}

/// A configuration error, reported to the operator before anything starts.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "no access token: pass --access-token (or JOBWHEEL_ACCESS_TOKEN) with the token configured in \
         the admin; --insecure-no-token runs without one, which lets anyone who can reach the port run jobs"
    )]
    MissingToken,
    #[error("--admin-addresses: {0:?} is not an http(s) URL")]
    BadAdminAddress(String),
    #[error("--app-name must be non-empty and contain no whitespace, got {0:?}")]
    BadAppName(String),
    #[error("--admin-timeout must be between 1 and 10 seconds, got {0}")]
    BadAdminTimeout(u64),
    #[error("--max-queue must be at least 1")]
    BadMaxQueue,
    #[error(
        "--wasm-max-memory-mb, --wasm-max-module-mb, --wasm-max-fuel and the --wasm-http-* limits must be at least 1"
    )]
    BadWasmLimit,
    #[error("--wasm-http-allow: {0}")]
    BadHttpAllow(jobwheel_wasm::PolicyError),
    #[error("--beat-interval and --callback-retry-interval must be at least 1 second")]
    BadInterval,
    #[error(
        "--enable-script-glue contradicts --glue-enabled=false (a BEAN-only executor runs no GLUE); drop one of them"
    )]
    GlueConflict,
    #[error("--dial-out needs --admin-addresses: it dials each admin it is given")]
    DialWithoutAdmins,
    #[error("--dial-out registers dial://<app-name>/<instance>; drop --address")]
    DialWithAddress,
    #[error("--job-logs both|admin ships log lines to the admins: it needs --admin-addresses")]
    ShipWithoutAdmins,
}

/// Limits and storage of the Wasm GLUE runtime.
#[derive(Debug, Clone)]
pub struct WasmSettings {
    /// Where compiled modules are cached across restarts; `None` keeps them in memory only.
    pub cache_dir: Option<PathBuf>,
    /// Memory ceiling of a run (a job's own limit is capped by it).
    pub max_memory_bytes: usize,
    pub max_module_bytes: u64,
    /// Fuel ceiling of a run (a job's own budget is capped by it).
    pub max_fuel: u64,
    /// Executor-wide allow-list of outbound HTTP; empty refuses every request.
    pub http_allow: Arc<NetPolicy>,
    /// Ceilings of a run's HTTP budgets.
    pub http_limits: NetLimits,
    /// Pooling allocator slots; `None` allocates per run.
    pub pool_slots: Option<u32>,
}

impl Default for WasmSettings {
    fn default() -> Self {
        WasmSettings {
            cache_dir: None,
            max_memory_bytes: 64 << 20,
            max_module_bytes: 32 << 20,
            max_fuel: 1_000_000_000_000,
            http_allow: Arc::new(NetPolicy::default()),
            http_limits: NetLimits::default(),
            pool_slots: None,
        }
    }
}

/// Internal intervals; defaults are upstream's, tests shorten them.
#[derive(Debug, Clone)]
pub struct Timings {
    /// Between registry heartbeats (upstream `BEAT_TIMEOUT`, 30 s).
    pub registry_interval: Duration,
    /// Between retries of spooled callbacks (30 s).
    pub callback_retry_interval: Duration,
    /// An idle job thread ends after this (upstream: 30 empty polls of 3 s).
    pub idle_timeout: Duration,
    /// A stopped handler gets this long to wind down before it is aborted.
    pub stop_grace: Duration,
}

/// Where a run's log lines go (`--job-logs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum JobLogs {
    /// A file per run on this executor's disk, read by the admin over `/log` (upstream).
    #[default]
    Files,
    /// The file, and every line shipped to the admins as it is written.
    Both,
    /// Lines shipped to the admins only: no job log files on this executor.
    Admin,
}

impl JobLogs {
    /// Lines go to the admins.
    pub fn ships(self) -> bool {
        self != Self::Files
    }

    /// Lines go to a file per run.
    pub fn files(self) -> bool {
        self != Self::Admin
    }
}

/// Validated executor configuration.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    pub admin_addresses: Vec<String>,
    pub app_name: String,
    /// `None` only when explicitly running without authentication.
    pub access_token: Option<String>,
    pub log_path: PathBuf,
    /// The registered address; with `dial_out`, used when it is a `dial://{app_name}/…`
    /// address (else one is drawn per process).
    pub address: Option<String>,
    /// `--dial-out`: no executor API; a WebSocket to each admin carries its calls.
    pub dial_out: bool,
    /// `--job-logs`: files, shipped to the admins, or both.
    pub job_logs: JobLogs,
    /// Normalised: empty, or starts with `/` and does not end with one.
    pub path_prefix: String,
    pub log_retention_days: u32,
    pub script_glue: bool,
    /// `--glue-enabled`: false runs BEAN handlers only.
    pub glue_enabled: bool,
    /// `--script-tree`.
    pub script_tree: ScriptTree,
    pub admin_timeout: Duration,
    pub shutdown_grace: Duration,
    pub max_queue: usize,
    /// `--max-concurrent-runs`; 0 is no cap.
    pub max_concurrent_runs: usize,
    pub max_log_bytes: u64,
    pub wasm: WasmSettings,
    pub timings: Timings,
    /// `--metrics-listen`: a second address serving `/metrics` without credentials.
    pub metrics_listen: Option<SocketAddr>,
}

impl ExecutorConfig {
    /// A configuration with upstream defaults for everything not given.
    pub fn new(app_name: impl Into<String>, log_path: PathBuf, access_token: Option<String>) -> Self {
        Self {
            admin_addresses: Vec::new(),
            app_name: app_name.into(),
            access_token,
            log_path,
            address: None,
            dial_out: false,
            job_logs: JobLogs::Files,
            path_prefix: String::new(),
            log_retention_days: 30,
            script_glue: false,
            glue_enabled: true,
            script_tree: ScriptTree::Auto,
            admin_timeout: Duration::from_secs(3),
            shutdown_grace: Duration::from_secs(10),
            max_queue: 10_000,
            max_concurrent_runs: 0,
            max_log_bytes: 64 * 1024 * 1024,
            wasm: WasmSettings::default(),
            timings: Timings {
                registry_interval: Duration::from_secs(jobwheel_protocol::BEAT_TIMEOUT_SECS),
                callback_retry_interval: Duration::from_secs(jobwheel_protocol::BEAT_TIMEOUT_SECS),
                idle_timeout: Duration::from_secs(90),
                stop_grace: Duration::from_secs(3),
            },
            metrics_listen: None,
        }
    }

    pub fn from_cli(cli: &Cli) -> Result<Self, ConfigError> {
        let access_token = match cli.access_token.as_deref().map(str::trim) {
            Some(t) if !t.is_empty() => Some(t.to_owned()),
            _ if cli.insecure_no_token => None,
            _ => return Err(ConfigError::MissingToken),
        };
        let admin_addresses: Vec<String> =
            cli.admin_addresses.iter().map(|a| a.trim().to_owned()).filter(|a| !a.is_empty()).collect();
        for address in &admin_addresses {
            let ok = reqwest::Url::parse(address).is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
            if !ok {
                return Err(ConfigError::BadAdminAddress(address.clone()));
            }
        }
        if cli.app_name.trim().is_empty() || cli.app_name.chars().any(char::is_whitespace) {
            return Err(ConfigError::BadAppName(cli.app_name.clone()));
        }
        if !(1..=10).contains(&cli.admin_timeout) {
            return Err(ConfigError::BadAdminTimeout(cli.admin_timeout));
        }
        if cli.max_queue == 0 {
            return Err(ConfigError::BadMaxQueue);
        }
        if cli.wasm_max_memory_mb == 0
            || cli.wasm_max_module_mb == 0
            || cli.wasm_max_fuel == 0
            || cli.wasm_http_max_response_mb == 0
            || cli.wasm_http_timeout_secs == 0
        {
            return Err(ConfigError::BadWasmLimit);
        }
        let http_allow = NetPolicy::parse(&cli.wasm_http_allow).map_err(ConfigError::BadHttpAllow)?;
        if cli.beat_interval == 0 || cli.callback_retry_interval == 0 {
            return Err(ConfigError::BadInterval);
        }
        let mut config = Self::new(cli.app_name.clone(), cli.log_path.clone(), access_token);
        config.admin_addresses = admin_addresses;
        config.address = cli.address.clone().filter(|a| !a.trim().is_empty());
        if cli.dial_out && config.admin_addresses.is_empty() {
            return Err(ConfigError::DialWithoutAdmins);
        }
        if cli.dial_out && config.address.is_some() {
            return Err(ConfigError::DialWithAddress);
        }
        config.dial_out = cli.dial_out;
        if cli.job_logs.ships() && config.admin_addresses.is_empty() {
            return Err(ConfigError::ShipWithoutAdmins);
        }
        config.job_logs = cli.job_logs;
        config.path_prefix = normalize_prefix(&cli.path_prefix);
        config.log_retention_days = cli.log_retention_days;
        if cli.enable_script_glue && !cli.glue_enabled {
            return Err(ConfigError::GlueConflict);
        }
        config.script_glue = cli.enable_script_glue;
        config.glue_enabled = cli.glue_enabled;
        config.script_tree = cli.script_tree;
        config.admin_timeout = Duration::from_secs(cli.admin_timeout);
        config.shutdown_grace = Duration::from_secs(cli.shutdown_grace);
        config.max_queue = cli.max_queue;
        config.max_concurrent_runs = cli.max_concurrent_runs;
        config.metrics_listen = cli.metrics_listen;
        config.max_log_bytes = cli.max_log_bytes;
        config.timings.registry_interval = Duration::from_secs(cli.beat_interval);
        config.timings.callback_retry_interval = Duration::from_secs(cli.callback_retry_interval);
        config.wasm = WasmSettings {
            cache_dir: Some(cli.wasm_cache_dir.clone()),
            max_memory_bytes: cli.wasm_max_memory_mb.saturating_mul(1 << 20),
            max_module_bytes: cli.wasm_max_module_mb.saturating_mul(1 << 20),
            max_fuel: cli.wasm_max_fuel,
            http_allow: Arc::new(http_allow),
            http_limits: NetLimits {
                max_requests: cli.wasm_http_max_requests,
                max_response_bytes: cli.wasm_http_max_response_mb.saturating_mul(1 << 20),
                request_timeout: Duration::from_secs(cli.wasm_http_timeout_secs),
            },
            pool_slots: (cli.wasm_pool_slots > 0).then_some(cli.wasm_pool_slots),
        };
        Ok(config)
    }
}

/// `"x/"`, `"/x"`, `"/x/"` → `"/x"`; `""` and `"/"` → `""`.
pub fn normalize_prefix(prefix: &str) -> String {
    let trimmed = prefix.trim().trim_matches('/');
    if trimmed.is_empty() { String::new() } else { format!("/{trimmed}") }
}
