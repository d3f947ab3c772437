//! The per-fire key and scheduled time on the executor's side, through its real `/run` and
//! callbacks: a BEAN handler reads them from its `JobContext`, a script from
//! `JOBWHEEL_FIRE_KEY` / `JOBWHEEL_SCHEDULED_TIME`, and a trigger from an admin that sends
//! neither (upstream's) is a fire of its own, `log:<logId>` at its `logDateTime`. The Wasm
//! guests' SDKs are checked in `workflow_data.rs` (their outputs carry the key). An
//! `EXACTLY_ONCE` trigger runs its key once on a real executor process, across a resend and
//! across the executor's own SIGKILL mid-run (its fire journal).

use jobwheel_executor::{Handlers, JobContext};
use jobwheel_tests::trigger;
use serde_json::{Value, json};

use crate::support::{SETTLE, rig};

const SCHEDULED: i64 = 1_900_000_000_000;

fn keyed(mut body: Value, key: &str) -> Value {
    body["fireKey"] = json!(key);
    body["scheduledTime"] = json!(SCHEDULED);
    body
}

#[tokio::test]
async fn a_bean_handler_sees_the_key_and_the_scheduled_time_or_its_own_log_without_them() {
    let mut handlers = Handlers::new();
    handlers.register("whoami", |ctx: JobContext| async move {
        ctx.handle_success(format!("{} {}", ctx.fire_key(), ctx.scheduled_time()));
        Ok(())
    });
    let rig = rig(handlers, |_| {}).await;
    let key = format!("job:1@{SCHEDULED}#1/2");
    rig.executor.run(keyed(trigger(1, 1, "BEAN", "whoami", ""), &key)).await;
    assert_eq!(rig.admin.callback_for(1, SETTLE).await.handle_msg, format!("{key} {SCHEDULED}"));

    // Upstream's admin sends neither field.
    let mut plain = trigger(1, 2, "BEAN", "whoami", "");
    plain["logDateTime"] = json!(1_800_000_000_000_i64);
    rig.executor.run(plain).await;
    assert_eq!(rig.admin.callback_for(2, SETTLE).await.handle_msg, "log:2 1800000000000");
}

#[tokio::test]
async fn a_script_reads_the_key_and_the_scheduled_time_from_its_environment() {
    let rig = rig(Handlers::new(), |c| c.script_glue = true).await;
    let source = format!(
        "test \"$JOBWHEEL_FIRE_KEY\" = \"job:3@{SCHEDULED}\" && test \"$JOBWHEEL_SCHEDULED_TIME\" = {SCHEDULED}\n"
    );
    for (log_id, key, code) in [(10, format!("job:3@{SCHEDULED}"), 200), (11, "log:11".to_owned(), 500)] {
        let mut body = trigger(3, log_id, "GLUE_SHELL", "", "");
        body["glueSource"] = json!(source);
        body["glueUpdatetime"] = json!(1);
        rig.executor.run(keyed(body, &key)).await;
        let result = rig.admin.callback_for(log_id, SETTLE).await;
        assert_eq!(result.handle_code, code, "key {key}: {}", result.handle_msg);
    }
}

/// `/run` on a real executor process, as an admin sends it.
async fn send(base: &str, body: &Value) -> Value {
    reqwest::Client::new()
        .post(format!("{base}/run"))
        .header(jobwheel_protocol::ACCESS_TOKEN_HEADER, jobwheel_tests::TOKEN)
        .json(body)
        .send()
        .await
        .expect("run")
        .json()
        .await
        .expect("reply")
}

/// An exactly-once script trigger of `job` (one job per script: the executor keeps a job's
/// script by its GLUE time) that notes each start of its run in `marker`, then sleeps `secs`.
fn exactly_once(job: i32, log_id: i64, key: &str, marker: &std::path::Path, secs: u32) -> Value {
    let mut body = keyed(trigger(job, log_id, "GLUE_SHELL", "", ""), key);
    body["glueSource"] = json!(format!("echo start >> '{}'\nsleep {secs}\n", marker.display()));
    body["glueUpdatetime"] = json!(1);
    body["deliveryMode"] = json!(jobwheel_protocol::EXACTLY_ONCE);
    body
}

fn starts(marker: &std::path::Path) -> usize {
    std::fs::read_to_string(marker).unwrap_or_default().lines().count()
}

