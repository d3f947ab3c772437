//! `GET /healthz` and `GET /readyz` without credentials: up and ready with the engine on SQLite
//! and with the store-only core; on PostgreSQL, a database that loses its schema makes the admin
//! not ready (503) with a fixed message that names nothing of the connection.

use std::sync::Arc;

use jobwheel_admin::http::AdminCore;
use jobwheel_tests::databases::{FreshDatabase, Server};
use serde_json::{Value, json};

use crate::http::store_only_core::StoreOnlyCore;
use crate::http::{Admin, eventually, sqlite_url, test_config};

async fn get(http: &reqwest::Client, url: String) -> (u16, Value) {
    let response = http.get(url).send().await.expect("the admin answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

/// Waits until the admin at `base` answers `/readyz` with 200.
pub(crate) async fn wait_ready(http: &reqwest::Client, base: &str) {
    eventually("the admin ready", || async {
        let (status, _) = get(http, format!("{base}/readyz")).await;
        (status == 200).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_is_up_and_ready_with_its_engine_or_without_one() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let http = reqwest::Client::new();
    let admin = Admin::start_engine(test_config(&sqlite_url(dir.path()))).await?;
    assert_eq!(get(&http, format!("{}/healthz", admin.base)).await, (200, json!({"status": "up"})));
    wait_ready(&http, &admin.base).await;
    let (_, body) = get(&http, format!("{}/readyz", admin.base)).await;
    assert_eq!(body, json!({"status": "ready", "checks": {"database": "ok", "scheduler": "ok"}}));
    admin.stop().await?;

    // A core without a scheduler is ready as soon as its database answers.
    let other = tempfile::tempdir()?;
    let admin = Admin::start_with(test_config(&sqlite_url(other.path())), |store| {
        Arc::new(StoreOnlyCore::new(store)) as Arc<dyn AdminCore>
    })
    .await?;
    assert_eq!(get(&http, format!("{}/readyz", admin.base)).await.0, 200);
    admin.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_whose_database_fails_is_not_ready_and_says_so_without_details() -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(Server::Postgres).await? else { return Ok(()) };
    let url = db.url.clone();
    let http = reqwest::Client::new();
    let admin = Admin::start_engine(test_config(&url)).await?;
    wait_ready(&http, &admin.base).await;
    db.drop_it().await?;

    let (status, body) = get(&http, format!("{}/readyz", admin.base)).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "not ready");
    assert_eq!(body["checks"]["database"], "the database read failed (see the admin's log)");
    let schema = url.rsplit('=').next().unwrap_or_default();
    assert!(!body.to_string().contains(schema), "nothing of the connection leaks: {body}");
    assert_eq!(get(&http, format!("{}/healthz", admin.base)).await.0, 200, "still up");
    admin.stop().await
}
