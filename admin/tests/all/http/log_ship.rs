//! Job logs kept by the admin against a live admin: a real `jobwheel-executor` (the library, in
//! process) dialling out with `--job-logs admin` writes no log file, and its run's every line
//! is read and searched through the admin — also once the executor is gone; and the door,
//! `POST /api/logShip`, from the attacker's side: a wrong token, a body that is not a batch, a
//! compression bomb, lines for another group's logs, and a flood past a run's cap.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use jobwheel_admin::job_logs::MAX_STORED_LOG_BYTES;
use jobwheel_admin::protocol::log_ship::{LogBatch, LogPiece, MAX_SHIP_TEXT, encode};
use jobwheel_admin::protocol::{ACCESS_TOKEN_HEADER, APPNAME_HEADER};
use jobwheel_admin::store::{GroupId, LogId, NewLog, Store};
use jobwheel_executor::{ExecutorConfig, Handlers, JobContext, JobLogs};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::dial_out::logs;
use super::gen_c::set_token;
use super::mgmt::Env;
use crate::http::{TOKEN, eventually};

const APP: &str = "ship-app";
/// Lines the `lines` handler writes.
const LINES: usize = 3000;

/// Every line of log `id` through the API, page by page as the rolling log reads it, and
/// whether the last page said the log has ended.
async fn read_all(root: &super::mgmt::Client, id: LogId) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let mut from = 1;
    loop {
        let (status, page) = root.get(&format!("/api/v1/logs/{}/content?fromLine={from}", id.0)).await;
        assert_eq!(status, 200, "{page}");
        let content = page["logContent"].as_str().unwrap_or_default();
        lines.extend(content.lines().map(str::to_owned));
        let to = page["toLineNum"].as_i64().expect("toLineNum");
        if to < from || content.is_empty() {
            return (lines, page["end"] == json!(true));
        }
        from = to + 1;
    }
}

