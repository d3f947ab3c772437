//! The validated configuration of `jobwheel-admin` ([`AdminConfig`]), made once from the
//! command line ([`Cli`], `cli.rs`): defaults, floors, and errors for values that cannot work.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::lang::MessageLang;
use crate::store::{BackoffError, BackoffStrategy, RETRY_BACKOFF_MAX_SECS, RetryBackoff};

pub use crate::alarm::{SmtpConfig, SmtpTls};
use crate::cli::Cli;

/// Upstream's floor of `xxl.job.triggerpool.fast.max`.
pub const TRIGGER_POOL_FAST_FLOOR: usize = 200;
/// Upstream's floor of `xxl.job.triggerpool.slow.max`.
pub const TRIGGER_POOL_SLOW_FLOOR: usize = 100;
/// Where the generated access token is kept when the database is not a SQLite file.
pub const DEFAULT_DATA_DIR: &str = "data";

/// A configuration error, reported before anything starts (exit code 64).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "--access-token is set but blank; a blank token would let anyone call the executor API. \
         Pass a real token, or unset it to use the generated one"
    )]
    BlankToken,
    #[error("--database-url is blank")]
    BlankDatabaseUrl,
    #[error("--executor-timeout must be between 1 and 300 seconds, got {0}")]
    BadExecutorTimeout(u64),
    #[error("--smtp-{0} is set but --smtp-host is not")]
    SmtpWithoutHost(&'static str),
    #[error("--smtp-from is required with --smtp-host (the sender address of alarm mails)")]
    MissingSmtpFrom,
    #[error("--smtp-from {0:?} is not a mail address")]
    BadSmtpFrom(String),
    #[error("--smtp-username and --smtp-password must be given together")]
    HalfSmtpCredentials,
    #[error("--alarm-webhook-url {0:?} is not an http(s) URL")]
    BadWebhookUrl(String),
    #[error("--lost-job-timeout and --executor-dead-timeout must be at least 1 second")]
    ZeroTimeout,
    #[error("--trusted-proxies: {0} (expected addresses or networks such as 10.0.0.0/8, comma-separated)")]
    BadTrustedProxies(String),
    #[error(
        "--alarm-allow-private: {0} (expected addresses or networks such as 10.0.0.0/8, comma-separated)"
    )]
    BadAlarmNetworks(String),
    #[error("{0}")]
    BadRetryBackoff(String),
    #[error(transparent)]
    Sso(#[from] crate::sso::SsoConfigError),
}

/// Concurrency of the two trigger pools (upstream `xxl.job.triggerpool.{fast,slow}.max`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriggerPools {
    pub fast_max: usize,
    pub slow_max: usize,
    /// Waiting triggers each pool accepts before dropping (upstream ≥ 2.5: 2000 / 5000).
    pub fast_queue: usize,
    pub slow_queue: usize,
    /// Triggers sent and not yet recorded before the pools stop sending (jobwheel).
    pub outcome_backlog: usize,
}

