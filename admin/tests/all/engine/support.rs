//! Test helpers for the engine: databases (SQLite always; PostgreSQL/MySQL when their URLs are
//! set), a scripted fake executor, job/group builders and condition waits with deadlines.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_trait::async_trait;
use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::{ManualClock, RandomSource};
use jobwheel_admin::engine::{Engine, EngineConfig, EngineServices};
use jobwheel_admin::executor_client::{ExecutorApi, ExecutorReply, LogReply};
use jobwheel_admin::lang::MessageLang;
use jobwheel_admin::protocol::{LogParam, LogResult, TriggerParam};
use jobwheel_admin::routing::{Probe, ProbeResult, Router};
use jobwheel_admin::store::{self, GroupId, Job, JobId, Store};
use jobwheel_tests::databases::{FreshDatabase, Server};

/// 2030-01-01T00:00:00Z: scheduler tests run at fixed instants.
pub(crate) const T0: i64 = 1_893_456_000_000;

/// A database for one test; dropped (schema/database removed) by `cleanup`.
pub(crate) struct Db {
    pub(crate) url: String,
    _dir: Option<tempfile::TempDir>,
    fresh: Option<FreshDatabase>,
}

impl Db {
    pub(crate) async fn sqlite() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let url = format!("sqlite://{}", dir.path().join("engine.db").display());
        Ok(Self { url, _dir: Some(dir), fresh: None })
    }

    /// A fresh PostgreSQL schema, or `None` without `JOBWHEEL_TEST_POSTGRES_URL` (outside CI).
    pub(crate) async fn postgres() -> anyhow::Result<Option<Self>> {
        Self::fresh(Server::Postgres).await
    }

    /// A fresh MySQL database, or `None` without `JOBWHEEL_TEST_MYSQL_URL` (outside CI).
    pub(crate) async fn mysql() -> anyhow::Result<Option<Self>> {
        Self::fresh(Server::MySql).await
    }

    async fn fresh(server: Server) -> anyhow::Result<Option<Self>> {
        let Some(fresh) = FreshDatabase::create(server).await? else { return Ok(None) };
        Ok(Some(Self { url: fresh.url.clone(), _dir: None, fresh: Some(fresh) }))
    }

    pub(crate) async fn connect(&self) -> anyhow::Result<Arc<dyn Store>> {
        Ok(store::connect(&self.url).await?)
    }

    pub(crate) async fn cleanup(self) -> anyhow::Result<()> {
        match self.fresh {
            Some(fresh) => fresh.drop_it().await,
            None => Ok(()),
        }
    }

    /// Runs `scenario` on `db` (`None`: the server is not configured, nothing runs), then drops
    /// the database whether the scenario passed or not; the scenario's result comes first.
    pub(crate) async fn run(
        db: Option<Self>,
        scenario: impl AsyncFnOnce(&Db) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let Some(db) = db else { return Ok(()) };
        let result = scenario(&db).await;
        db.cleanup().await?;
        result
    }
}

/// A random source that always draws 0 (deterministic ROUND/LFU/RANDOM).
pub(crate) struct Zero;

impl RandomSource for Zero {
    fn next_below(&self, _bound: u32) -> u32 {
        0
    }
}

/// Scripted executors: `/run` answers 200 unless an address is told otherwise; every call is
/// recorded.
#[derive(Default)]
pub(crate) struct FakeExecutor {
    pub(crate) runs: Mutex<Vec<(String, TriggerParam)>>,
    pub(crate) kills: Mutex<Vec<(String, i32)>>,
    pub(crate) run_replies: Mutex<HashMap<String, ExecutorReply>>,
    pub(crate) dead: Mutex<Vec<String>>,
    /// `/run` calls to this address are recorded, then wait for the notify (an admin "dying"
    /// in the middle of a trigger).
    pub(crate) hold_runs: Mutex<Option<(String, Arc<tokio::sync::Notify>)>>,
}

impl FakeExecutor {
    pub(crate) fn runs(&self) -> Vec<(String, TriggerParam)> {
        self.runs.lock().expect("lock").clone()
    }

    pub(crate) fn fail_runs_at(&self, address: &str, msg: &str) {
        self.run_replies.lock().expect("lock").insert(address.to_owned(), ProbeResult::failed(msg));
    }

    /// Makes `/run` calls to `address` wait until the returned notify is notified.
    pub(crate) fn hold_runs_at(&self, address: &str) -> Arc<tokio::sync::Notify> {
        let release = Arc::new(tokio::sync::Notify::new());
        *self.hold_runs.lock().expect("lock") = Some((address.to_owned(), Arc::clone(&release)));
        release
    }

    pub(crate) fn kill_beats_of(&self, address: &str) {
        self.dead.lock().expect("lock").push(address.to_owned());
    }
}

#[async_trait]
impl Probe for FakeExecutor {
    async fn beat(&self, address: &str) -> ProbeResult {
        if self.dead.lock().expect("lock").iter().any(|a| a == address) {
            ProbeResult::failed("connection refused")
        } else {
            ProbeResult::ok()
        }
    }

