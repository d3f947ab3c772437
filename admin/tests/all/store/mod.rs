//! The store contract suite, run against every backend: SQLite always (a temporary file), and
//! PostgreSQL / MySQL-MariaDB when `JOBWHEEL_TEST_POSTGRES_URL` / `JOBWHEEL_TEST_MYSQL_URL` name
//! a server (CI sets both). Each run gets its own PostgreSQL schema or MySQL database, created
//! here and dropped afterwards, so runs sharing a server never see each other's rows.
//!
//! Every check connects two stores ("admins") to the same database so the concurrency checks
//! race real, separate connection pools.

use std::sync::Arc;

use anyhow::Context as _;
use jobwheel_admin::store::{self, Store};
use jobwheel_tests::databases::{FreshDatabase, Server};

mod adopt;
mod approvals;
mod audit;
mod batches;
mod calendars;
mod catalog;
mod credentials;
mod flights;
mod instance_alarm_by_end;
mod leases;
mod log_pieces;
mod logs;
mod migration;
mod rerun_of;
mod schedule;
mod staging;
mod workflow_calendars;

/// Two admins on one database.
#[derive(Clone)]
pub(crate) struct Admins {
    pub(crate) a: Arc<dyn Store>,
    pub(crate) b: Arc<dyn Store>,
}

/// The whole contract: every store method, on one fresh database.
async fn check_store(admins: Admins) -> anyhow::Result<()> {
    catalog::check(&admins).await.context("groups, registry, jobs, users, wasm")?;
    logs::check(&admins).await.context("logs and reports")?;
    schedule::check(&admins).await.context("schedule lock and ring claims")?;
    staging::check(&admins).await.context("pre-staged firing")?;
    leases::check(&admins).await.context("shared scheduling's partition leases")?;
    credentials::check(&admins).await.context("sessions and API tokens")?;
    batches::check(&admins).await.context("batch methods of the trigger and callback paths")?;
    audit::check(&admins).await.context("the audit log")?;
    calendars::check(&admins).await.context("calendars and job day rules")?;
    Ok(())
}

/// Runs the contract on a spawned task so that a failing assertion still reaches `cleanup`.
async fn run_contract(url: &str) -> anyhow::Result<()> {
    let admins = Admins { a: store::connect(url).await?, b: store::connect(url).await? };
    match tokio::spawn(check_store(admins)).await {
        Ok(result) => result,
        Err(join) => std::panic::resume_unwind(join.into_panic()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_contract() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    // A missing parent directory must be created on first start.
    let path = dir.path().join("data").join("jobwheel.db");
    let url = format!("sqlite://{}", path.display());
    run_contract(&url).await?;
    anyhow::ensure!(path.exists(), "the database file was not created");
    Ok(())
}

#[tokio::test]
async fn sqlite_in_memory_connects() -> anyhow::Result<()> {
    let store = store::connect("sqlite::memory:").await?;
    assert_eq!(store.backend(), store::Backend::Sqlite);
    Ok(())
}

/// The SQLite linked into the admin is one with the 2025 fixes (CVE-2025-6965 and
/// CVE-2025-29087/29088 were fixed in 3.50.2 and 3.49.1): the floor in Cargo.toml holds.
#[tokio::test]
async fn the_bundled_sqlite_is_3_50_or_newer() -> anyhow::Result<()> {
    let pool = sqlx::SqlitePool::connect("sqlite::memory:").await?;
    let version: String = sqlx::query_scalar("SELECT sqlite_version()").fetch_one(&pool).await?;
    let parts: Vec<u32> = version.split('.').map(str::parse).collect::<Result<_, _>>()?;
    anyhow::ensure!(parts.len() >= 3, "unexpected version {version:?}");
    anyhow::ensure!((parts[0], parts[1], parts[2]) >= (3, 50, 2), "bundled SQLite is {version}");
    Ok(())
}

#[tokio::test]
async fn unknown_scheme_is_refused_without_echoing_the_url() {
    match store::connect("oracle://user:secret@host/db").await {
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains("\"oracle\""), "{msg}");
            assert!(!msg.contains("secret"), "{msg}");
        }
        Ok(_) => panic!("an oracle: URL must be refused"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_contract() -> anyhow::Result<()> {
    contract_on(Server::Postgres).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mysql_contract() -> anyhow::Result<()> {
    contract_on(Server::MySql).await
}

/// The contract on a fresh database of `server` (nothing to do outside CI without its URL).
async fn contract_on(server: Server) -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(server).await? else { return Ok(()) };
    let result = run_contract(&db.url).await;
    db.drop_it().await?;
    result
}

#[tokio::test]
async fn mysql_adopts_an_existing_xxl_job_database() -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(Server::MySql).await? else { return Ok(()) };
    let result = adopt::check_mysql(&db.url).await;
    db.drop_it().await?;
    result
}

/// A fixed instant (tests never depend on the wall clock).
pub(crate) fn at(rfc3339: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(rfc3339).expect("valid test time").to_utc()
}

/// A stopped CRON job of `group` with every column set.
pub(crate) fn job(group: store::GroupId, desc: &str) -> store::Job {
    let now = at("2030-01-02T03:04:05Z");
    store::Job {
        job_group: group,
        job_desc: desc.to_owned(),
        add_time: Some(now),
        update_time: Some(now),
        author: Some("alice".to_owned()),
        alarm_email: Some("ops@example.invalid".to_owned()),
        schedule_type: "CRON".into(),
        schedule_conf: Some("0 0 0 * * ? *".to_owned()),
        misfire_strategy: "DO_NOTHING".into(),
        executor_route_strategy: Some("FIRST".into()),
        executor_handler: Some("demoJobHandler".to_owned()),
        executor_param: Some("p".to_owned()),
        executor_block_strategy: Some("SERIAL_EXECUTION".into()),
        executor_timeout: 0,
        executor_fail_retry_count: 1,
        glue_type: "BEAN".into(),
        glue_source: None,
        glue_remark: Some("init".to_owned()),
        glue_updatetime: Some(now),
        child_jobid: None,
        trigger_status: 0,
        trigger_last_time: 0,
        trigger_next_time: 0,
    }
}

/// A group for the checks of one area.
pub(crate) async fn group(store: &dyn Store, app_name: &str) -> anyhow::Result<store::GroupId> {
    Ok(store
        .add_group(&store::Group {
            app_name: app_name.to_owned(),
            title: app_name.to_owned(),
            address_type: 0,
            address_list: None,
            update_time: Some(at("2030-01-02T03:04:05Z")),
        })
        .await?)
}
