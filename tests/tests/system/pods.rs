//! Pods that come and go (issue 60 item 5): two dial-out executors, with no executor API port
//! and no job log files (`--job-logs admin`), are SIGTERMed and SIGKILLed in turn and started
//! again as new processes while two jobs fire every second and every three seconds — one of them
//! running two seconds, so kills land on runs in flight — and an admin is SIGKILLed and started
//! again too. Afterwards every trigger has ended with a result or a clear failure (none left
//! running), most of them ran, and once every pod is gone each run that succeeded has its whole
//! log — every line it wrote before its result — readable through every admin.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use jobwheel_tests::api::Api;
use jobwheel_tests::cluster::Daemon;
use serde_json::{Value, json};

use crate::API_TOKEN;
use crate::dial_out::admins_with_group;

const PODS_APP: &str = "pods-app";
/// How long the churn goes on.
const CHURN: Duration = Duration::from_secs(24);

/// Whether a log row is over: a failed trigger, or a stored result.
fn over(log: &Value) -> bool {
    let code = |key: &str| log[key].as_i64().unwrap_or(0);
    (code("triggerCode") != 0 && code("triggerCode") != 200) || code("handleCode") != 0
}

/// A log row in one line: id, trigger time, address, codes and why (the end of the trigger
/// message, where its outcome is, and the handle message).
fn brief(log: &Value) -> String {
    let trigger = log["triggerMsg"].as_str().unwrap_or_default();
    let tail: String = trigger.chars().rev().take(160).collect::<Vec<_>>().into_iter().rev().collect();
    format!(
        "log {} at {} on {}: trigger {} handle {} ({}) [{}]",
        log["id"],
        log["triggerTime"],
        log["executorAddress"].as_str().unwrap_or("-"),
        log["triggerCode"],
        log["handleCode"],
        log["handleMsg"].as_str().unwrap_or(""),
        tail
    )
}

/// Whether a log row is a staged fire that never came (no trigger, no result).
fn unfired(log: &Value) -> bool {
    log["triggerCode"].as_i64().unwrap_or(0) == 0 && log["handleCode"].as_i64().unwrap_or(0) == 0
}