    async fn idle_beat(&self, address: &str, _job_id: i32) -> ProbeResult {
        self.beat(address).await
    }
}

#[async_trait]
impl ExecutorApi for FakeExecutor {
    async fn run(&self, address: &str, param: &TriggerParam) -> ExecutorReply {
        self.runs.lock().expect("lock").push((address.to_owned(), param.clone()));
        let hold = self.hold_runs.lock().expect("lock").clone();
        if let Some((held, release)) = hold
            && held == address
        {
            release.notified().await;
        }
        self.run_replies.lock().expect("lock").get(address).cloned().unwrap_or_else(ProbeResult::ok)
    }

    async fn kill(&self, address: &str, job_id: i32) -> ExecutorReply {
        self.kills.lock().expect("lock").push((address.to_owned(), job_id));
        ProbeResult::ok()
    }

    async fn log(&self, _address: &str, param: &LogParam) -> LogReply {
        let result = LogResult {
            from_line_num: param.from_line_num,
            to_line_num: 0,
            log_content: String::new(),
            is_end: false,
        };
        LogReply { code: 200, msg: None, result: Some(result) }
    }
}

/// An engine on `store` with the fake executor, a manual clock at `now_ms`, Chinese texts
/// and UTC.
pub(crate) fn engine_with(
    store: Arc<dyn Store>,
    client: Arc<dyn ExecutorApi>,
    clock: Arc<ManualClock>,
    upstream: UpstreamAlarms,
) -> Arc<Engine> {
    engine_configured(store, client, clock, upstream, |_| {})
}

/// Like [`engine_with`], with the configuration changed by `configure` first.
pub(crate) fn engine_configured(
    store: Arc<dyn Store>,
    client: Arc<dyn ExecutorApi>,
    clock: Arc<ManualClock>,
    upstream: UpstreamAlarms,
    configure: impl FnOnce(&mut EngineConfig),
) -> Arc<Engine> {
    let router = Router::new(clock.clone(), Arc::new(Zero), MessageLang::Zh);
    let mut config = EngineConfig::new("10.0.0.1");
    config.time_zone = chrono_tz::UTC;
    // The channels' stand-ins listen on loopback, which alarm requests may not reach by default.
    config.alarm_networks = jobwheel_admin::alarm::AlarmNetworks::parse("127.0.0.0/8").expect("networks");
    configure(&mut config);
    Engine::new(store, client, router, upstream, config, EngineServices { clock, ..EngineServices::new() })
}

pub(crate) fn at_ms(ms: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(ms).expect("valid time")
}

/// An automatic-registration group with a fixed address list.
pub(crate) async fn group(store: &dyn Store, app: &str, addresses: &[&str]) -> anyhow::Result<GroupId> {
    Ok(store
        .add_group(&store::Group {
            app_name: app.to_owned(),
            title: format!("{app} title"),
            address_type: 0,
            address_list: (!addresses.is_empty()).then(|| addresses.join(",")),
            update_time: Some(at_ms(T0)),
        })
        .await?)
}

/// A running CRON job (every second) with next time `next_ms`.
pub(crate) fn job(group: GroupId, next_ms: i64) -> Job {
    Job {
        job_group: group,
        job_desc: "engine test job".to_owned(),
        add_time: Some(at_ms(T0)),
        update_time: Some(at_ms(T0)),
        author: Some("alice".to_owned()),
        alarm_email: None,
        schedule_type: "CRON".into(),
        schedule_conf: Some("* * * * * ?".to_owned()),
        misfire_strategy: "DO_NOTHING".into(),
        executor_route_strategy: Some("FIRST".into()),
        executor_handler: Some("demoJobHandler".to_owned()),
        executor_param: Some("p".to_owned()),
        executor_block_strategy: Some("SERIAL_EXECUTION".into()),
        executor_timeout: 0,
        executor_fail_retry_count: 0,
        glue_type: "BEAN".into(),
        glue_source: None,
        glue_remark: None,
        glue_updatetime: Some(at_ms(T0)),
        child_jobid: None,
        trigger_status: 1,
        trigger_last_time: 0,
        trigger_next_time: next_ms,
    }
}

pub(crate) async fn load(store: &dyn Store, id: JobId) -> anyhow::Result<Job> {
    Ok(store.load_job(id).await?.context("job exists")?.job)
}

/// All log rows of a job, oldest first.
pub(crate) async fn logs(store: &dyn Store, job: JobId) -> anyhow::Result<Vec<store::LogRow>> {
    let filter = store::LogFilter { job_id: Some(job), ..store::LogFilter::default() };
    let mut rows = store.page_logs(&filter, store::Page { offset: 0, limit: 1000 }).await?.rows;
    rows.reverse();
    Ok(rows)
}

/// Polls `condition` every 20 ms until it yields `Some`; fails naming `what` after `timeout`.
pub(crate) async fn wait_for<T, F, Fut>(timeout: Duration, what: &str, mut condition: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = condition().await? {
            return Ok(value);
        }
        anyhow::ensure!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
