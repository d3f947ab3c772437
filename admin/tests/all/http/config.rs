//! `jobwheel-admin` flags → `AdminConfig`: defaults, derived data directory, upstream rules,
//! and the errors that exit with 64.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser as _;
use jobwheel_admin::alarm::SmtpTls;
use jobwheel_admin::cli::Cli;
use jobwheel_admin::config::{AdminConfig, ConfigError};
use jobwheel_admin::store::{BackoffStrategy, RetryBackoff};

fn parse(args: &[&str]) -> Result<AdminConfig, ConfigError> {
    let cli = Cli::try_parse_from(std::iter::once("jobwheel-admin").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?} should parse: {e}"));
    AdminConfig::from_cli(&cli)
}

#[test]
fn defaults_follow_upstream() -> anyhow::Result<()> {
    let cli = Cli::try_parse_from(["jobwheel-admin"])?;
    assert_eq!(cli.listen.to_string(), "127.0.0.1:8080");
    let config = AdminConfig::from_cli(&cli)?;
    assert_eq!(config.database_url, "sqlite://data/jobwheel.db");
    assert_eq!(config.data_dir, PathBuf::from("data"), "the SQLite file's directory");
    assert_eq!(config.access_token, None, "no built-in token");
    assert_eq!((config.trigger_pools.fast_max, config.trigger_pools.slow_max), (300, 200));
    assert_eq!(config.log_retention_days, Some(30));
    assert_eq!(config.executor_timeout, Duration::from_secs(3));
    assert!(config.smtp.is_none() && config.alarm_webhook_url.is_none());
    assert_eq!((config.trigger_pools.fast_queue, config.trigger_pools.slow_queue), (2000, 5000));
    assert_eq!(config.trigger_pools.outcome_backlog, 20_000);
    assert_eq!(config.lost_job_timeout, Duration::from_secs(600));
    assert_eq!(config.executor_dead_timeout, Duration::from_secs(90));
    Ok(())
}

#[test]
fn timeouts_and_backlogs_can_be_tuned() -> anyhow::Result<()> {
    let config = parse(&[
        "--lost-job-timeout",
        "20",
        "--executor-dead-timeout",
        "6",
        "--trigger-pool-fast-queue",
        "100000",
        "--trigger-outcome-backlog",
        "500",
    ])?;
    assert_eq!(config.lost_job_timeout, Duration::from_secs(20));
    assert_eq!(config.executor_dead_timeout, Duration::from_secs(6));
    assert_eq!(config.trigger_pools.fast_queue, 100_000);
    assert_eq!(config.trigger_pools.outcome_backlog, 500);
    let zero = AdminConfig::from_cli(&Cli::try_parse_from(["jobwheel-admin", "--lost-job-timeout", "0"])?);
    assert!(zero.is_err_and(|e| e.to_string().contains("at least 1 second")));
    Ok(())
}

#[test]
fn the_data_directory_follows_the_sqlite_file() -> anyhow::Result<()> {
    for (url, dir) in [
        ("sqlite:///var/lib/jobwheel/jobwheel.db?mode=rwc", "/var/lib/jobwheel"),
        ("sqlite:jobwheel.db", "."),
        ("sqlite::memory:", "data"),
        ("postgres://u:p@db/jobwheel", "data"),
    ] {
        assert_eq!(parse(&["--database-url", url])?.data_dir, PathBuf::from(dir), "{url}");
    }
    let explicit = parse(&["--database-url", "mysql://db/x", "--data-dir", "/etc/jobwheel"])?;
    assert_eq!(explicit.data_dir, PathBuf::from("/etc/jobwheel"));
    Ok(())
}

#[test]
fn upstream_rules_for_retention_and_pools() -> anyhow::Result<()> {
    assert_eq!(parse(&["--log-retention-days", "2"])?.log_retention_days, None, "below 3 disables");
    assert_eq!(parse(&["--log-retention-days", "3"])?.log_retention_days, Some(3));
    let pools = parse(&["--trigger-pool-fast-max", "10", "--trigger-pool-slow-max", "0"])?.trigger_pools;
    assert_eq!((pools.fast_max, pools.slow_max), (200, 100), "raised to upstream's floors");
    assert_eq!(parse(&["--access-token", " tok "])?.access_token.as_deref(), Some("tok"));
    Ok(())
}

#[test]
fn smtp_settings_are_complete_or_absent() -> anyhow::Result<()> {
    let smtp = parse(&["--smtp-host", "mail", "--smtp-from", "jobs@example.invalid", "--smtp-tls", "tls"])?
        .smtp
        .expect("smtp configured");
    assert_eq!((smtp.port, smtp.tls, smtp.username.is_none()), (465, SmtpTls::Tls, true));
    let with_login = parse(&[
        "--smtp-host",
        "mail",
        "--smtp-from",
        "a@b",
        "--smtp-username",
        "u",
        "--smtp-password",
        "secret pw",
    ])?;
    let smtp = with_login.smtp.clone().expect("smtp configured");
    assert_eq!(
        (smtp.port, smtp.username.as_deref(), smtp.password.as_deref()),
        (587, Some("u"), Some("secret pw"))
    );
    assert!(!format!("{with_login:?}").contains("secret pw"), "Debug hides the SMTP password");
    Ok(())
}

