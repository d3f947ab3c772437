//! The first-start and registry paths on PostgreSQL and MySQL/MariaDB, when
//! `JOBWHEEL_TEST_POSTGRES_URL` / `JOBWHEEL_TEST_MYSQL_URL` name a server (CI sets both). Each
//! run gets a fresh schema or database, dropped afterwards.

use std::sync::Arc;

use anyhow::Context as _;
use chrono::Utc;
use jobwheel_admin::http::{AdminCore, StoreOnlyCore};
use jobwheel_admin::store::Group;

use crate::{Admin, TOKEN, success, test_config};

/// The server URL in `var`; under `CI` a missing URL fails instead of skipping.
fn server_url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) => Some(url),
        Err(_) if std::env::var_os("CI").is_some() => panic!("{var} must be set in CI"),
        Err(_) => None,
    }
}

fn unique_name() -> String {
    format!("jobwheel_http_{:016x}", rand::random::<u64>())
}

/// First start twice, then an executor registering with the store-only core.
async fn smoke(url: &str) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    crate::first_start::check_first_start(url, dir.path()).await?;

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
    let Some(base) = server_url("JOBWHEEL_TEST_POSTGRES_URL") else { return Ok(()) };
    let schema = unique_name();
    let server = sqlx::PgPool::connect(&base).await?;
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&server).await?;
    let sep = if base.contains('?') { '&' } else { '?' };
    let result = smoke(&format!("{base}{sep}options[search_path]={schema}")).await;
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&server).await?;
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_first_start_and_registry() -> anyhow::Result<()> {
    let Some(base) = server_url("JOBWHEEL_TEST_MYSQL_URL") else { return Ok(()) };
    let database = unique_name();
    let server = sqlx::MySqlPool::connect(&base).await?;
    sqlx::query(&format!("CREATE DATABASE {database} CHARACTER SET utf8mb4")).execute(&server).await?;
    let result = smoke(&with_database(&base, &database)?).await;
    sqlx::query(&format!("DROP DATABASE {database}")).execute(&server).await?;
    result
}

/// `mysql://user@host:port/old?x` → `mysql://user@host:port/<database>?x`.
fn with_database(base: &str, database: &str) -> anyhow::Result<String> {
    let (before_query, query) = base.split_once('?').map_or((base, None), |(b, q)| (b, Some(q)));
    let authority = before_query.find("://").context("URL without scheme")? + 3;
    let path = before_query[authority..].find('/').map_or(before_query.len(), |i| i + authority);
    Ok(match query {
        Some(query) => format!("{}/{database}?{query}", &before_query[..path]),
        None => format!("{}/{database}", &before_query[..path]),
    })
}
