//! `bench-logs`: the admin's side of job logs kept by the admin (docs/benchmarks.md, "Job logs
//! kept by the admin").
//!
//! Fills a database (`--db`, SQLite file or PostgreSQL/MySQL URL) with one job's shipped logs —
//! `--runs` runs of `--lines-per-run` lines, stored through the store as the admin stores a
//! shipped batch — then times `job_logs::search` for a line that is in one run only (the whole
//! range is scanned), a text in every run (the first page fills at once) and a text in no line;
//! and reads one run of `--long-run` lines page by page as the rolling log does, from the
//! database and, for comparison, from a file with the executor's `/log` paging.

#![allow(clippy::print_stdout, reason = "the benchmark's result is its output")]

use std::time::{Duration, Instant};

use anyhow::Context as _;
use chrono::Utc;
use clap::Parser;
use jobwheel_admin::job_logs::{LogSearch, page, search};
use jobwheel_admin::store::{self, GroupId, JobId, LogId, LogOwner, NewLog, NewLogPiece, Store};

#[derive(Debug, Parser)]
struct Args {
    /// `sqlite://…` (created), `postgres://…` or `mysql://…` (emptied of this job's rows first).
    #[arg(long)]
    db: String,
    #[arg(long, default_value_t = 100_000)]
    runs: usize,
    #[arg(long, default_value_t = 10)]
    lines_per_run: usize,
    /// Lines of the one long run read page by page.
    #[arg(long, default_value_t = 100_000)]
    long_run: usize,
    /// Lines per shipped piece of the long run (a 200 ms shipment of a busy run).
    #[arg(long, default_value_t = 2_000)]
    piece_lines: usize,
}

/// A log line of the size and shape runs write: a stamp, the source, a message.
fn line(run: usize, n: usize) -> String {
    format!(
        "2026-12-06 21:00:00 [JobThread-1] run {run} step {n}: processed 250 records from batch 8f3a2c in 12 ms\n"
    )
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let store = store::connect(&args.db).await.context("connecting")?;
    let group = jobwheel_tests::fixtures::auto_group(&*store, "bench-logs").await?;
    let job = store.add_job(&jobwheel_tests::fixtures::bean_job(group, "bench-logs", "noop")).await?;
    let fill = Instant::now();
    let base_ms = Utc::now().timestamp_millis() - i64::try_from(args.runs)? * 1000;
    let mut batch = Vec::new();
    let mut needle_run = None;
    for run in 0..args.runs {
        let trigger_time =
            chrono::DateTime::from_timestamp_millis(base_ms + i64::try_from(run)? * 1000).context("time")?;
        let log_id = store.insert_log(&NewLog { job_group: group, job_id: job, trigger_time }).await?;
        let owner = owner(group, job, log_id, trigger_time.timestamp_millis());
        let mut text: String = (0..args.lines_per_run).map(|n| line(run, n)).collect();
        if run == args.runs / 3 {
            text.push_str("2026-12-06 21:00:00 [JobThread-1] checksum mismatch in batch 77d1 (needle)\n");
            needle_run = Some(log_id);
        }
        batch.push(NewLogPiece { owner, stamp: 1, text, last: true });
        if batch.len() == 1000 {
            store.put_log_pieces(&batch).await?;
            batch.clear();
        }
    }
    store.put_log_pieces(&batch).await?;
    let lines = args.runs * args.lines_per_run;
    println!("filled {lines} lines in {} runs in {:.1} s", args.runs, fill.elapsed().as_secs_f64());
    if args.db.starts_with("postgres") {
        // What autovacuum does within a minute of a bulk load: without statistics the planner
        // takes the freshly filled table for empty and sorts instead of reading the index.
        let pool = sqlx::PgPool::connect(&args.db).await?;
        sqlx::query("ANALYZE jobwheel_log_piece").execute(&pool).await?;
        pool.close().await;
        println!("analyzed");
    }

    for (what, text, limit) in [
        ("a line in one run (the whole range scanned)", "CHECKSUM MISMATCH", 100),
        ("a text in every run (first page of 100)", "processed 250", 100),
        ("a text in no line", "no such text anywhere", 100),
    ] {
        let request =
            LogSearch { job, text: text.to_owned(), from_ms: 0, to_ms: i64::MAX, limit, after: None };
        let mut times = Vec::new();
        let mut found = None;
        for _ in 0..5 {
            let started = Instant::now();
            let page = search(&*store, &request).await?;
            times.push(started.elapsed());
            found = Some(page);
        }
        let found = found.context("searched")?;
        times.sort_unstable();
        println!(
            "search {what}: median {:.0} ms, max {:.0} ms; {} matches, {} runs and {} lines scanned, next {}",
            ms(times[2]),
            ms(times[4]),
            found.matches.len(),
            found.scanned_runs,
            found.scanned_lines,
            found.next.is_some()
        );
        if text == "CHECKSUM MISMATCH" {
            anyhow::ensure!(found.matches.first().map(|m| m.log_id) == needle_run.map(|l| l.0), "found");
        }
    }

    read_long_run(&*store, group, job, &args).await?;
    store.delete_job(job).await?;
    store.delete_group(group).await?;
    Ok(())
}

