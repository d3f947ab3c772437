//! The executor's flags: upstream's defaults, the tuning flags, and refusals with a message.

use std::time::Duration;

use clap::Parser as _;
use jobwheel_executor::{Cli, ExecutorConfig};

fn config(args: &[&str]) -> Result<ExecutorConfig, String> {
    let cli = Cli::try_parse_from(["jobwheel-executor", "--access-token", "t"].iter().chain(args))
        .map_err(|e| e.to_string())?;
    ExecutorConfig::from_cli(&cli).map_err(|e| e.to_string())
}

#[test]
fn defaults_follow_upstream_and_intervals_can_be_tuned() {
    let defaults = config(&[]).expect("defaults");
    assert_eq!(defaults.timings.registry_interval, Duration::from_secs(30));
    assert_eq!(defaults.timings.callback_retry_interval, Duration::from_secs(30));
    assert!(!defaults.script_glue, "script GLUE is opt-in");
    let tuned = config(&["--beat-interval", "2", "--callback-retry-interval", "1"]).expect("tuned");
    assert_eq!(tuned.timings.registry_interval, Duration::from_secs(2));
    assert_eq!(tuned.timings.callback_retry_interval, Duration::from_secs(1));
    let zero = config(&["--beat-interval", "0"]).expect_err("refused");
    assert!(zero.contains("at least 1 second"), "{zero}");
}

#[test]
fn glue_can_be_switched_off_as_in_xxl_job_3_5_but_not_together_with_script_glue() {
    assert!(config(&[]).expect("defaults").glue_enabled, "GLUE runs unless switched off");
    assert!(!config(&["--glue-enabled=false"]).expect("BEAN only").glue_enabled);
    assert!(!config(&["--glue-enabled", "false"]).expect("BEAN only").glue_enabled);
    let both = config(&["--glue-enabled=false", "--enable-script-glue"]).expect_err("contradiction");
    assert!(both.contains("--enable-script-glue contradicts --glue-enabled=false"), "{both}");
}
