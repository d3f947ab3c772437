//! What a benchmark run stands on: the database with its jobs (written through the admin's own
//! store), in-process executors with a no-op handler that records when each run arrived, and
//! the `jobwheel-admin` process under test.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, bail};
use jobwheel_admin::store::{Group, GroupId, Job, JobId, Store};
use jobwheel_executor::{Handlers, JobContext};
use jobwheel_tests::{TOKEN, TestExecutor, test_config};
use tokio::process::{Child, Command};

/// The management API token of the benchmark's user (manual-trigger flood).
pub(crate) const API_TOKEN: &str = "bench-api-token-0123456789abcdef";
/// The BEAN handler every benchmark job runs.
pub(crate) const HANDLER: &str = "benchNoop";

/// One run as it started on an executor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arrival {
    pub(crate) log_id: i64,
    pub(crate) job_id: i32,
    /// The trigger time the admin sent (`logDateTime`, epoch ms): the scheduled second.
    pub(crate) scheduled_ms: i64,
    /// When the run started here, epoch ms.
    pub(crate) at_ms: i64,
}

/// Every run's [`Arrival`], in order.
pub(crate) type Arrivals = Arc<Mutex<Vec<Arrival>>>;

/// How the benchmark's jobs are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Mode {
    /// FIX_RATE every second: the admin must fire `--jobs` triggers per second.
    FixRate,
    /// CRON `{i % P}/{P} * * * * ?`: each job every `--cron-period` seconds, spread evenly.
    Cron,
    /// Stopped jobs triggered through `POST /api/v1/jobs/{id}/trigger` as fast as the API allows.
    Manual,
}

pub(crate) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Starts `count` executors in this process reporting to `admin_url`; they and the shared
/// arrival record.
pub(crate) async fn executors(
    count: usize,
    log_dir: &Path,
    admin_urls: &[String],
    dial_out: bool,
) -> (Vec<TestExecutor>, Arrivals) {
    let arrivals: Arrivals = Arc::default();
    let mut started = Vec::with_capacity(count);
    for n in 0..count {
        let mut config = test_config(&log_dir.join(format!("executor-{n}")));
        config.max_queue = 1_000_000;
        if dial_out {
            config.dial_out = true;
            config.address = Some(dial_address(n));
        }
        // Executors call back the first admin that answers: rotating the list spreads the
        // callbacks over the admins, as executors configured in different orders would.
        let mut admins = admin_urls.to_vec();
        admins.rotate_left(n % admin_urls.len().max(1));
        config.admin_addresses = admins;
        let mut handlers = Handlers::new();
        let record = Arc::clone(&arrivals);
        handlers.register(HANDLER, move |ctx: JobContext| {
            let record = Arc::clone(&record);
            async move {
                let arrival = Arrival {
                    log_id: ctx.log_id(),
                    job_id: ctx.job_id(),
                    scheduled_ms: ctx.log_date_time(),
                    at_ms: now_ms(),
                };
                record.lock().expect("arrivals").push(arrival);
                Ok(())
            }
        });
        started.push(TestExecutor::start(config, handlers).await);
    }
    (started, arrivals)
}

/// The address of in-process executor `n` in dial-out mode (its AppName is the test config's).
pub(crate) fn dial_address(n: usize) -> String {
    jobwheel_protocol::dial::dial_address("test-app", &format!("bench-{n}"))
}

/// Fills an empty database: one group on `addresses`, `jobs` stopped jobs of `mode` running
/// `handler`, an administrator and its API token; the jobs' ids, contiguous and in order (job
/// `i` has id `ids[0] + i`, which [`start_jobs`] relies on).
/// The benchmark's executor group `bench` on `addresses` (a manual list), and the API
/// administrator whose token the benchmark calls with.
pub(crate) async fn bench_group(store: &dyn Store, addresses: &[String]) -> anyhow::Result<GroupId> {
    let group = store
        .add_group(&Group {
            app_name: "bench".to_owned(),
            title: "bench".to_owned(),
            address_type: 1,
            address_list: Some(addresses.join(",")),
            update_time: None,
        })
        .await?;
    jobwheel_tests::fixtures::api_administrator(store, "bench", API_TOKEN).await?;
    Ok(group)
}

