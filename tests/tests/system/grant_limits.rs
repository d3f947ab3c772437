//! A job's own fuel and memory grants, end to end: set through the admin's API, carried in the
//! trigger, applied by a real executor below its own (larger) defaults, and reported in the
//! run's handle message. Only executor-wide limits are exercised elsewhere.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use jobwheel_tests::api::all_done;
use jobwheel_tests::sample_jobs::sample_job;
use serde_json::json;

use crate::Stack;

const FUEL: u64 = 5_000_000;
const MEMORY_BYTES: u64 = 8 << 20;

pub(crate) async fn run(stack: &Stack) -> anyhow::Result<()> {
    let api = &stack.api;
    let burner = stack.wasm_job("burns past its fuel grant", sample_job("cpu-burner")).await?;
    api.put(&format!("/jobs/{burner}/grant"), json!({"fuel": FUEL})).await?;
    let hog = stack.wasm_job("grows past its memory grant", sample_job("memory-hog")).await?;
    api.put(&format!("/jobs/{hog}/grant"), json!({"memoryBytes": MEMORY_BYTES})).await?;
    api.trigger(burner, None).await?;
    api.trigger(hog, None).await?;

    let logs =
        api.wait_logs(burner, Duration::from_secs(60), "the fuel-granted run", |l| all_done(l, 1)).await?;
    let msg = logs[0]["handleMsg"].as_str().context("handle message")?;
    ensure!(logs[0]["handleCode"] == 500, "{logs:#?}");
    ensure!(
        msg.contains(&format!("fuel budget of {FUEL} exhausted")),
        "the job's own fuel grant applied: {msg}"
    );

    let logs =
        api.wait_logs(hog, Duration::from_secs(60), "the memory-granted run", |l| all_done(l, 1)).await?;
    let msg = logs[0]["handleMsg"].as_str().context("handle message")?;
    ensure!(logs[0]["handleCode"] == 500, "{logs:#?}");
    ensure!(
        msg.contains("out of memory") && msg.contains(&format!("over the limit of {MEMORY_BYTES} bytes")),
        "the job's own memory grant applied: {msg}"
    );
    Ok(())
}
