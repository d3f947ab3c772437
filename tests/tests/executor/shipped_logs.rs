//! `--job-logs admin`: a run's lines go to the admin, not to a file. While the admin refuses
//! them they wait in the spool on disk, and once it answers they all arrive, in order, once —
//! the run's whole log, closed after its result was delivered.

use std::collections::HashSet;
use std::time::Duration;

use jobwheel_executor::{Handlers, JobContext, JobLogs};
use jobwheel_tests::{trigger, wait_until};

use crate::support::{SETTLE, rig};

const LINES: usize = 400;

#[tokio::test]
async fn lines_wait_in_the_spool_while_the_admin_refuses_them_and_arrive_once_in_order() {
    let mut handlers = Handlers::new();
    handlers.register("many", |ctx: JobContext| async move {
        for n in 1..=LINES {
            ctx.log(format!("shipped line {n}"));
        }
        Ok(())
    });
    let rig = rig(handlers, |config| config.job_logs = JobLogs::Admin).await;
    let spool = rig.dir.path().join("logship");
    rig.admin.set_failing(true);
    rig.executor.run(trigger(1, 501, "BEAN", "many", "")).await;
    wait_until(SETTLE, "a spooled batch", || {
        std::fs::read_dir(&spool).is_ok_and(|mut files| {
            files.any(|f| f.is_ok_and(|f| f.path().extension().is_some_and(|x| x == "gz")))
        })
    })
    .await;
    assert!(rig.admin.recorded().log_pieces.is_empty(), "nothing reached the refusing admin");

    rig.admin.set_failing(false);
    // Retries back off to 30 s at most; the admin refused for about a second.
    rig.admin
        .wait_for(Duration::from_secs(40), "the closed log", |r| {
            r.log_pieces.iter().any(|p| p.log_id == 501 && p.last)
        })
        .await;
    let pieces: Vec<_> = rig.admin.recorded().log_pieces.into_iter().filter(|p| p.log_id == 501).collect();
    let mut stamps = HashSet::new();
    let mut text = String::new();
    let mut ordered = pieces.clone();
    ordered.sort_by_key(|p| p.stamp);
    for piece in &ordered {
        if stamps.insert(piece.stamp) {
            text.push_str(&piece.text);
        }
    }
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("shipped line")).collect();
    assert_eq!(lines.len(), LINES, "every line once");
    for (n, line) in lines.iter().enumerate() {
        assert!(line.ends_with(&format!("shipped line {}", n + 1)), "in order: {line}");
    }
    assert!(text.contains("execute end") && text.contains("callback finish"), "{text}");
    wait_until(SETTLE, "the spool emptied", || {
        std::fs::read_dir(&spool).is_ok_and(|files| {
            files.filter_map(Result::ok).all(|f| f.file_name().to_string_lossy().starts_with('.'))
        })
    })
    .await;
    // No job log file: only the spools and journals under the log path.
    let day = chrono::Local::now().format("%Y-%m-%d").to_string();
    assert!(!rig.dir.path().join(day).exists(), "no date directory of job log files");
}
