//! Flight records as an executor sends them with results (docs/replay.md), from the executor's
//! side of the wire: a record is sealed at rest (its text is not in the row) and filed beside
//! its log; one past the 2 MiB limit keeps only the reason, so an executor cannot fill the
//! admin's database with them; the log page shows whether a run can be replayed.

use chrono::Utc;
use jobwheel_admin::store::{LogId, NewLog};
use serde_json::json;

use super::Env;
use crate::http::TOKEN;

fn record(log: LogId, marker: &str) -> String {
    json!({
        "module": "ab".repeat(32),
        "summary": {"outcome": "succeeded", "fuel": 10, "peakMemoryBytes": 65536, "lines": 1, "linesSha256": "00"},
        "journal": {
            "version": 1,
            "inputs": {"jobId": 1, "logId": log.0, "shard": [0, 1], "fireKey": "k", "scheduledTime": 0, "param": marker},
            "insecureSeed": "0"
        }
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executors_records_are_sealed_filed_with_their_logs_and_capped() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let store = env.store();
    let group = jobwheel_tests::fixtures::auto_group(store, "flight-app").await?;
    let job = store.add_job(&jobwheel_tests::fixtures::bean_job(group, "recorded", "echo")).await?;
    let mut logs = Vec::new();
    for _ in 0..2 {
        logs.push(
            store.insert_log(&NewLog { job_group: group, job_id: job, trigger_time: Utc::now() }).await?,
        );
    }
    let marker = "a-response-body-nobody-may-read";
    let flood = "x".repeat(2 * 1024 * 1024 + 1);
    let results = json!([
        {"logId": logs[0].0, "handleCode": 200, "handleMsg": "ok", "flight": record(logs[0], marker)},
        {"logId": logs[1].0, "handleCode": 200, "handleMsg": "ok", "flight": flood},
    ]);
    let reply = env.admin.executor_call("callback", &results, Some(TOKEN), None).await;
    assert_eq!(reply["code"], 200, "{reply}");

    let sealed = store.flight(logs[0]).await?.expect("a record for the first log");
    assert!(sealed.replayable && sealed.module == "ab".repeat(32), "{sealed:?}");
    let body = String::from_utf8_lossy(&sealed.body);
    assert!(!body.contains(marker) && !body.contains("insecureSeed"), "the record is sealed at rest");
    let capped = store.flight(logs[1]).await?.expect("a row saying why");
    assert!(!capped.replayable, "{capped:?}");
    assert!(capped.reason.as_deref().is_some_and(|r| r.contains("over the limit")), "{capped:?}");
    assert!(capped.body.len() < 100, "only the reason is kept, not {} bytes", capped.body.len());

    // The log page sees whether a run can be replayed, without the record.
    let root = env.login("root").await;
    let (status, view) = root.get(&format!("/api/v1/logs/{}", logs[1].0)).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["flight"]["replayable"], false, "{view}");
    assert!(!view.to_string().contains("xxxxxxxx"), "no record text in the view");
    let (status, view) = root.get(&format!("/api/v1/logs/{}", logs[0].0)).await;
    assert_eq!((status, &view["flight"]["replayable"]), (200, &json!(true)), "{view}");
    assert!(!view.to_string().contains(marker), "{view}");
    env.admin.stop().await
}