/// Validated admin configuration.
#[derive(Clone)]
pub struct AdminConfig {
    pub database_url: String,
    /// `None`: use the token stored in `data_dir`, or generate one on first start.
    pub access_token: Option<String>,
    /// `None`: use the key stored in `data_dir`, or generate one on first start.
    pub secret_key: Option<String>,
    /// Where a generated access token and secret key are kept (`{data_dir}/access-token`,
    /// `{data_dir}/secret-key`).
    pub data_dir: PathBuf,
    pub i18n: MessageLang,
    pub trigger_pools: TriggerPools,
    /// `--fire-lead-ms`.
    pub fire_lead: Duration,
    /// `None`: keep logs forever (upstream: a value below 3 disables cleanup).
    pub log_retention_days: Option<u32>,
    pub executor_timeout: Duration,
    /// `None`: no mail alarms.
    pub smtp: Option<SmtpConfig>,
    /// `None`: no webhook alarms.
    pub alarm_webhook_url: Option<String>,
    /// How long shutdown waits for in-flight requests and queued callbacks.
    pub shutdown_grace: Duration,
    /// `--lost-job-timeout`.
    pub lost_job_timeout: Duration,
    /// `--executor-dead-timeout`.
    pub executor_dead_timeout: Duration,
    /// Whether the session cookie is marked `Secure`.
    pub secure_cookie: bool,
    /// `--keep-upstream-password-hashes`: passwords stay in upstream's format for an upstream
    /// admin sharing the database.
    pub keep_upstream_password_hashes: bool,
    /// `--trusted-proxies`.
    pub trusted_proxies: crate::trusted_proxies::TrustedProxies,
    /// `--alarm-allow-private`: private networks alarm channels may reach.
    pub alarm_allow_private: crate::alarm::AlarmNetworks,
    /// `--retry-backoff*`: the default wait before a failed run's retry.
    pub retry_backoff: RetryBackoff,
    /// A sample module to create a demo job with on an empty database.
    pub demo_job: Option<PathBuf>,
    /// `--metrics-listen`: a second address serving `/metrics` without credentials.
    pub metrics_listen: Option<SocketAddr>,
    /// `--openapi-rate-limit`: requests per second of the job OpenAPI (at least 1).
    pub openapi_rate_limit: u32,
    /// `--exclusive-scheduling`: upstream's one-admin-at-a-time pre-read even on a shared database.
    pub exclusive_scheduling: bool,
    /// `--sso-config`, read and checked: single sign-on providers (docs/sso.md).
    pub sso: Option<crate::sso::SsoConfig>,
}

// Database URLs and tokens carry secrets; `{:?}` shows neither.
impl std::fmt::Debug for AdminConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = self.database_url.split_once(':').map_or("?", |(s, _)| s);
        f.debug_struct("AdminConfig")
            .field("database", &scheme)
            .field("access_token", &self.access_token.as_ref().map(|_| "<set>"))
            .field("secret_key", &self.secret_key.as_ref().map(|_| "<set>"))
            .field("data_dir", &self.data_dir)
            .field("i18n", &self.i18n)
            .field("trigger_pools", &self.trigger_pools)
            .field("fire_lead", &self.fire_lead)
            .field("log_retention_days", &self.log_retention_days)
            .field("executor_timeout", &self.executor_timeout)
            .field("smtp", &self.smtp)
            .field("alarm_webhook_url", &self.alarm_webhook_url)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("secure_cookie", &self.secure_cookie)
            .field("keep_upstream_password_hashes", &self.keep_upstream_password_hashes)
            .field("trusted_proxies", &self.trusted_proxies)
            .field("alarm_allow_private", &self.alarm_allow_private)
            .field("retry_backoff", &self.retry_backoff)
            .field("demo_job", &self.demo_job)
            .field("metrics_listen", &self.metrics_listen)
            .field("openapi_rate_limit", &self.openapi_rate_limit)
            .field("exclusive_scheduling", &self.exclusive_scheduling)
            .field("sso", &self.sso)
            .finish()
    }
}

impl AdminConfig {
    /// A configuration with upstream defaults for everything but the database and the token.
    pub fn new(database_url: impl Into<String>, access_token: Option<String>) -> Self {
        let database_url = database_url.into();
        Self {
            data_dir: default_data_dir(&database_url),
            database_url,
            access_token,
            secret_key: None,
            i18n: MessageLang::Zh,
            trigger_pools: TriggerPools {
                fast_max: 300,
                slow_max: 200,
                fast_queue: 2000,
                slow_queue: 5000,
                outcome_backlog: crate::engine::OUTCOME_BACKLOG,
            },
            fire_lead: crate::engine::FIRE_LEAD,
            log_retention_days: Some(30),
            executor_timeout: Duration::from_secs(3),
            smtp: None,
            alarm_webhook_url: None,
            shutdown_grace: Duration::from_secs(10),
            lost_job_timeout: Duration::from_secs(600),
            executor_dead_timeout: Duration::from_secs(90),
            secure_cookie: false,
            keep_upstream_password_hashes: false,
            trusted_proxies: crate::trusted_proxies::TrustedProxies::default(),
            alarm_allow_private: crate::alarm::AlarmNetworks::default(),
            retry_backoff: RetryBackoff::NONE,
            demo_job: None,
            metrics_listen: None,
            openapi_rate_limit: 100,
            exclusive_scheduling: false,
            sso: None,
        }
    }

