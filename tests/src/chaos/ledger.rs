//! The chaos suite's books: what the database says became of every scheduled second (ring
//! claims and log rows), set against what the executors' own job logs say they ran and
//! finished. Any loss or double is an error naming the first case; otherwise the counts.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::outcomes::{ClaimOutcome, claims};
use anyhow::ensure;
use jobwheel_admin::store::JobId;
use sqlx::Row as _;

/// The scheduled seconds under test, and when the database was down.
pub(crate) struct Window {
    pub(crate) from_ms: i64,
    pub(crate) to_ms: i64,
    pub(crate) outage: Option<(i64, i64)>,
    /// When the only admin was down (SIGKILL to ready again), in a one-admin run: no one
    /// schedules then, and on its return the misfire rule skips what is late (upstream fires a
    /// job that is at most 5 s late once and moves on, so those seconds leave no trace).
    pub(crate) scheduler_gaps: Vec<(i64, i64)>,
}

impl Window {
    /// Whether a second may have been skipped because the database was down: the misfire rule
    /// skips what is more than 5 s late when the schedulers reconnect.
    fn in_outage(&self, second_ms: i64) -> bool {
        self.outage.is_some_and(|(from, to)| second_ms >= from - 1_000 && second_ms <= to + 10_000)
    }

    /// Whether the second fell while the only admin was down (or within 10 s of its return,
    /// as for the database outage: its scheduler first recovers claims and pre-reads).
    fn in_scheduler_gap(&self, second_ms: i64) -> bool {
        self.scheduler_gaps.iter().any(|(from, to)| second_ms >= from - 1_000 && second_ms <= to + 10_000)
    }
}

/// Upstream's texts (zh_CN) for runs the admin closed itself, and jobwheel's for a run whose
/// executor came back on its address without it (its text starts with upstream's lost text).
const LOST_TEXT: &str = "任务结果丢失";
const RESTART_TEXT: &str = "已重启";
const STALLED_TEXT: &str = "调度中断";

/// One log row.
struct LogRow {
    job_id: i64,
    trigger_code: i64,
    handle_code: i64,
    handle_msg: String,
    trigger_msg: String,
}

/// The start of the admin's missed-fire text (zh_CN, `engine/missed.rs`): `调度过期：{count} 次…`.
const MISSED_TEXT: &str = "调度过期：";

impl LogRow {
    /// How many fire times this row records as skipped by the misfire rule (0 for a run).
    fn missed_fires(&self) -> usize {
        self.trigger_msg
            .split(MISSED_TEXT)
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|count| count.trim().parse().ok())
            .unwrap_or(0)
    }
}

async fn load_logs(url: &str) -> anyhow::Result<HashMap<i64, LogRow>> {
    let sql = |int: &str| {
        format!(
            "SELECT CAST(id AS {int}), CAST(trigger_code AS {int}), CAST(handle_code AS {int}), \
             COALESCE(handle_msg, ''), CAST(job_id AS {int}), COALESCE(trigger_msg, '') FROM xxl_job_log"
        )
    };
    macro_rules! fetch {
        ($pool:ty, $int:literal) => {{
            let pool = <$pool>::connect(url).await?;
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql($int))).fetch_all(&pool).await?;
            pool.close().await;
            let mut logs = HashMap::new();
            for row in rows {
                let log = LogRow {
                    trigger_code: row.try_get(1)?,
                    handle_code: row.try_get(2)?,
                    handle_msg: row.try_get(3)?,
                    job_id: row.try_get(4)?,
                    trigger_msg: row.try_get(5)?,
                };
                logs.insert(row.try_get::<i64, _>(0)?, log);
            }
            logs
        }};
    }
    Ok(match url.split(':').next().unwrap_or_default() {
        "sqlite" => fetch!(sqlx::SqlitePool, "BIGINT"),
        "mysql" => fetch!(sqlx::MySqlPool, "SIGNED"),
        _ => fetch!(sqlx::PgPool, "BIGINT"),
    })
}

