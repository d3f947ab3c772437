//! CRON and FIX_RATE jobs fire on time: started through the API, each scheduled fire time (the
//! durable-ring claim) matches the schedule, every one fired once and succeeded, and each run
//! started within a second of its fire time — and saw its per-fire key, `job:<id>@<second>`,
//! and that second as its scheduled time (docs/engine.md, "The per-fire key").

use std::time::Duration;

use anyhow::ensure;
use jobwheel_tests::now_ms;
use jobwheel_tests::outcomes::claims;
use serde_json::json;

use crate::Stack;
use jobwheel_tests::api::all_done;

pub(crate) async fn run(stack: &Stack) -> anyhow::Result<()> {
    let api = &stack.api;
    let script = json!({"glueType": "GLUE_SHELL", "glueSource": "echo \"on time: fire=$JOBWHEEL_FIRE_KEY at=$JOBWHEEL_SCHEDULED_TIME\"", "executorHandler": ""});
    let mut cron = script.clone();
    cron["scheduleType"] = json!("CRON");
    cron["scheduleConf"] = json!("*/2 * * * * ?");
    let mut rate = script;
    rate["scheduleType"] = json!("FIX_RATE");
    rate["scheduleConf"] = json!("3");
    let cron = api.job(stack.group, "every two seconds", cron).await?;
    let rate = api.job(stack.group, "every three seconds", rate).await?;
    let started = now_ms();
    api.post(&format!("/jobs/{cron}/start"), json!({})).await?;
    api.post(&format!("/jobs/{rate}/start"), json!({})).await?;
    // The first fire is at least 5 s after start (upstream); then four of each.
    api.wait_logs(cron, Duration::from_secs(40), "four cron runs", |l| all_done(l, 4)).await?;
    api.wait_logs(rate, Duration::from_secs(40), "three fix-rate runs", |l| all_done(l, 3)).await?;
    api.post(&format!("/jobs/{cron}/stop"), json!({})).await?;
    api.post(&format!("/jobs/{rate}/stop"), json!({})).await?;

    let all = claims(&stack.url, started, now_ms() + 10_000).await?;
    for (job, step, what) in [(cron, 2000, "CRON */2"), (rate, 3000, "FIX_RATE 3")] {
        let mut mine: Vec<_> = all.iter().filter(|c| c.job_id == job && c.status == 1).collect();
        mine.sort_by_key(|c| c.fire_ms);
        ensure!(mine.len() >= 3, "{what}: {} fires", mine.len());
        for pair in mine.windows(2) {
            ensure!(
                pair[1].fire_ms - pair[0].fire_ms == step,
                "{what}: fires {} and {} are not {step} ms apart",
                pair[0].fire_ms,
                pair[1].fire_ms
            );
        }
        if job == cron {
            ensure!(mine.iter().all(|c| c.fire_ms % 2000 == 0), "{what}: fires on even seconds");
        }
        // The first three had finished when the jobs were stopped (later ones may still run).
        for c in mine.iter().take(3) {
            ensure!(c.handle_code == Some(200), "{what}: fire at {} ended {:?}", c.fire_ms, c.handle_code);
        }
    }
    // Each finished run saw its fire's key: the job and the claim's second.
    for (job, step) in [(cron, 2000), (rate, 3000)] {
        let fires: Vec<i64> =
            all.iter().filter(|c| c.job_id == job && c.status == 1).map(|c| c.fire_ms).collect();
        for log in api.logs(job).await?.iter().filter(|l| l["handleCode"] == 200) {
            let content = api.content(log["id"].as_i64().unwrap_or(0)).await?;
            let at: i64 = content
                .split(" at=")
                .nth(1)
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(-1);
            ensure!(
                fires.contains(&at),
                "job {job}: scheduled time {at} is no fire time {fires:?}: {content}"
            );
            ensure!(
                content.contains(&format!("fire=job:{job}@{at} at={at}")),
                "job {job} (every {step} ms): the key of the fire at {at}: {content}"
            );
        }
    }
    // Each run's trigger time (whole seconds) is its fire second, or the next one at worst.
    for job in [cron, rate] {
        // Pending claims count: their rows are staged ahead and fire after the stop.
        let fires: Vec<i64> =
            all.iter().filter(|c| c.job_id == job && c.status != 2).map(|c| c.fire_ms / 1000).collect();
        for log in api.logs(job).await? {
            let second = log["triggerTime"].as_i64().unwrap_or(0) / 1000;
            ensure!(
                fires.iter().any(|f| second == *f || second == f + 1),
                "job {job}: a run at {second} s matches no fire time"
            );
        }
    }
    Ok(())
}