pub(crate) async fn database(
    store: &dyn Store,
    addresses: &[String],
    handler: &str,
    jobs: usize,
    mode: Mode,
    cron_period: u32,
) -> anyhow::Result<Vec<JobId>> {
    if store.list_groups().await?.iter().any(|g| g.group.app_name == "bench") {
        bail!("the database already holds a benchmark; point --database-url at an empty one");
    }
    let group = bench_group(store, addresses).await?;
    let mut ids = Vec::with_capacity(jobs);
    for i in 0..jobs {
        ids.push(store.add_job(&job(group, handler, i, mode, cron_period)).await?);
    }
    let contiguous = ids.windows(2).all(|pair| pair[1].0 == pair[0].0 + 1);
    anyhow::ensure!(contiguous, "the database numbered the jobs with gaps (auto-increment step > 1?)");
    Ok(ids)
}

/// The URL the set-up writes the jobs through: on PostgreSQL without waiting for each commit's
/// flush (`synchronous_commit=off`, this session only), which turns a million single-job
/// transactions from half an hour into minutes. The admin under test connects with `url` as
/// given, so what is measured keeps its durable commits.
pub(crate) fn writing_url(url: &str) -> String {
    if url.starts_with("postgres") {
        let joint = if url.contains('?') { '&' } else { '?' };
        format!("{url}{joint}options=-c%20synchronous_commit%3Doff")
    } else {
        url.to_owned()
    }
}

/// A stopped job (`trigger_next_time` 0): [`start_jobs`] starts them all at once when they are
/// written, so a setup that takes minutes (a million jobs) does not start the admin into a
/// backlog of fire times that passed while it wrote.
fn job(group: GroupId, handler: &str, i: usize, mode: Mode, cron_period: u32) -> Job {
    let (schedule_type, conf) = match mode {
        Mode::FixRate => ("FIX_RATE", "1".to_owned()),
        Mode::Cron => {
            ("CRON", cron_conf(i64::try_from(i).unwrap_or(0) % i64::from(cron_period), cron_period))
        }
        Mode::Manual => ("NONE", String::new()),
    };
    let mut job = jobwheel_tests::fixtures::bean_job(group, &format!("bench job {i}"), handler);
    job.schedule_type = schedule_type.into();
    job.schedule_conf = (!conf.is_empty()).then_some(conf);
    job.executor_route_strategy = Some("ROUND".into());
    job.trigger_status = 0;
    job.trigger_next_time = 0;
    job
}

/// Starts the jobs `ids` (as [`database`] wrote them) in one statement, their first fires spread
/// over the second after `first_fire_ms` (FIX_RATE) or over the cron period, as jobs started at
/// random times are. Job `i`'s CRON fire is the first whole second at or after `first_fire_ms`
/// whose offset in the period is `i % period`: the period divides 60 or 3600, and whole hours
/// are whole multiples of 3600 s since the epoch in UTC, so the epoch second modulo it is the
/// offset. Manual jobs stay stopped.
pub(crate) async fn start_jobs(
    url: &str,
    ids: &[JobId],
    mode: Mode,
    cron_period: u32,
    first_fire_ms: i64,
) -> anyhow::Result<()> {
    let (Some(first), Some(last)) = (ids.first(), ids.last()) else { return Ok(()) };
    let (first, last) = (first.0, last.0);
    let next = match mode {
        Mode::Manual => return Ok(()),
        Mode::FixRate => {
            let div = if url.starts_with("mysql:") { "DIV" } else { "/" };
            format!("{first_fire_ms} + ((id - {first}) * 1000) {div} {}", ids.len())
        }
        Mode::Cron => {
            let (base, period) = ((first_fire_ms + 999) / 1000, i64::from(cron_period));
            let shift = base.rem_euclid(period);
            // The epoch milliseconds as one literal, too big for a 32-bit integer: PostgreSQL
            // computes `id`-sized (int4) arithmetic otherwise, and ms since 1970 overflow it.
            let base_ms = base * 1000;
            format!("{base_ms} + (((id - {first}) % {period} - {shift} + {period}) % {period}) * 1000")
        }
    };
    let sql = format!(
        "UPDATE xxl_job_info SET trigger_status = 1, trigger_next_time = {next} \
         WHERE id BETWEEN {first} AND {last}"
    );
    let started = jobwheel_tests::databases::execute_sql(url, sql).await?;
    anyhow::ensure!(started == ids.len() as u64, "started {started} of {} jobs", ids.len());
    // PostgreSQL keeps every row's old version until a vacuum: right after this update a
    // million-job table is twice its size, and the run's first minutes (the job list's deep
    // page and name search, count and page together: 1.9 and 2.3 s against 0.5 and 1.1 s
    // vacuumed, `EXPLAIN ANALYZE` on PostgreSQL 15 here) would
    // measure the set-up's dead rows instead of a table in steady state.
    if ids.len() > 10_000 && url.starts_with("postgres") {
        jobwheel_tests::databases::execute_sql(url, "VACUUM ANALYZE xxl_job_info".to_owned()).await?;
    }
    Ok(())
}