/// Files under `dir` whose names end in `.log` (job log files).
fn log_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|x| x == "log") {
                found.push(path);
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_an_executor_without_log_files_is_read_and_searched_through_the_admin() -> anyhow::Result<()>
{
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let store = Arc::clone(&env.admin.store);
    let dir = tempfile::tempdir()?;
    let group = jobwheel_tests::fixtures::auto_group(&*store, APP).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let mut config = ExecutorConfig::new(APP, dir.path().join("executor"), Some(TOKEN.to_owned()));
    config.admin_addresses = vec![env.admin.base.clone()];
    config.dial_out = true;
    config.job_logs = JobLogs::Admin;
    config.timings.registry_interval = Duration::from_secs(1);
    let mut handlers = Handlers::new();
    handlers.register("lines", |ctx: JobContext| async move {
        for n in 1..=LINES {
            ctx.log(format!("line {n} of {}", ctx.param()));
            if n % 500 == 0 {
                // Spread over several shipments.
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
        }
        Ok(())
    });
    let (stop, stopped) = oneshot::channel::<()>();
    let executor = tokio::spawn(jobwheel_executor::run(config, handlers, listener, async move {
        let _ = stopped.await;
    }));
    let dial = eventually("the executor registered", || async {
        let row = store.load_group(group).await.ok()??;
        row.group.address_list.filter(|a| a.starts_with("dial://")).map(|a| a.to_owned())
    })
    .await;

    let job = store.add_job(&jobwheel_tests::fixtures::bean_job(group, "lines", "lines")).await?;
    let body = json!({"executorParam": "the shipped run", "addressList": dial});
    let (status, reply) = root.post(&format!("/api/v1/jobs/{}/trigger", job.0), body).await;
    assert_eq!(status, 200, "{reply}");
    let row = eventually("the run's result", || async {
        logs(&*store, job).await.into_iter().find(|r| r.handle_code != 0)
    })
    .await;
    assert_eq!(row.handle_code, 200, "{row:?}");

    // Read through the admin: every line once, in order, and the end once the executor
    // closed the log.
    let (lines, ended) = eventually("the whole log at the admin", || async {
        let (lines, ended) = read_all(&root, row.id).await;
        ended.then_some((lines, ended))
    })
    .await;
    let written: Vec<String> =
        lines.iter().filter(|l| l.contains(" of the shipped run")).map(|l| l.to_owned()).collect();
    assert_eq!(written.len(), LINES, "every line once");
    for (n, line) in written.iter().enumerate() {
        assert!(line.ends_with(&format!("line {} of the shipped run", n + 1)), "in order: {line}");
    }
    assert!(ended);
    assert!(lines.iter().any(|l| l.contains("execute end")), "the end line");
    assert!(lines.last().is_some_and(|l| l.contains("callback finish")), "{:?}", lines.last());
    assert!(log_files(dir.path()).is_empty(), "no job log file: {:?}", log_files(dir.path()));

    // Searched across the job's runs, with the line number the rolling log shows.
    let (status, found) = root.get(&format!("/api/v1/jobs/{}/log-search?text=LINE%202999%20OF", job.0)).await;
    assert_eq!(status, 200, "{found}");
    let matches = found["matches"].as_array().expect("matches");
    assert_eq!(matches.len(), 1, "{found}");
    let at = usize::try_from(matches[0]["lineNum"].as_u64().expect("lineNum"))?;
    assert_eq!(lines[at - 1], matches[0]["line"].as_str().expect("line"), "the line it names");
    assert_eq!(matches[0]["logId"], json!(row.id.0));

    // The executor is gone: the admin still serves the whole log.
    let _ = stop.send(());
    executor.await??;
    let (after, ended) = read_all(&root, row.id).await;
    assert_eq!((after, ended), (lines, true), "the same log without its executor");
    env.admin.stop().await
}

/// POSTs `body` to `/api/logShip` with `headers` (gzip declared unless `plain`); the status and
/// the JSON answer.
async fn ship(admin: &str, headers: &[(&str, &str)], body: Vec<u8>, plain: bool) -> (u16, Value) {
    let mut request = reqwest::Client::new().post(format!("{admin}/api/logShip")).body(body);
    if !plain {
        request = request.header("Content-Encoding", "gzip");
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("sent");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn piece(log: LogId, stamp: i64, text: String) -> LogPiece {
    LogPiece { log_id: log.0, log_date_time: 0, stamp, text, last: false }
}

async fn new_log(store: &dyn Store, group: GroupId) -> anyhow::Result<LogId> {
    let job = store.add_job(&jobwheel_tests::fixtures::bean_job(group, "lines", "lines")).await?;
    let log = NewLog { job_group: group, job_id: job, trigger_time: chrono::Utc::now() };
    Ok(store.insert_log(&log).await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_door_refuses_strangers_bombs_foreign_logs_and_floods() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let store = Arc::clone(&env.admin.store);
    let base = env.admin.base.clone();
    let open = jobwheel_tests::fixtures::auto_group(&*store, "open-app").await?;
    let guarded = jobwheel_tests::fixtures::auto_group(&*store, "guarded-app").await?;
    let other = jobwheel_tests::fixtures::auto_group(&*store, "other-app").await?;
    let guarded_token = set_token(&root, guarded, Some("guarded-group-secret")).await;
    let other_token = set_token(&root, other, Some("other-group-secret")).await;
    let open_log = new_log(&*store, open).await?;
    let guarded_log = new_log(&*store, guarded).await?;
    let one = |log: LogId, text: &str| encode(&LogBatch { pieces: vec![piece(log, 1, text.to_owned())] });
    let global = [(ACCESS_TOKEN_HEADER, TOKEN)];

    // No token or a wrong one: 401, nothing stored.
    assert_eq!(ship(&base, &[], one(open_log, "x\n"), false).await.0, 401);
    assert_eq!(
        ship(&base, &[(ACCESS_TOKEN_HEADER, "wrong-token-1")], one(open_log, "x\n"), false).await.0,
        401
    );
    // Not gzip, not a batch, over the compressed limit, or a bomb: refused before any store.
    assert_eq!(ship(&base, &global, br#"{"pieces":[]}"#.to_vec(), true).await.0, 400);
    assert_eq!(ship(&base, &global, b"not gzip at all".to_vec(), false).await.0, 400);
    let mut not_a_batch = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    not_a_batch.write_all(b"[1, 2, 3]")?;
    assert_eq!(ship(&base, &global, not_a_batch.finish()?, false).await.0, 400);
    // Past the compressed limit the admin answers 413 without reading on, so the client may
    // see its connection closed before the answer.
    let noise: Vec<u8> =
        (0..9 * 1024 * 1024).map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let refused = reqwest::Client::new()
        .post(format!("{base}/api/logShip"))
        .header("Content-Encoding", "gzip")
        .header(ACCESS_TOKEN_HEADER, TOKEN)
        .body(noise)
        .send()
        .await;
    assert!(refused.as_ref().map_or(true, |r| r.status() == 413), "{refused:?}");
    let bomb = one(open_log, &"b".repeat(MAX_SHIP_TEXT + 1));
    assert!(bomb.len() < 200_000, "a small body: {}", bomb.len());
    let (status, reply) = ship(&base, &global, bomb, false).await;
    assert_eq!(status, 413, "{reply}");
    assert!(store.log_pieces(open_log).await?.is_empty(), "nothing stored");

    // Another group's token, or the global token, for a guarded group's log: dropped, counted.
    let other_headers = [(ACCESS_TOKEN_HEADER, other_token.as_str()), (APPNAME_HEADER, "other-app")];
    let (status, reply) = ship(&base, &other_headers, one(guarded_log, "forged\n"), false).await;
    assert_eq!((status, &reply["foreign"], &reply["stored"]), (200, &json!(1), &json!(0)), "{reply}");
    let (status, reply) = ship(&base, &global, one(guarded_log, "forged\n"), false).await;
    assert_eq!((status, &reply["foreign"]), (200, &json!(1)), "{reply}");
    let (status, reply) = ship(&base, &global, one(LogId(987_654), "nowhere\n"), false).await;
    assert_eq!((status, &reply["foreign"]), (200, &json!(1)), "a log that does not exist: {reply}");
    assert!(store.log_pieces(guarded_log).await?.is_empty(), "nothing in the guarded group's log");
    // Its own token for its own log is stored, once however often it is sent.
    let guarded_headers = [(ACCESS_TOKEN_HEADER, guarded_token.as_str()), (APPNAME_HEADER, "guarded-app")];
    for _ in 0..2 {
        let (status, reply) = ship(&base, &guarded_headers, one(guarded_log, "mine\n"), false).await;
        assert_eq!(status, 200, "{reply}");
    }
    let stored = store.log_pieces(guarded_log).await?;
    assert_eq!(stored.iter().map(|p| p.text.as_str()).collect::<Vec<_>>(), vec!["mine\n"]);

    // A flood into one run's log stops at its cap, with a note saying so.
    let line = format!("{}\n", "f".repeat(1023));
    let per_batch = (MAX_SHIP_TEXT - 1024 * 1024) / line.len();
    for stamp in 10..13 {
        let batch = LogBatch { pieces: vec![piece(open_log, stamp, line.repeat(per_batch))] };
        let (status, reply) = ship(&base, &global, encode(&batch), false).await;
        assert_eq!(status, 200, "{reply}");
    }
    let kept = store.log_pieces(open_log).await?;
    let bytes: usize = kept.iter().map(|p| p.text.len()).sum();
    assert!(i64::try_from(bytes)? <= MAX_STORED_LOG_BYTES, "{bytes}");
    assert!(kept.iter().any(|p| p.text.contains("the rest was dropped")), "the cut is said");

    // A normal user of another group cannot search the open group's job's logs.
    env.normal_user("stranger", &[other]).await;
    let stranger = env.login("stranger").await;
    let open_job = store.load_log(open_log).await?.expect("log").job_id;
    let (status, _) = stranger.get(&format!("/api/v1/jobs/{}/log-search?text=f", open_job.0)).await;
    assert_eq!(status, 403);
    env.admin.stop().await
}