pub(crate) async fn run(url: &str, admin_count: usize) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    // A drained pod deregisters at SIGTERM while its runs go on (upstream's order), and a run
    // may wait behind its job's previous one (serial execution): the lost-job timeout must
    // outlast both, or a run that finishes is marked lost first.
    let (mut admins, group) = admins_with_group(url, dir.path(), admin_count, "15", PODS_APP).await?;
    let bases: Vec<String> = admins.iter().map(|a| a.base.clone()).collect();
    let api = Api::new(&bases[admin_count - 1], API_TOKEN);
    let mut pods = Vec::new();
    for n in 0..2 {
        let path = dir.path().join(format!("pod-{n}"));
        pods.push(
            Daemon::start_executor(
                PODS_APP,
                &bases,
                &path,
                &["--dial-out", "--enable-script-glue", "--job-logs", "admin"],
            )
            .await?,
        );
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let current = api.get(&format!("/groups/{group}")).await?;
        let list = current["addressList"].as_str().unwrap_or_default();
        if list.split(',').filter(|a| a.starts_with("dial://")).count() == 2 {
            break;
        }
        ensure!(tokio::time::Instant::now() < deadline, "the pods did not register: {current}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let every_second =
        json!({"scheduleType": "FIX_RATE", "scheduleConf": "1", "executorRouteStrategy": "FAILOVER"});
    let quick = api.job(group, "every second", every_second).await?;
    let slow = json!({"scheduleType": "FIX_RATE", "scheduleConf": "3", "executorRouteStrategy": "ROUND",
                      "glueType": "GLUE_SHELL", "glueSource": "echo working; sleep 2; echo done", "executorHandler": ""});
    let slow = api.job(group, "two seconds of work", slow).await?;
    for job in [quick, slow] {
        api.post(&format!("/jobs/{job}/start"), json!({})).await?;
    }

    // The churn: a pod at a time, SIGTERM then SIGKILL, each started again as a new process;
    // half-way, the first admin is SIGKILLed and started again.
    let started = tokio::time::Instant::now();
    let mut round = 0usize;
    while started.elapsed() < CHURN {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let pod = &mut pods[round % 2];
        if round % 4 < 2 {
            pod.stop().await.context("a pod's SIGTERM drain")?;
        } else {
            pod.kill9().await?;
        }
        pod.restart().await?;
        if round == 3 {
            admins[0].kill9().await?;
            tokio::time::sleep(Duration::from_secs(2)).await;
            admins[0].restart().await?;
        }
        round += 1;
    }
    for job in [quick, slow] {
        api.post(&format!("/jobs/{job}/stop"), json!({})).await?;
    }

    // Every trigger ends: a result, or a failure that says why. None is left running.
    let logs: Vec<String> = pods.iter().map(Daemon::log_text).collect();
    let drained = drained_addresses(&logs.join("\n"));
    if let Err(e) = every_trigger_ended(&api, quick, slow, &drained).await {
        let logs: Vec<String> = pods.iter().map(Daemon::log_text).collect();
        // The error first: a failure block shows its head, and the logs are long.
        anyhow::bail!("{e:#}\n\nthe pods' logs:\n{}", logs.join("\n=====\n"));
    }
    for pod in &mut pods {
        pod.stop().await?;
    }
    for base in &bases {
        every_log_kept(&Api::new(base, API_TOKEN), quick, slow)
            .await
            .with_context(|| format!("through {base}"))?;
    }
    for admin in &mut admins {
        admin.stop().await?;
    }
    Ok(())
}

/// Every succeeded run's log, read through the admin at `api` with its pod gone: every line the
/// run wrote before its result, in order, and nothing twice.
async fn every_log_kept(api: &Api, quick: i64, slow: i64) -> anyhow::Result<()> {
    for (job, lines) in [
        (quick, &["xxl-job job execute start", "XXL-JOB, Hello World.", "param:", "execute end"][..]),
        (slow, &["xxl-job job execute start", "working", "done", "execute end"][..]),
    ] {
        let runs = api.logs(job).await?;
        let succeeded: Vec<&Value> = runs.iter().filter(|l| l["handleCode"] == 200).collect();
        ensure!(!succeeded.is_empty(), "job {job}: no run succeeded");
        for run in succeeded {
            let id = run["id"].as_i64().context("log id")?;
            let page = api.get(&format!("/logs/{id}/content?fromLine=1")).await?;
            let content = page["logContent"].as_str().unwrap_or_default();
            let mut at = 0;
            for line in lines {
                let found = content[at..].find(line).with_context(|| {
                    format!("job {job}, run {id}: {line:?} missing (or out of order) in:\n{content}")
                })?;
                at += found + line.len();
            }
            ensure!(
                content.matches("execute start").count() == 1 && content.matches("execute end").count() == 1,
                "job {job}, run {id}: a line twice:\n{content}"
            );
        }
    }
    Ok(())
}

/// The addresses of pod processes that were SIGTERMed (and so drained), from their logs: each
/// start logs its address, each SIGTERM is logged by the process it stops.
fn drained_addresses(logs: &str) -> Vec<String> {
    let mut current = None;
    let mut drained = Vec::new();
    for line in logs.lines() {
        if line.contains("executor started") {
            current = line.split("address=").nth(1).and_then(|rest| rest.split_whitespace().next());
        } else if line.contains("SIGTERM received") {
            drained.extend(current.map(str::to_owned));
        }
    }
    drained
}

/// Every trigger of both jobs ended with a result or a reason; none of a drained pod's runs
/// was lost (only a SIGKILLed pod loses the run it had); enough of them ran.
async fn every_trigger_ended(api: &Api, quick: i64, slow: i64, drained: &[String]) -> anyhow::Result<()> {
    for job in [quick, slow] {
        let logs = api
            .wait_logs(job, Duration::from_secs(60), "every run over", |l| {
                l.iter().all(|l| over(l) || unfired(l))
            })
            .await?;
        let fired: Vec<&Value> = logs.iter().filter(|l| !unfired(l)).collect();
        let ok = fired.iter().filter(|l| l["handleCode"] == 200).count();
        for log in fired.iter().filter(|l| l["handleCode"] != 200) {
            let why =
                [&log["triggerMsg"], &log["handleMsg"]].iter().filter_map(|v| v.as_str()).collect::<String>();
            ensure!(!why.trim().is_empty(), "job {job}: a failure without a reason: {log:#}");
            let address = log["executorAddress"].as_str().unwrap_or_default();
            let lost = why.contains("Job result lost");
            ensure!(
                !(lost && drained.iter().any(|d| d == address)),
                "job {job}: a drained pod lost a run: {log:#}"
            );
        }
        // The quick job fires ~24 times, less the seconds its only admin is down on SQLite.
        let least = if job == quick { usize::try_from(CHURN.as_secs() / 3)? } else { 2 };
        // One line per run: the whole rows would be cut by the failure block of scripts/test.sh.
        let lines: Vec<String> = fired.iter().map(|l| brief(l)).collect();
        ensure!(ok >= least, "job {job}: only {ok} of {} runs succeeded:\n{}", fired.len(), lines.join("\n"));
    }
    Ok(())
}
