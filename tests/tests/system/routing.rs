//! The ten routing strategies observed live on three executors: which executor ran each
//! trigger (the log's executor address) must follow the strategy.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use serde_json::{Value, json};

use crate::Stack;
use jobwheel_tests::api::{Api, addresses, all_done};

/// Triggers `job` `n` times, one after another, and waits for all runs; their addresses.
async fn route(api: &Api, job: i64, n: usize) -> anyhow::Result<Vec<String>> {
    for i in 0..n {
        api.trigger(job, None).await?;
        // One trigger at a time, so the order of the logs is the order of the routing decisions.
        let routed =
            |l: &[Value]| l.len() == i + 1 && l.iter().all(|l| l["triggerCode"].as_i64().unwrap_or(0) > 0);
        api.wait_logs(job, Duration::from_secs(20), "the trigger routed", routed).await?;
    }
    let logs = api.wait_logs(job, Duration::from_secs(20), "every run", |l| all_done(l, n)).await?;
    ensure!(logs.iter().all(|l| l["handleCode"] == 200), "job {job}: {logs:#?}");
    Ok(addresses(&logs))
}

async fn strategy_job(stack: &Stack, strategy: &str) -> anyhow::Result<i64> {
    stack
        .api
        .job(stack.group, &format!("routing {strategy}"), json!({"executorRouteStrategy": strategy}))
        .await
}

pub(crate) async fn run(stack: &Stack) -> anyhow::Result<()> {
    let api = &stack.api;
    let sorted = &stack.addresses;
    let distinct = |list: &[String]| list.iter().cloned().collect::<BTreeSet<_>>().len();

    let first = route(api, strategy_job(stack, "FIRST").await?, 3).await?;
    ensure!(first.iter().all(|a| *a == sorted[0]), "FIRST: {first:?}");
    let last = route(api, strategy_job(stack, "LAST").await?, 3).await?;
    ensure!(last.iter().all(|a| *a == sorted[2]), "LAST: {last:?}");

    let round = route(api, strategy_job(stack, "ROUND").await?, 6).await?;
    let start = sorted.iter().position(|a| *a == round[0]).context("ROUND used an unknown address")?;
    let expected: Vec<String> = (0..6).map(|i| sorted[(start + i) % 3].clone()).collect();
    ensure!(round == expected, "ROUND alternates through the sorted list: {round:?}");

    let random = route(api, strategy_job(stack, "RANDOM").await?, 12).await?;
    ensure!(distinct(&random) >= 2, "RANDOM used one executor 12 times: {random:?}");
    let hashed = route(api, strategy_job(stack, "CONSISTENT_HASH").await?, 4).await?;
    ensure!(distinct(&hashed) == 1, "CONSISTENT_HASH keeps a job on one executor: {hashed:?}");
    // Upstream starts each address at a random count below the number of addresses, so the
    // counts can be 0/0/2 and ties may favour the same two for six triggers; nine always reach
    // the third.
    let lfu = route(api, strategy_job(stack, "LEAST_FREQUENTLY_USED").await?, 9).await?;
    ensure!(distinct(&lfu) == 3, "LFU spreads over every executor: {lfu:?}");
    let lru = route(api, strategy_job(stack, "LEAST_RECENTLY_USED").await?, 6).await?;
    ensure!(distinct(&lru) == 3, "LRU spreads over every executor: {lru:?}");

    failover(stack).await.context("FAILOVER")?;
    busyover(stack).await.context("BUSYOVER")?;
    broadcast(stack).await.context("SHARDING_BROADCAST")
}

