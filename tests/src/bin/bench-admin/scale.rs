//! What a run with very many jobs measures besides lateness and cost (issue 34, "a million
//! jobs"): the pre-read's own time from the admin's `/metrics`, the management API's job list
//! over the whole table, and how long a SIGKILLed admin takes from its restart to its first
//! fresh fire. Also the bulk stop at the end: one statement, where stopping a million jobs one
//! by one through the store would take longer than the run.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::process::Child;

use crate::setup::{API_TOKEN, Arrivals, now_ms};

/// Stops every job of the benchmark in one statement.
pub(crate) async fn stop_all(url: &str) -> anyhow::Result<()> {
    let sql = "UPDATE xxl_job_info SET trigger_status = 0, trigger_next_time = 0";
    anyhow::ensure!(jobwheel_tests::databases::execute_sql(url, sql.to_owned()).await? > 0, "no job stopped");
    Ok(())
}

/// Mean and 99th percentile (from the buckets: the first bound at or above it) of
/// `jobwheel_schedule_pre_read_seconds`, in ms, and the number of pre-reads.
pub(crate) async fn pre_read_time(admin_url: &str) -> anyhow::Result<(f64, f64, u64)> {
    let page = reqwest::Client::new()
        .get(format!("{admin_url}/metrics"))
        .bearer_auth(API_TOKEN)
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    let series = "jobwheel_schedule_pre_read_seconds";
    let value = |line: &str| line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    let mut buckets = Vec::new();
    let (mut sum, mut count) = (0.0, 0.0);
    for line in page.lines().filter(|l| l.starts_with(series)) {
        if let Some(rest) = line.strip_prefix(&format!("{series}_bucket{{le=\"")) {
            let bound = rest.split('"').next().unwrap_or_default();
            buckets.push((bound.parse::<f64>().unwrap_or(f64::INFINITY), value(line)));
        } else if line.starts_with(&format!("{series}_sum")) {
            sum = value(line);
        } else if line.starts_with(&format!("{series}_count")) {
            count = value(line);
        }
    }
    anyhow::ensure!(count > 0.0, "the admin reported no pre-read ({series})");
    let p99 = buckets.iter().find(|(_, n)| *n >= count * 0.99).map_or(f64::INFINITY, |(bound, _)| *bound);
    Ok((sum / count * 1000.0, p99 * 1000.0, count as u64))
}

/// Times the job list the UI asks for: the first page of the group, a page at the end of it,
/// and a search by name; ms each (the best of three, so a cold cache is not what is measured).
pub(crate) async fn list_queries(
    admin_url: &str,
    group: i64,
    jobs: usize,
) -> anyhow::Result<Vec<(String, f64)>> {
    let http = reqwest::Client::new();
    let last = jobs.saturating_sub(10);
    let queries = [
        ("first page".to_owned(), format!("jobGroup={group}&offset=0&limit=10")),
        (format!("page at offset {last}"), format!("jobGroup={group}&offset={last}&limit=10")),
        (
            "search by name".to_owned(),
            format!("jobGroup={group}&jobDesc=bench%20job%20{}&limit=10", jobs / 2),
        ),
    ];
    let mut timed = Vec::new();
    for (name, query) in queries {
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let started = Instant::now();
            let response =
                http.get(format!("{admin_url}/api/v1/jobs?{query}")).bearer_auth(API_TOKEN).send().await?;
            anyhow::ensure!(response.status().is_success(), "{name}: {}", response.status());
            let body: serde_json::Value = response.json().await?;
            anyhow::ensure!(
                body["items"].as_array().is_some_and(|i| !i.is_empty()),
                "{name}: no jobs: {body}"
            );
            best = best.min(started.elapsed().as_secs_f64() * 1000.0);
        }
        timed.push((name, best));
    }
    Ok(timed)
}

/// Waits until a run of a second at or after `after_ms` arrived: the ring hands seconds over in
/// order, so by then every run of the seconds before it is out.
pub(crate) async fn wait_for_fire_after(
    arrivals: &Arrivals,
    after_ms: i64,
    patience: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + patience;
    while !arrivals.lock().expect("arrivals").iter().rev().any(|a| a.scheduled_ms >= after_ms) {
        anyhow::ensure!(Instant::now() < deadline, "no run of a second after the window within {patience:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// SIGKILLs the admin, starts it again on the same port and database, and measures how long
/// until it answers HTTP and until the first run of a second after the restart arrives at an
/// executor (runs of earlier seconds are the dead process's claims, recovered).
pub(crate) async fn restart(
    admin: &mut Child,
    (url, port, data_dir): (&str, u16, &Path),
    per_second: usize,
    arrivals: &Arrivals,
) -> anyhow::Result<(Child, Duration, Duration)> {
    admin.start_kill()?;
    admin.wait().await?;
    let started = Instant::now();
    let restarted_ms = now_ms();
    let child = crate::setup::admin(url, port, data_dir, per_second).await?;
    let answered = started.elapsed();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let first = arrivals
            .lock()
            .expect("arrivals")
            .iter()
            .filter(|a| a.scheduled_ms > restarted_ms)
            .map(|a| a.at_ms)
            .min();
        if let Some(at_ms) = first {
            let after = Duration::from_millis(u64::try_from(at_ms - restarted_ms).unwrap_or(0));
            return Ok((child, answered, after));
        }
        if Instant::now() > deadline {
            return Err(anyhow::anyhow!("no fresh fire within 120 s of the restart"))
                .with_context(|| format!("see {}", data_dir.join("admin.log").display()));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