    pub fn from_cli(cli: &Cli) -> Result<Self, ConfigError> {
        let access_token = match cli.access_token.as_deref().map(str::trim) {
            Some("") => return Err(ConfigError::BlankToken),
            Some(token) => Some(token.to_owned()),
            None => None,
        };
        let database_url = cli.database_url.trim();
        if database_url.is_empty() {
            return Err(ConfigError::BlankDatabaseUrl);
        }
        if !(1..=300).contains(&cli.executor_timeout) {
            return Err(ConfigError::BadExecutorTimeout(cli.executor_timeout));
        }
        let alarm_webhook_url = match cli.alarm_webhook_url.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(url) if is_http_url(url) => Some(url.to_owned()),
            Some(url) => return Err(ConfigError::BadWebhookUrl(url.to_owned())),
        };
        let mut config = Self::new(database_url, access_token);
        config.secret_key =
            cli.secret_key.as_deref().map(str::trim).filter(|k| !k.is_empty()).map(str::to_owned);
        if let Some(dir) = &cli.data_dir {
            config.data_dir = dir.clone();
        }
        config.i18n = cli.i18n;
        // Upstream raises smaller values to its floors rather than refusing them.
        config.trigger_pools = TriggerPools {
            fast_max: cli.trigger_pool_fast_max.max(TRIGGER_POOL_FAST_FLOOR),
            slow_max: cli.trigger_pool_slow_max.max(TRIGGER_POOL_SLOW_FLOOR),
            fast_queue: cli.trigger_pool_fast_queue.max(1),
            slow_queue: cli.trigger_pool_slow_queue.max(1),
            outcome_backlog: cli.trigger_outcome_backlog.max(1),
        };
        config.fire_lead = Duration::from_millis(cli.fire_lead_ms);
        config.log_retention_days = (cli.log_retention_days >= 3).then_some(cli.log_retention_days);
        config.executor_timeout = Duration::from_secs(cli.executor_timeout);
        config.smtp = smtp_from_cli(cli)?;
        config.alarm_webhook_url = alarm_webhook_url;
        config.shutdown_grace = Duration::from_secs(cli.shutdown_grace);
        if cli.lost_job_timeout == 0 || cli.executor_dead_timeout == 0 {
            return Err(ConfigError::ZeroTimeout);
        }
        config.lost_job_timeout = Duration::from_secs(cli.lost_job_timeout);
        config.executor_dead_timeout = Duration::from_secs(cli.executor_dead_timeout);
        config.secure_cookie = cli.secure_cookie;
        config.keep_upstream_password_hashes = cli.keep_upstream_password_hashes;
        config.trusted_proxies =
            crate::trusted_proxies::TrustedProxies::parse(cli.trusted_proxies.as_deref().unwrap_or_default())
                .map_err(ConfigError::BadTrustedProxies)?;
        config.alarm_allow_private =
            crate::alarm::AlarmNetworks::parse(cli.alarm_allow_private.as_deref().unwrap_or_default())
                .map_err(ConfigError::BadAlarmNetworks)?;
        config.retry_backoff = retry_backoff_from_cli(cli)?;
        config.demo_job = cli.demo_job.clone();
        config.metrics_listen = cli.metrics_listen;
        config.openapi_rate_limit = cli.openapi_rate_limit;
        config.exclusive_scheduling = cli.exclusive_scheduling;
        config.sso = cli.sso_config.as_deref().map(crate::sso::SsoConfig::load).transpose()?;
        Ok(config)
    }
}