#[test]
fn trusted_proxies_and_retry_backoff() -> anyhow::Result<()> {
    let config = parse(&["--trusted-proxies", "10.0.0.0/8, ::1", "--retry-backoff", "45"])?;
    assert!(!config.trusted_proxies.is_empty());
    assert_eq!(config.retry_backoff, RetryBackoff::fixed(45));
    let defaults = parse(&[])?;
    assert!(defaults.trusted_proxies.is_empty(), "nobody's X-Forwarded-For is believed by default");
    assert_eq!(defaults.retry_backoff, RetryBackoff::NONE, "upstream retries at the next pass");
    let exponential = parse(&[
        "--retry-backoff",
        "10",
        "--retry-backoff-strategy",
        "exponential",
        "--retry-backoff-max",
        "600",
        "--retry-jitter",
        "20",
    ])?;
    let expected =
        RetryBackoff { strategy: BackoffStrategy::Exponential, base_secs: 10, max_secs: 600, jitter_pct: 20 };
    assert_eq!(exponential.retry_backoff, expected);
    for (args, needle) in [
        (&["--retry-backoff", "90000"][..], "0 to 86400"),
        (&["--retry-jitter", "101"][..], "--retry-jitter must be 0 to 100"),
        (
            &[
                "--retry-backoff",
                "60",
                "--retry-backoff-strategy",
                "exponential",
                "--retry-backoff-max",
                "30",
            ][..],
            "at least --retry-backoff",
        ),
    ] {
        let error = parse(args).expect_err("refused").to_string();
        assert!(error.contains(needle), "{args:?}: {error}");
    }
    let error = parse(&["--trusted-proxies", "10.0.0.0/8,proxy"]).expect_err("not a network").to_string();
    assert!(error.contains("--trusted-proxies") && error.contains("\"proxy\""), "{error}");
    Ok(())
}

#[test]
fn invalid_settings_are_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["--access-token", "  "], "--access-token is set but blank"),
        (&["--database-url", " "], "--database-url is blank"),
        (&["--executor-timeout", "0"], "--executor-timeout must be between 1 and 300"),
        (&["--smtp-from", "a@b"], "--smtp-from is set but --smtp-host is not"),
        (&["--smtp-password", "x"], "--smtp-password is set but --smtp-host is not"),
        (&["--smtp-host", "mail"], "--smtp-from is required"),
        (&["--smtp-host", "mail", "--smtp-from", "nobody"], "is not a mail address"),
        (&["--smtp-host", "mail", "--smtp-from", "a@b", "--smtp-username", "u"], "must be given together"),
        (&["--alarm-webhook-url", "ftp://hooks"], "is not an http(s) URL"),
        (&["--alarm-webhook-url", "http://"], "is not an http(s) URL"),
    ];
    for (args, expected) in cases {
        match parse(args) {
            Ok(config) => panic!("{args:?} should be refused, got {config:?}"),
            Err(e) => assert!(e.to_string().contains(expected), "{args:?}: {e}"),
        }
    }
}

#[test]
fn debug_output_hides_secrets() -> anyhow::Result<()> {
    let config = parse(&["--access-token", "tok-123", "--database-url", "postgres://u:hunter2@db/x"])?;
    let shown = format!("{config:?}");
    assert!(!shown.contains("tok-123") && !shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("postgres"), "{shown}");
    Ok(())
}

#[test]
fn the_fire_lead_defaults_to_200_ms_and_is_bounded() -> anyhow::Result<()> {
    assert_eq!(parse(&[])?.fire_lead, Duration::from_millis(200));
    assert_eq!(parse(&["--fire-lead-ms", "0"])?.fire_lead, Duration::ZERO, "upstream: all at the second");
    assert_eq!(parse(&["--fire-lead-ms", "400"])?.fire_lead, jobwheel_admin::engine::MAX_FIRE_LEAD);
    let error = Cli::try_parse_from(["jobwheel-admin", "--fire-lead-ms", "401"])
        .expect_err("beyond the bound")
        .to_string();
    assert!(error.contains("--fire-lead-ms") && error.contains("0..=400"), "{error}");
    Ok(())
}

#[test]
fn one_runtime_worker_by_default() -> anyhow::Result<()> {
    assert_eq!(Cli::try_parse_from(["jobwheel-admin"])?.worker_threads, 1);
    assert_eq!(Cli::try_parse_from(["jobwheel-admin", "--worker-threads", "4"])?.worker_threads, 4);
    Ok(())
}