#[tokio::test]
async fn an_exactly_once_key_runs_once_across_a_resend_and_the_executors_own_sigkill() {
    let admin = jobwheel_tests::FakeAdmin::start(Some(jobwheel_tests::TOKEN)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut executor = jobwheel_tests::cluster::Daemon::start_executor(
        "exactly-once",
        &[admin.base_url()],
        &dir.path().join("executor"),
        &["--enable-script-glue"],
    )
    .await
    .expect("executor");

    // Sent twice, run once; the repeat is answered with the first run's result.
    let quick = dir.path().join("quick");
    let body = exactly_once(8, 1, &format!("job:8@{SCHEDULED}"), &quick, 0);
    assert_eq!(send(&executor.base, &body).await["code"], 200);
    assert_eq!(admin.callback_for(1, SETTLE).await.handle_code, 200);
    assert_eq!(send(&executor.base, &body).await["code"], 200);
    admin
        .wait_for(SETTLE, "the first result sent again", |r| {
            r.callbacks.iter().filter(|c| c.log_id == 1).count() == 2
        })
        .await;
    assert_eq!(starts(&quick), 1, "the repeat did not run");

    // SIGKILLed mid-run, back on its address: the resend is not run again, and is failed.
    let slow = dir.path().join("slow");
    let body = exactly_once(9, 2, &format!("job:9@{SCHEDULED}"), &slow, 30);
    assert_eq!(send(&executor.base, &body).await["code"], 200);
    jobwheel_tests::wait_until(SETTLE, "the run started", || starts(&slow) == 1).await;
    executor.kill9().await.expect("SIGKILL");
    executor.restart().await.expect("restart on its address");
    assert_eq!(send(&executor.base, &body).await["code"], 200);
    let result = admin.callback_for(2, SETTLE).await;
    assert_eq!(result.handle_code, 500, "{}", result.handle_msg);
    assert!(result.handle_msg.contains("not run again"), "{}", result.handle_msg);
    assert_eq!(starts(&slow), 1, "the key ran once");

    // Without the mode the key is only information (upstream's at most once per send): the
    // same fire sent twice runs twice.
    for log_id in [3, 4] {
        let mut plain = exactly_once(10, log_id, &format!("job:10@{SCHEDULED}"), &quick, 0);
        plain["deliveryMode"] = Value::Null;
        assert_eq!(send(&executor.base, &plain).await["code"], 200);
        admin.callback_for(log_id, SETTLE).await;
    }
    jobwheel_tests::wait_until(SETTLE, "both sends ran", || starts(&quick) == 3).await;
    executor.stop().await.expect("stop");
}

/// From the attacker's side (docs/security.md, "Exactly-once delivery"): a `/run` with a wrong
/// token that names a fire's key cannot take the key — it is refused, nothing is journaled, and
/// the real fire still runs.
#[tokio::test]
async fn a_wrong_token_cannot_take_an_exactly_once_key() {
    let admin = jobwheel_tests::FakeAdmin::start(Some(jobwheel_tests::TOKEN)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("executor");
    let mut executor = jobwheel_tests::cluster::Daemon::start_executor(
        "exactly-once",
        &[admin.base_url()],
        &log_path,
        &["--enable-script-glue"],
    )
    .await
    .expect("executor");
    let marker = dir.path().join("marker");
    let key = format!("job:11@{SCHEDULED}");
    let body = exactly_once(11, 5, &key, &marker, 0);
    for token in [None, Some("not-the-token")] {
        let mut request = reqwest::Client::new().post(format!("{}/run", executor.base)).json(&body);
        if let Some(token) = token {
            request = request.header(jobwheel_protocol::ACCESS_TOKEN_HEADER, token);
        }
        let reply: Value = request.send().await.expect("run").json().await.expect("reply");
        assert_eq!(reply["code"], 500, "{reply}");
    }
    let journal = log_path.join("logs").join("callbacklogs").join("fires.journal");
    let journaled = std::fs::read_to_string(&journal).unwrap_or_default();
    assert!(!journaled.contains(&key), "a refused trigger is not journaled: {journaled}");
    assert_eq!(starts(&marker), 0, "nothing ran");

    assert_eq!(send(&executor.base, &body).await["code"], 200);
    assert_eq!(admin.callback_for(5, SETTLE).await.handle_code, 200);
    assert_eq!(starts(&marker), 1, "the real fire ran");
    assert!(std::fs::read_to_string(&journal).expect("journal").contains(&key));
    executor.stop().await.expect("stop");
}
