//! The first-start and registry paths on PostgreSQL and MySQL/MariaDB, when
//! `JOBWHEEL_TEST_POSTGRES_URL` / `JOBWHEEL_TEST_MYSQL_URL` name a server (CI sets both). Each
//! run gets a fresh schema or database, dropped afterwards.

use std::sync::Arc;

use anyhow::Context as _;
use chrono::Utc;
use jobwheel_admin::http::AdminCore;
use jobwheel_admin::store::Group;
use jobwheel_tests::databases::{FreshDatabase, Server};

use crate::http::store_only_core::StoreOnlyCore;
use crate::http::{Admin, TOKEN, success, test_config};

/// First start twice, then an executor registering with the store-only core.
async fn smoke(url: &str) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    crate::http::first_start::check_first_start(url, dir.path()).await?;

    let admin = Admin::start_with(test_config(url), |store| {
        Arc::new(StoreOnlyCore::new(store)) as Arc<dyn AdminCore>
    })
    .await?;
    let group = admin
        .store
        .add_group(&Group {
            app_name: "smoke".to_owned(),
            title: "smoke".to_owned(),
            address_type: 0,
            address_list: None,
            update_time: None,
        })
        .await?;
    for address in ["http://10.0.0.2:9999/", "http://10.0.0.1:9999/"] {
        let body =
            format!(r#"{{"registryGroup":"EXECUTOR","registryKey":"smoke","registryValue":"{address}"}}"#);
        assert_eq!(admin.post("/xxl-job-admin/api/registry", &body, Some(TOKEN)).await.1, success());
    }
    let rows = admin.store.alive_registry(Utc::now() - chrono::Duration::seconds(90)).await?;
    assert_eq!(rows.iter().filter(|r| r.registry_key == "smoke").count(), 2);
    let listed = admin.store.load_group(group).await?.context("group")?.group.address_list;
    assert_eq!(listed.as_deref(), Some("http://10.0.0.1:9999/,http://10.0.0.2:9999/"), "sorted");
    admin.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_first_start_and_registry() -> anyhow::Result<()> {
    smoke_on(Server::Postgres).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_first_start_and_registry() -> anyhow::Result<()> {
    smoke_on(Server::MySql).await
}

async fn smoke_on(server: Server) -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(server).await? else { return Ok(()) };
    let result = smoke(&db.url).await;
    db.drop_it().await?;
    result
}