/// Waits (bounded) until no claim of the window is pending and every run is closed.
pub(crate) async fn settle(url: &str, window: &Window) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let pending =
            claims(url, window.from_ms, window.to_ms).await?.iter().filter(|c| c.status == 0).count();
        let open = load_logs(url)
            .await?
            .values()
            .filter(|l| (l.trigger_code == 0 || l.trigger_code == 200) && l.handle_code == 0)
            .count();
        if (pending == 0 && open == 0) || tokio::time::Instant::now() > deadline {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// What an executor's job log says about one run: how often it started, and the result it
/// finished with (the end line is written only once the result is journaled).
#[derive(Default)]
struct Ran {
    starts: usize,
    finished: Option<i64>,
    /// The job log's last callback note (`callback finish` or `callback fail, …`), for a
    /// failure's report.
    callback: Option<String>,
}

/// How often each log id started at the executors, from their job logs.
pub(crate) fn starts(dirs: &[PathBuf]) -> anyhow::Result<HashMap<i64, usize>> {
    Ok(executor_runs(dirs)?.into_iter().map(|(log, ran)| (log, ran.starts)).collect())
}

fn executor_runs(dirs: &[PathBuf]) -> anyhow::Result<HashMap<i64, Ran>> {
    let mut runs: HashMap<i64, Ran> = HashMap::new();
    for root in dirs {
        let Ok(days) = std::fs::read_dir(root) else { continue };
        for day in days.filter_map(Result::ok).filter(|d| d.path().is_dir()) {
            for file in std::fs::read_dir(day.path())?.filter_map(Result::ok) {
                read_run(&file.path(), &mut runs);
            }
        }
    }
    Ok(runs)
}

fn read_run(path: &Path, runs: &mut HashMap<i64, Ran>) {
    let Some(log_id) = path.file_stem().and_then(|s| s.to_str()).and_then(|s| s.parse().ok()) else { return };
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let ran = runs.entry(log_id).or_default();
    ran.starts += text.matches("xxl-job job execute start").count();
    if let Some(rest) = text.split("Result: handleCode=").nth(1) {
        ran.finished = rest.split(',').next().and_then(|code| code.trim().parse().ok());
    }
    if let Some(note) =
        text.rsplit("xxl-job job callback ").next().filter(|_| text.contains("xxl-job job callback "))
    {
        ran.callback = Some(note.chars().take(80).collect());
    }
}

/// The books, once they balance.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    seconds: usize,
    fired: usize,
    shards: usize,
    skipped_shards: usize,
    skipped_by_misfire: usize,
    /// Which seconds of the window those were.
    misfire_seconds: BTreeSet<i64>,
    skipped_while_database_down: usize,
    /// Seconds without a claim while the only admin was down, or recorded by it as missed
    /// fires.
    skipped_while_admin_down: usize,
    succeeded: usize,
    trigger_failed: usize,
    closed_after_restart: usize,
    closed_as_lost: usize,
    closed_as_stalled: usize,
    other_failures: usize,
    finished_at_executors: usize,
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "scheduled job-seconds: {}", self.seconds)?;
        writeln!(f, "  fired exactly once: {} (broadcast shards among them: {})", self.fired, self.shards)?;
        writeln!(
            f,
            "  skipped by the misfire rule after recovery: {} (and {} single broadcast shards)",
            self.skipped_by_misfire, self.skipped_shards
        )?;
        if !self.misfire_seconds.is_empty() {
            writeln!(f, "    at window seconds {:?}", self.misfire_seconds)?;
        }
        writeln!(f, "  skipped while the database was down: {}", self.skipped_while_database_down)?;
        writeln!(
            f,
            "  skipped while the only admin was down (or recorded by it as missed fires): {}",
            self.skipped_while_admin_down
        )?;
        writeln!(
            f,
            "runs: {} succeeded, {} trigger failed (no live executor)",
            self.succeeded, self.trigger_failed
        )?;
        writeln!(
            f,
            "  closed when their executor came back on its address without them: {}",
            self.closed_after_restart
        )?;
        writeln!(
            f,
            "  closed by the lost-job monitor: {} lost, {} stalled",
            self.closed_as_lost, self.closed_as_stalled
        )?;
        writeln!(f, "  other failures: {}", self.other_failures)?;
        write!(
            f,
            "results finished at executors: {}, each recorded exactly once; lost 0, doubled 0, runs left open 0",
            self.finished_at_executors
        )
    }
}