/// Inserts `count` fired claims of `jobs` (round robin), fire times spread evenly over the hour
/// before `now_ms`: the claim table an admin keeps after an hour at `count` claims an hour, as
/// it was before claims taken on time were deleted (docs/benchmarks.md). No log rows: the
/// claims only weigh on the table's indexes and on the purge.
pub(crate) async fn prefill_fired_claims(
    url: &str,
    jobs: &[JobId],
    count: u64,
    now_ms: i64,
) -> anyhow::Result<()> {
    let first = jobs.first().map_or(1, |j| i64::from(j.0));
    let n = i64::try_from(jobs.len()).unwrap_or(1).max(1);
    let hour = 3_600_000_i64;
    anyhow::ensure!(
        url.starts_with("sqlite") || url.starts_with("postgres"),
        "--prefill-fired-claims: SQLite or PostgreSQL"
    );
    let sql = format!(
        "WITH RECURSIVE k(i) AS (SELECT CAST(0 AS BIGINT) UNION ALL SELECT i + 1 FROM k WHERE i + 1 < {count}) \
         INSERT INTO jobwheel_ring_claim (job_id, fire_time_ms, claimed_at_ms, status, taken_at_ms) \
         SELECT {first} + i % {n}, {start} + i * {hour} / {count}, {start} + i * {hour} / {count} - 5000, 1, \
         {start} + i * {hour} / {count} FROM k",
        start = now_ms - hour,
    );
    let inserted = jobwheel_tests::databases::execute_sql(url, sql).await?;
    anyhow::ensure!(inserted == count, "prefilled {inserted} of {count} claims");
    Ok(())
}

/// Inserts `count` finished log rows (trigger 200, handle 200) for `jobs`, their trigger times
/// spread evenly over the `count / per_second` seconds before `now_ms`: the log table an admin
/// has after that long at that rate, which the report monitor's minute pass counts (three days
/// at most: older rows are outside its window). SQLite or PostgreSQL.
pub(crate) async fn prefill_logs(
    url: &str,
    jobs: &[JobId],
    count: u64,
    per_second: usize,
    now_ms: i64,
) -> anyhow::Result<()> {
    let first = jobs.first().map_or(1, |j| i64::from(j.0));
    let n = i64::try_from(jobs.len()).unwrap_or(1).max(1);
    let span = i64::try_from(count / u64::try_from(per_second.max(1))?)?.max(1);
    anyhow::ensure!(span <= 3 * 86_400, "--prefill-logs: more than three days of logs at this rate");
    let ts = match url {
        u if u.starts_with("sqlite") => "datetime",
        u if u.starts_with("postgres") => "to_timestamp",
        _ => anyhow::bail!("--prefill-logs: SQLite or PostgreSQL"),
    };
    let at = |t: &str| match ts {
        "datetime" => format!("datetime({t}, 'unixepoch')"),
        _ => format!("to_timestamp({t})"),
    };
    // An upstream-sized trigger message: the rows' width is what a count's row lookups read.
    let msg = "Trigger type: Cron trigger<br>Admin address: 127.0.0.1:8080<br>Executor registry: \
               automatic<br>Address list: [http://127.0.0.1:9999/]<br>Route: First<br>Block: Serial";
    let time = format!("{start} + i * {span} / {count}", start = now_ms / 1000 - span);
    let sql = format!(
        "WITH RECURSIVE k(i) AS (SELECT CAST(0 AS BIGINT) UNION ALL SELECT i + 1 FROM k WHERE i + 1 < {count}) \
         INSERT INTO xxl_job_log (job_group, job_id, executor_address, executor_handler, executor_param, \
         executor_fail_retry_count, trigger_time, trigger_code, trigger_msg, handle_time, handle_code, \
         handle_msg, alarm_status) \
         SELECT (SELECT job_group FROM xxl_job_info WHERE id = {first}), {first} + i % {n}, \
         'http://127.0.0.1:9999/', 'demoJobHandler', '', 0, {trigger}, 200, '{msg}', {handle}, 200, '', 0 \
         FROM k",
        trigger = at(&time),
        handle = at(&format!("{time} + 1")),
    );
    let inserted = jobwheel_tests::databases::execute_sql(url, sql).await?;
    anyhow::ensure!(inserted == count, "prefilled {inserted} of {count} logs");
    Ok(())
}