fn owner(job_group: GroupId, job_id: JobId, log_id: LogId, trigger_ms: i64) -> LogOwner {
    LogOwner { log_id, job_group, job_id, trigger_ms }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One run of `--long-run` lines read page by page (1 MiB a page), from the database as the
/// admin's rolling log reads it, and from a file as the executor's `/log` does.
async fn read_long_run(store: &dyn Store, group: GroupId, job: JobId, args: &Args) -> anyhow::Result<()> {
    let trigger_time = Utc::now();
    let log_id = store.insert_log(&NewLog { job_group: group, job_id: job, trigger_time }).await?;
    let owner = owner(group, job, log_id, trigger_time.timestamp_millis());
    let text: String = (0..args.long_run).map(|n| line(0, n)).collect();
    let mut pieces = Vec::new();
    let all: Vec<&str> = text.split_inclusive('\n').collect();
    for (n, chunk) in all.chunks(args.piece_lines).enumerate() {
        let stamp = i64::try_from(n)?;
        pieces.push(NewLogPiece { owner, stamp, text: chunk.concat(), last: false });
    }
    store.put_log_pieces(&pieces).await?;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("run.log");
    std::fs::write(&file, &text)?;

    for _ in 0..3 {
        let started = Instant::now();
        let (mut from, mut read) = (1, 0usize);
        loop {
            let stored = store.log_pieces(log_id).await?;
            let result = page(&stored, from, true);
            if result.log_content.is_empty() {
                break;
            }
            read += result.log_content.len();
            from = result.to_line_num + 1;
        }
        let admin = started.elapsed();
        let started = Instant::now();
        let (mut from, mut file_read) = (1usize, 0usize);
        loop {
            let (content, to) = file_page(&file, from).await?;
            if content.is_empty() {
                break;
            }
            file_read += content.len();
            from = to + 1;
        }
        let from_file = started.elapsed();
        anyhow::ensure!(read == text.len() && file_read == text.len(), "whole log read");
        println!(
            "read a run of {} lines ({:.1} MiB) page by page: from the database {:.0} ms, from a file {:.0} ms",
            args.long_run,
            text.len() as f64 / 1_048_576.0,
            ms(admin),
            ms(from_file)
        );
    }
    Ok(())
}

/// One page of a file as the executor's `/log` reads it (`executor/src/joblog/read.rs`): the
/// whole file, lines from `from`, at most 1 MiB.
async fn file_page(path: &std::path::Path, from: usize) -> anyhow::Result<(String, usize)> {
    let bytes = tokio::fs::read(path).await?;
    let text = String::from_utf8_lossy(&bytes);
    let (mut content, mut last, mut total) = (String::new(), 0, 0);
    for (index, line) in text.lines().enumerate() {
        total = index + 1;
        if total < from || content.len() >= 1024 * 1024 {
            continue;
        }
        content.push_str(line);
        content.push('\n');
        last = total;
    }
    Ok((content, if last == 0 { total } else { last }))
}