/// How long one SMTP connection may take.
const SMTP_TIMEOUT: Duration = Duration::from_secs(10);

/// The admin's default retry backoff from `--retry-backoff*`.
fn retry_backoff_from_cli(cli: &Cli) -> Result<RetryBackoff, ConfigError> {
    let max = RETRY_BACKOFF_MAX_SECS;
    let range = || format!("--retry-backoff and --retry-backoff-max must be 0 to {max} seconds");
    // Checked for a fixed backoff too, which does not use it: a flag given is a flag checked.
    if cli.retry_backoff_max > u64::from(max) {
        return Err(ConfigError::BadRetryBackoff(range()));
    }
    let strategy = cli.retry_backoff_strategy.parse().unwrap_or(BackoffStrategy::Fixed);
    let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    RetryBackoff::checked(
        strategy,
        as_i64(cli.retry_backoff),
        Some(as_i64(cli.retry_backoff_max)),
        as_i64(cli.retry_jitter),
    )
    .map_err(|error| {
        ConfigError::BadRetryBackoff(match error {
            BackoffError::Base | BackoffError::Ceiling => range(),
            BackoffError::CeilingBelowBase => format!(
                "--retry-backoff-max ({}) must be at least --retry-backoff ({})",
                cli.retry_backoff_max, cli.retry_backoff
            ),
            BackoffError::Jitter => {
                format!("--retry-jitter must be 0 to 100 (percent), got {}", cli.retry_jitter)
            }
        })
    })
}

fn smtp_from_cli(cli: &Cli) -> Result<Option<SmtpConfig>, ConfigError> {
    let blank_to_none =
        |v: &Option<String>| v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
    let username = blank_to_none(&cli.smtp_username);
    // Passwords may legitimately start or end with spaces: only an empty one counts as unset.
    let password = cli.smtp_password.clone().filter(|p| !p.is_empty());
    let from = blank_to_none(&cli.smtp_from);
    let Some(host) = blank_to_none(&cli.smtp_host) else {
        let given =
            [("port", cli.smtp_port.is_some()), ("username", username.is_some()), ("from", from.is_some())];
        return match given.iter().find(|(_, set)| *set) {
            Some((name, _)) => Err(ConfigError::SmtpWithoutHost(name)),
            None if password.is_some() => Err(ConfigError::SmtpWithoutHost("password")),
            None => Ok(None),
        };
    };
    let from = from.ok_or(ConfigError::MissingSmtpFrom)?;
    if !from.contains('@') {
        return Err(ConfigError::BadSmtpFrom(from));
    }
    if username.is_some() != password.is_some() {
        return Err(ConfigError::HalfSmtpCredentials);
    }
    Ok(Some(SmtpConfig {
        host,
        port: cli.smtp_port.unwrap_or_else(|| cli.smtp_tls.default_port()),
        username,
        password,
        from,
        tls: cli.smtp_tls,
        timeout: SMTP_TIMEOUT,
    }))
}

fn is_http_url(url: &str) -> bool {
    url.parse::<axum::http::Uri>().is_ok_and(|uri| {
        matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some_and(|h| !h.is_empty())
    })
}

/// The directory of a `sqlite:` database file, so a generated token lives beside the data it
/// protects; [`DEFAULT_DATA_DIR`] for server databases and in-memory SQLite.
pub fn default_data_dir(database_url: &str) -> PathBuf {
    match sqlite_file(database_url) {
        Some(file) => match file.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        },
        None => PathBuf::from(DEFAULT_DATA_DIR),
    }
}

/// `sqlite://data/x.db?mode=rwc` → `data/x.db`; `None` for other schemes and `sqlite::memory:`.
fn sqlite_file(database_url: &str) -> Option<PathBuf> {
    let rest = database_url.strip_prefix("sqlite:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split('?').next().unwrap_or_default();
    (!path.is_empty() && !path.starts_with(":memory:")).then(|| PathBuf::from(path))
}
