//! An xxl-job database made by upstream's own scripts (`admin/tests/fixtures/upstream`: 2.4.2
//! and 3.4.2, DDL and seed rows as shipped) is adopted by a running jobwheel admin: upstream's
//! default `admin` logs in with upstream's password `123456` (MD5 hex on 2.4.2, SHA-256 hex on
//! 3.4.2), the password is rehashed to argon2 and still works, no second administrator is
//! created, and upstream's seed job is listed. MySQL/MariaDB, as upstream ships only MySQL DDL.

use anyhow::{Context as _, ensure};
use jobwheel_tests::databases::{FreshDatabase, Server};
use reqwest::Method;
use serde_json::json;

use super::Env;

const UPSTREAM_2_4: &str = include_str!("../../../fixtures/upstream/xxl-job-2.4.2.sql");
const UPSTREAM_3_4: &str = include_str!("../../../fixtures/upstream/xxl-job-3.4.2.sql");
/// Upstream's documented default login.
const UPSTREAM_PASSWORD: &str = "123456";

/// Upstream's script without its `CREATE database` and `use` lines: everything else runs as
/// written, in the test's own database.
fn in_this_database(script: &str) -> String {
    script
        .lines()
        .filter(|line| {
            let lower = line.trim_start().to_ascii_lowercase();
            !lower.starts_with("create database") && !lower.starts_with("use ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

async fn adopt(script: &str, seed_job: &str, stored_before: &str) -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(Server::MySql).await? else { return Ok(()) };
    let outcome = adopt_in(&db.url, script, seed_job, stored_before).await;
    db.drop_it().await?;
    outcome
}

async fn adopt_in(url: &str, script: &str, seed_job: &str, stored_before: &str) -> anyhow::Result<()> {
    let upstream = sqlx::MySqlPool::connect(url).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(in_this_database(script))).execute(&upstream).await?;
    let password = |pool: sqlx::MySqlPool| async move {
        sqlx::query_scalar::<_, String>("SELECT password FROM xxl_job_user WHERE username = 'admin'")
            .fetch_one(&pool)
            .await
    };
    ensure!(password(upstream.clone()).await? == stored_before, "upstream's own hash");

    let env = Env::start_on(url).await?;
    let users: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM xxl_job_user").fetch_one(&upstream).await?;
    ensure!(users == 1, "upstream's admin is kept and no first-start administrator is added");
    let wrong = env
        .anonymous()
        .request(Method::POST, "/api/v1/session")
        .json(&json!({"username": "admin", "password": "654321"}))
        .send()
        .await?;
    ensure!(wrong.status() == 401, "a wrong password is still wrong: {}", wrong.status());
    let client = env.login_with("admin", UPSTREAM_PASSWORD).await;
    let rehashed = password(upstream.clone()).await?;
    ensure!(rehashed.starts_with("$argon2"), "rehashed at the first login: {rehashed}");
    let (status, me) = client.get("/api/v1/session").await;
    ensure!(status == 200 && me["user"]["role"] == 1, "an administrator: {me}");
    let (status, jobs) = client.get("/api/v1/jobs?jobGroup=1").await;
    ensure!(status == 200, "{jobs}");
    let listed = jobs.to_string();
    ensure!(listed.contains(seed_job), "upstream's seed job {seed_job:?} is listed: {listed}");
    // Logged out and in again: the argon2 hash now answers.
    env.login_with("admin", UPSTREAM_PASSWORD).await;
    env.admin.stop().await.context("stopping the admin")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xxl_job_2_4_database_is_adopted_and_its_admin_logs_in() -> anyhow::Result<()> {
    adopt(UPSTREAM_2_4, "测试任务1", "e10adc3949ba59abbe56e057f20f883e").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xxl_job_3_4_database_is_adopted_and_its_admin_logs_in() -> anyhow::Result<()> {
    adopt(UPSTREAM_3_4, "示例任务01", "8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92")
        .await
}
