//! Contract checks for shipped job logs (`jobwheel_log_piece`): owners read from the log rows,
//! pieces stored once per stamp whichever admin gets them, text back as written (deflated or
//! not, with the line counts), a job's runs paged newest first, and the pieces deleted with
//! their logs (clear, retention, the job's deletion).

use anyhow::ensure;

use jobwheel_admin::store::{GroupId, LogClear, LogCursor, LogId, LogOwner, NewLog, NewLogPiece};

use crate::store::{Admins, at, job};

fn piece(owner: LogOwner, stamp: i64, text: &str, last: bool) -> NewLogPiece {
    NewLogPiece { owner, stamp, text: text.to_owned(), last }
}

pub(crate) async fn check(Admins { a, b }: &Admins, g: GroupId) -> anyhow::Result<()> {
    let job_id = a.add_job(&job(g, "shipped logs")).await?;
    let mut logs = Vec::new();
    for second in 0..5 {
        let trigger_time = at(&format!("2030-02-01T00:00:0{second}Z"));
        logs.push(a.insert_log(&NewLog { job_group: g, job_id, trigger_time }).await?);
    }
    let owners = b.log_owners(&[logs[0], LogId(i64::MAX)]).await?;
    ensure!(owners.len() == 1, "{owners:?}");
    let owner = owners[0];
    ensure!(owner.job_group == g && owner.job_id == job_id, "{owner:?}");
    ensure!(owner.trigger_ms == at("2030-02-01T00:00:00Z").timestamp_millis(), "{owner:?}");

    // Stored once per stamp, by whichever admin; read in stamp order with their text.
    let long = "a longer line that deflate shrinks well enough\n".repeat(50);
    let first = [piece(owner, 20, "two\nthree\n", false), piece(owner, 10, "one\n", false)];
    ensure!(a.put_log_pieces(&first).await? == 2);
    let again = [piece(owner, 10, "one\n", false), piece(owner, 30, &long, true)];
    ensure!(b.put_log_pieces(&again).await? == 1, "the resent piece is not stored twice");
    let read = a.log_pieces(logs[0]).await?;
    let texts: Vec<&str> = read.iter().map(|p| p.text.as_str()).collect();
    ensure!(texts == ["one\n", "two\nthree\n", long.as_str()], "{texts:?}");
    let counts: Vec<i32> = read.iter().map(|p| p.line_count).collect();
    ensure!(counts == [1, 2, 50], "{counts:?}");
    ensure!(read.iter().map(|p| p.last).collect::<Vec<_>>() == [false, false, true]);
    let bytes = b.log_piece_bytes(&[logs[0], logs[1]]).await?;
    let expected = i64::try_from(4 + 10 + long.len())?;
    ensure!(bytes == [(logs[0], expected)], "{bytes:?}");

    // A job's pieces, newest log first (each log's last stamp first), a page at a time, within
    // the time range.
    for (n, log) in logs.iter().enumerate().skip(1) {
        let owner = b.log_owners(&[*log]).await?[0];
        ensure!(a.put_log_pieces(&[piece(owner, 1, &format!("run {n}\n"), true)]).await? == 1);
    }
    let order = |rows: &[jobwheel_admin::store::LogPieceRow]| -> Vec<(LogId, i64)> {
        rows.iter().map(|p| (p.log_id, p.stamp)).collect()
    };
    let (from, to) = (at("2030-02-01T00:00:01Z").timestamp_millis(), i64::MAX);
    let page = b.job_log_pieces(job_id, from, to, None, 2).await?;
    ensure!(order(&page) == [(logs[4], 1), (logs[3], 1)], "{page:?}");
    let after = LogCursor { log_time: page[1].log_time, log_id: page[1].log_id };
    let next = b.job_log_pieces(job_id, from, to, Some(after), 10).await?;
    ensure!(order(&next) == [(logs[2], 1), (logs[1], 1)], "{next:?}");
    let past = LogCursor { log_time: next[1].log_time, log_id: next[1].log_id };
    ensure!(b.job_log_pieces(job_id, from, to, Some(past), 10).await?.is_empty());
    let all = b.job_log_pieces(job_id, 0, to, None, 10).await?;
    ensure!(order(&all)[4..] == [(logs[0], 30), (logs[0], 20), (logs[0], 10)], "last stamp first: {all:?}");

    // Deleted with their logs: a clear by time, then the job.
    let clear = LogClear {
        job_group: Some(g),
        job_id: Some(job_id),
        trigger_before: Some(at("2030-02-01T00:00:01Z")),
        keep_newest: 0,
    };
    ensure!(a.clear_logs(&clear).await? == 2);
    ensure!(b.log_pieces(logs[0]).await?.is_empty() && b.log_pieces(logs[1]).await?.is_empty());
    ensure!(!b.log_pieces(logs[2]).await?.is_empty());
    ensure!(a.delete_job(job_id).await?);
    ensure!(b.log_pieces(logs[2]).await?.is_empty(), "gone with the job");
    Ok(())
}

/// A search across more pieces than one read takes, with a log cut at the read's end: every
/// line found once, numbered within its run, the pages chained by their cursors.
#[tokio::test]
async fn a_search_pages_through_reads_and_cut_logs() -> anyhow::Result<()> {
    use jobwheel_admin::job_logs::{LogSearch, SearchCursor, search};
    let dir = tempfile::tempdir()?;
    let store = jobwheel_admin::store::connect(&format!("sqlite://{}/j.db", dir.path().display())).await?;
    let g = crate::store::group(&*store, "search-app").await?;
    let job_id = store.add_job(&job(g, "searched")).await?;
    // The oldest run has three pieces, 1 999 newer runs one each: more pieces than the reads
    // (250, 500, 1 000, then 2 000 at a time) take, each read ending on a run it cannot know
    // is whole, which the next read takes again.
    let mut pieces = Vec::new();
    for n in 0..2000 {
        let trigger_time = at("2030-03-01T00:00:00Z") + chrono::Duration::seconds(n);
        let log = store.insert_log(&NewLog { job_group: g, job_id, trigger_time }).await?;
        let owner = store.log_owners(&[log]).await?[0];
        let count = if n == 0 { 3 } else { 1 };
        for stamp in 0..count {
            pieces.push(piece(owner, stamp, &format!("plain line\nneedle {n}.{stamp}\n"), false));
        }
    }
    store.put_log_pieces(&pieces).await?;
    let mut request = LogSearch {
        job: job_id,
        text: "NEEDLE".into(),
        from_ms: 0,
        to_ms: i64::MAX,
        limit: 1000,
        after: None,
    };
    let mut found = Vec::new();
    loop {
        let page = search(&*store, &request).await?;
        found.extend(page.matches);
        let Some(next) = page.next else { break };
        request.after = Some(SearchCursor::parse(&next).expect("a cursor"));
    }
    ensure!(found.len() == 2002, "every needle once: {}", found.len());
    let oldest: Vec<(u32, &str)> =
        found.iter().rev().take(3).rev().map(|m| (m.line_num, m.line.as_str())).collect();
    ensure!(oldest == [(2, "needle 0.0"), (4, "needle 0.1"), (6, "needle 0.2")], "{oldest:?}");
    ensure!(found[0].line == "needle 1999.0" && found[0].line_num == 2, "newest first: {:?}", found[0]);
    Ok(())
}