/// The Quartz expression of a job firing at offset `second` of every `period` seconds (a
/// divisor of 60, or a whole number of minutes dividing an hour).
pub(crate) fn cron_conf(second: i64, period: u32) -> String {
    match period {
        // Quartz refuses an increment of 60; once a minute is just the second.
        60 => format!("{second} * * * * ?"),
        3600 => format!("{} {} * * * ?", second % 60, second / 60),
        p if p > 60 => format!("{} {}/{} * * * ?", second % 60, second / 60, p / 60),
        p => format!("{second}/{p} * * * * ?"),
    }
}

/// Whether `--cron-period` is one [`cron_conf`] can express.
pub(crate) fn valid_period(period: u32) -> bool {
    period > 0 && (60 % period == 0 || (period.is_multiple_of(60) && 3600 % period == 0))
}

/// The `jobwheel-admin` binary beside this one (same profile).
pub(crate) fn admin_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let path = exe.parent().context("binary directory")?.join("jobwheel-admin");
    if !path.is_file() {
        bail!(
            "{} missing: build it with the same profile (cargo build --release -p jobwheel-admin)",
            path.display()
        );
    }
    Ok(path)
}

/// Starts the admin on `port` over `database_url`, sized for `per_second` triggers a second;
/// its log goes to `data_dir/admin.log` (appended: a restarted admin adds to it).
pub(crate) async fn admin(
    database_url: &str,
    port: u16,
    data_dir: &Path,
    per_second: usize,
) -> anyhow::Result<Child> {
    // Upstream reads at most (fast + slow pool size) × 10 jobs per pre-read, one pre-read a
    // second: `per_second` triggers a second need a fast pool of `per_second / 10`.
    let fast_pool = (per_second / 10).max(300);
    std::fs::create_dir_all(data_dir)?;
    let log = std::fs::OpenOptions::new().create(true).append(true).open(data_dir.join("admin.log"))?;
    let child = Command::new(admin_binary()?)
        .args(["--listen", &format!("127.0.0.1:{port}"), "--database-url", database_url])
        .args(["--access-token", TOKEN, "--i18n", "en"])
        // Thousands of triggers fall due in one ring second; upstream's 2000-deep backlog
        // would drop the rest (see docs/benchmarks.md).
        .args(["--trigger-pool-fast-queue", "200000", "--trigger-pool-fast-max", &fast_pool.to_string()])
        .arg("--data-dir")
        .arg(data_dir)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .context("starting jobwheel-admin")?;
    let url = format!("http://127.0.0.1:{port}/api/v1/openapi.json");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while reqwest::get(&url).await.is_err() {
        if tokio::time::Instant::now() > deadline {
            bail!("the admin did not answer within 30 s; see {}", data_dir.join("admin.log").display());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(child)
}