/// Checks the books; the counts, or the first loss or double.
pub(crate) async fn account(
    url: &str,
    jobs: &[JobId],
    window: &Window,
    executor_dirs: &[PathBuf],
) -> anyhow::Result<Counts> {
    // The listed jobs' triggers only: a fire known by its log row alone (its claim deleted when
    // it was taken) is found among all the window's log rows, workflow nodes' included.
    let listed: BTreeSet<i64> = jobs.iter().map(|j| i64::from(j.0)).collect();
    let outcomes: Vec<ClaimOutcome> = claims(url, window.from_ms, window.to_ms)
        .await?
        .into_iter()
        .filter(|c| listed.contains(&c.job_id))
        .collect();
    let logs = load_logs(url).await?;
    let runs = executor_runs(executor_dirs)?;
    let mut per_second: BTreeMap<(i64, i64), Vec<&ClaimOutcome>> = BTreeMap::new();
    for claim in &outcomes {
        per_second.entry((claim.job_id, claim.fire_ms)).or_default().push(claim);
    }
    let mut counts = Counts::default();
    let (mut lost, mut doubled) = (Vec::new(), Vec::new());
    for job in jobs.iter().map(|j| i64::from(j.0)) {
        for second in (window.from_ms / 1000..window.to_ms / 1000).map(|s| s * 1000) {
            counts.seconds += 1;
            let all = per_second.get(&(job, second)).map_or(&[][..], Vec::as_slice);
            let fired: Vec<&&ClaimOutcome> = all.iter().filter(|c| c.status == 1).collect();
            if fired.is_empty() {
                if all.iter().any(|c| c.status == 2) {
                    counts.skipped_by_misfire += 1;
                    counts.misfire_seconds.insert((second - window.from_ms) / 1000);
                } else if window.in_outage(second) {
                    counts.skipped_while_database_down += 1;
                } else if window.in_scheduler_gap(second) {
                    counts.skipped_while_admin_down += 1;
                } else {
                    lost.push((job, second));
                }
                continue;
            }
            // A broadcast split into shard claims: together (fired or, when recovered too late,
            // discarded by the misfire rule) they must be shards 0..n of n, each once.
            let split: Vec<(&str, i64)> =
                all.iter().filter_map(|c| Some((c.shard.as_deref()?, c.status))).collect();
            let whole = if split.is_empty() {
                fired.len() == 1
            } else {
                let total = split.len();
                let expected: BTreeSet<String> = (0..total).map(|i| format!("{i}/{total}")).collect();
                let got: BTreeSet<String> = split.iter().map(|(s, _)| (*s).to_owned()).collect();
                let discarded = split.iter().filter(|(_, status)| *status == 2).count();
                counts.shards += total - discarded;
                counts.skipped_shards += discarded;
                got == expected && split.iter().all(|(_, status)| *status != 0)
            };
            if whole {
                counts.fired += 1;
            } else {
                let claims: Vec<(i64, Option<&str>)> =
                    all.iter().map(|c| (c.status, c.shard.as_deref())).collect();
                doubled.push((job, second, claims));
            }
        }
    }
    // A second without any claim is lost unless the admin recorded it as a missed fire (one
    // row per skip, with the count of fire times it covers): per job, the recorded count must
    // cover every such second.
    let mut recorded: HashMap<i64, usize> = HashMap::new();
    for log in logs.values() {
        *recorded.entry(log.job_id).or_default() += log.missed_fires();
    }
    let mut unrecorded = Vec::new();
    for (job, seconds) in lost.iter().fold(BTreeMap::<i64, Vec<i64>>::new(), |mut by_job, (job, second)| {
        by_job.entry(*job).or_default().push(*second);
        by_job
    }) {
        if seconds.len() <= recorded.get(&job).copied().unwrap_or(0) {
            counts.skipped_while_admin_down += seconds.len();
        } else {
            unrecorded.extend(seconds.into_iter().map(|second| (job, second)));
        }
    }
    let lost = unrecorded;
    let lost_seconds: BTreeSet<i64> = lost.iter().map(|(_, s)| (s - window.from_ms) / 1000).collect();
    // What the database holds for the first lost second: no claim at all (never pre-read), or
    // claims left pending (status 0: taken by an admin that died and never recovered).
    let first_claims: Vec<(i64, Option<&str>)> = lost
        .first()
        .and_then(|key| per_second.get(key))
        .map(|all| all.iter().map(|c| (c.status, c.shard.as_deref())).collect())
        .unwrap_or_default();
    ensure!(
        lost.is_empty(),
        "{} scheduled seconds never fired (first: job and second {:?}, its claims as (status, shard) \
         {first_claims:?}; window seconds {lost_seconds:?}, outage {:?})",
        lost.len(),
        lost.first(),
        window.outage.map(|(from, to)| ((from - window.from_ms) / 1000, (to - window.from_ms) / 1000))
    );
    ensure!(
        doubled.is_empty(),
        "{} seconds fired twice or with shards missing (first: job, second, claims as (status, shard) {:?})",
        doubled.len(),
        doubled.first()
    );

    let (mut unclosed, mut results_lost, mut runs_doubled) = (Vec::new(), Vec::new(), Vec::new());
    for log_id in outcomes.iter().filter(|c| c.status == 1).filter_map(|c| c.log_id) {
        let Some(log) = logs.get(&log_id) else {
            unclosed.push(log_id);
            continue;
        };
        let ran = runs.get(&log_id);
        if ran.is_some_and(|r| r.starts > 1) {
            runs_doubled.push(log_id);
        }
        if let Some(code) = ran.and_then(|r| r.finished) {
            counts.finished_at_executors += 1;
            let closed_by_admin = log.handle_msg.contains(LOST_TEXT) || log.handle_msg.contains(STALLED_TEXT);
            if log.handle_code != code || closed_by_admin {
                let note =
                    ran.and_then(|r| r.callback.clone()).unwrap_or_else(|| "no callback note".to_owned());
                let closed: String = log.handle_msg.chars().take(40).collect();
                results_lost.push((log_id, code, log.handle_code, log.trigger_code, closed, note));
            }
        }
        match (log.trigger_code, log.handle_code) {
            (0 | 200, 0) => unclosed.push(log_id),
            (_, 200) => counts.succeeded += 1,
            (_, _) if log.handle_msg.contains(RESTART_TEXT) => counts.closed_after_restart += 1,
            (_, _) if log.handle_msg.contains(LOST_TEXT) => counts.closed_as_lost += 1,
            (_, _) if log.handle_msg.contains(STALLED_TEXT) => counts.closed_as_stalled += 1,
            (0 | 200, _) => counts.other_failures += 1,
            (_, _) => counts.trigger_failed += 1,
        }
    }
    ensure!(
        results_lost.is_empty(),
        "{} finished results not recorded as finished (first: log, executor code, stored code, trigger code, stored message, the executor's last callback note {:?})",
        results_lost.len(),
        results_lost.first()
    );
    ensure!(
        runs_doubled.is_empty(),
        "{} runs executed twice (first: log {:?})",
        runs_doubled.len(),
        runs_doubled.first()
    );
    ensure!(unclosed.is_empty(), "{} runs left open (first: log {:?})", unclosed.len(), unclosed.first());
    Ok(counts)
}
