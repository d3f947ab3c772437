//! The per-fire key and scheduled time on the executor's side, through its real `/run` and
//! callbacks: a BEAN handler reads them from its `JobContext`, a script from
//! `JOBWHEEL_FIRE_KEY` / `JOBWHEEL_SCHEDULED_TIME`, and a trigger from an admin that sends
//! neither (upstream's) is a fire of its own, `log:<logId>` at its `logDateTime`. The Wasm
//! guests' SDKs are checked in `workflow_data.rs` (their outputs carry the key).

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
