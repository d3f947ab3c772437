//! `/log` paging and the job log file layout.

use jobwheel_executor::{Handlers, JobContext};
use jobwheel_tests::{now_ms, trigger, wait_until_async};
use serde_json::json;

use crate::support::{SETTLE, rig};

fn five_lines() -> Handlers {
    let mut handlers = Handlers::new();
    handlers.register("five", |ctx: JobContext| async move {
        for i in 1..=5 {
            ctx.log(format!("line {i}"));
        }
        Ok(())
    });
    handlers
}

#[tokio::test]
async fn log_pages_by_line_number_and_is_answered_under_content_and_data() {
    let rig = rig(five_lines(), |_| {}).await;
    rig.executor.run(trigger(1, 77, "BEAN", "five", "p")).await;
    let cb = rig.admin.callback_for(77, SETTLE).await;
    // The executor notes the delivered callback in the log right after the admin accepted it;
    // wait for that last line so the file no longer grows while we page through it.
    let executor = &rig.executor;
    wait_until_async(SETTLE, "the log's final line", || async move {
        executor.log_text(77, cb.log_date_tim).await.contains("callback finish").then_some(())
    })
    .await;

    let first = rig.executor.log(77, cb.log_date_tim, 1).await;
    assert_eq!(first["code"], 200);
    assert_eq!(first["content"], first["data"], "Gen A and Gen B admins read the same payload");
    let total = first["content"]["toLineNum"].as_i64().unwrap();
    let text = first["content"]["logContent"].as_str().unwrap();
    assert_eq!(text.lines().count() as i64, total);
    assert!(text.ends_with('\n'));
    assert_eq!(first["content"]["fromLineNum"], 1);
    assert_eq!(first["content"]["isEnd"], false);
    for expected in ["xxl-job job execute start", "Param:p", "line 1", "line 5", "Result: handleCode=200"] {
        assert!(text.contains(expected), "missing {expected:?} in {text}");
    }

    // From the middle: exactly the tail.
    let tail = rig.executor.log(77, cb.log_date_tim, 3).await;
    let tail_text = tail["data"]["logContent"].as_str().unwrap();
    assert_eq!(tail_text, text.lines().skip(2).map(|l| format!("{l}\n")).collect::<String>());
    assert_eq!(tail["data"]["toLineNum"].as_i64().unwrap(), total);

    // Past the end: nothing new, toLineNum < fromLineNum, which admins read as "no new lines".
    let past = rig.executor.log(77, cb.log_date_tim, i32::try_from(total).unwrap() + 1).await;
    assert_eq!(past["content"]["logContent"], "");
    assert!(past["content"]["toLineNum"].as_i64().unwrap() < total + 1);
    assert_eq!(past["content"]["isEnd"], false);

    // The file sits at {log-path}/{yyyy-MM-dd}/{logId}.log.
    let day = chrono::Local::now().format("%Y-%m-%d").to_string();
    assert!(rig.dir.path().join(day).join("77.log").is_file());
}

#[tokio::test]
async fn log_accepts_gen_c_field_name_and_reports_missing_files_like_upstream() {
    let rig = rig(five_lines(), |_| {}).await;
    rig.executor.run(trigger(1, 78, "BEAN", "five", "")).await;
    let cb = rig.admin.callback_for(78, SETTLE).await;
    let gen_c = rig
        .executor
        .post("/log", json!({"logDateTime": cb.log_date_tim, "logId": 78, "fromLineNum": 1}))
        .await;
    assert!(gen_c["data"]["logContent"].as_str().unwrap().contains("line 3"), "{gen_c}");

    let missing = rig.executor.log(999, now_ms(), 1).await;
    let expected = json!({"fromLineNum": 1, "toLineNum": 0, "logContent": "readLog fail, logFile not exists", "isEnd": true});
    assert_eq!(missing, json!({"code": 200, "content": expected, "data": expected}));
}

#[tokio::test]
async fn a_flooding_job_log_is_truncated_with_a_note() {
    let mut handlers = Handlers::new();
    handlers.register("flood", |ctx: JobContext| async move {
        for i in 0..10_000 {
            ctx.log(format!("flood line {i} {}", "x".repeat(100)));
        }
        Ok(())
    });
    let rig = rig(handlers, |c| c.max_log_bytes = 64 * 1024).await;
    rig.executor.run(trigger(1, 79, "BEAN", "flood", "")).await;
    let cb = rig.admin.callback_for(79, SETTLE).await;
    assert_eq!(cb.handle_code, 200);
    let text = rig.executor.log_text(79, cb.log_date_tim).await;
    assert!(text.len() < 70 * 1024, "log is bounded: {} bytes", text.len());
    assert!(text.contains("job log truncated"), "truncation is noted");
}