/// A dead address first in the list: FAILOVER probes it, skips it and says so. The dead
/// address is registered under the group's AppName first (as an executor that died after its
/// beat would be): a manual trigger may only name the group's own executors.
async fn failover(stack: &Stack) -> anyhow::Result<()> {
    let job = strategy_job(stack, "FAILOVER").await?;
    // On 127.0.0.2 (loopback too, nothing listens there), so it sorts after the live
    // executors: the other scenarios' FIRST jobs, firing meanwhile, keep the first live one.
    // (On 127.0.0.1 with a lower port it sorted first and took a cron fire of `schedules`.)
    let dead = format!("http://127.0.0.2:{}/", jobwheel_tests::cluster::free_port()?);
    registry(stack, "registry", &dead).await?;
    let triggered = stack.api.trigger(job, Some(&format!("{dead},{}", stack.addresses[1]))).await;
    registry(stack, "registryRemove", &dead).await?;
    triggered?;
    let logs = stack.api.wait_logs(job, Duration::from_secs(20), "the run", |l| all_done(l, 1)).await?;
    ensure!(addresses(&logs) == [stack.addresses[1].clone()], "ran on the live executor: {logs:#?}");
    let msg = logs[0]["triggerMsg"].as_str().unwrap_or_default();
    ensure!(
        msg.contains(&dead) && msg.contains(&stack.addresses[1]),
        "the probes are in the trigger message: {msg}"
    );
    Ok(())
}

/// `POST /api/registry` or `/api/registryRemove` of `address` under the stack's AppName, as an
/// executor would send it.
async fn registry(stack: &Stack, method: &str, address: &str) -> anyhow::Result<()> {
    jobwheel_tests::api::registry_call(stack.admin_base(), method, crate::APP, address).await
}

/// The first executor is busy with the job: BUSYOVER sends the next trigger to the second.
async fn busyover(stack: &Stack) -> anyhow::Result<()> {
    let fields = json!({"executorRouteStrategy": "BUSYOVER", "glueType": "GLUE_SHELL", "glueSource": "sleep 4", "executorHandler": ""});
    let job = stack.api.job(stack.group, "routing BUSYOVER", fields).await?;
    let pair = format!("{},{}", stack.addresses[0], stack.addresses[1]);
    stack.api.trigger(job, Some(&pair)).await?;
    stack
        .api
        .wait_logs(job, Duration::from_secs(20), "the first run running", |l| {
            l.len() == 1 && l[0]["triggerCode"] == 200
        })
        .await?;
    stack.api.trigger(job, Some(&pair)).await?;
    let logs = stack.api.wait_logs(job, Duration::from_secs(30), "both runs", |l| all_done(l, 2)).await?;
    ensure!(
        addresses(&logs) == [stack.addresses[0].clone(), stack.addresses[1].clone()],
        "the second trigger skipped the busy executor: {logs:#?}"
    );
    Ok(())
}

/// One trigger reaches every executor, each with its shard index and the total.
async fn broadcast(stack: &Stack) -> anyhow::Result<()> {
    let fields = json!({"executorRouteStrategy": "SHARDING_BROADCAST", "glueType": "GLUE_SHELL",
                        "glueSource": "echo \"shard $2 of $3\"", "executorHandler": ""});
    let job = stack.api.job(stack.group, "routing broadcast", fields).await?;
    stack.api.trigger(job, None).await?;
    let logs = stack.api.wait_logs(job, Duration::from_secs(20), "three shards", |l| all_done(l, 3)).await?;
    let mut seen: Vec<(String, String)> = Vec::new();
    for log in &logs {
        ensure!(log["handleCode"] == 200, "{log}");
        let shard = log["executorShardingParam"].as_str().unwrap_or_default().to_owned();
        let (index, total) = shard.split_once('/').context("sharding param i/n")?;
        let content = stack.api.content(log["id"].as_i64().context("log id")?).await?;
        ensure!(
            content.contains(&format!("shard {index} of {total}")),
            "shard {shard} ran with its index: {content}"
        );
        seen.push((log["executorAddress"].as_str().unwrap_or_default().to_owned(), shard));
    }
    seen.sort_by(|a, b| a.1.cmp(&b.1));
    let expected: Vec<(String, String)> =
        stack.addresses.iter().enumerate().map(|(i, a)| (a.clone(), format!("{i}/3"))).collect();
    ensure!(seen == expected, "shard i on the i-th executor: {seen:?}");
    Ok(())
}
