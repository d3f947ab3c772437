//! An xxl-job database made by upstream's own scripts (`admin/tests/fixtures/upstream`: 2.4.2,
//! 3.4.2 and 3.5.0-SNAPSHOT, DDL and seed rows as shipped) is adopted by a running jobwheel
//! admin. Upstream's published secrets stay shut (review N1): its seed `admin`/`123456` cannot
//! sign in, and on 3.5 the seed groups' `default_token` opens neither registration nor the job
//! OpenAPI, so an attacker's `addJob`/`triggerJob` runs nothing. The operator resets the
//! password from the command line (`users reset-password`, which stores argon2), no second
//! administrator is created, upstream's seed job is listed, and once an administrator replaced
//! the group's token in one step it is triggered on an executor that registered the way that
//! generation's executors do — on 3.5 with the group's new token, over 3.5's `/trigger`. An
//! admin started with upstream's properties-file token (`--access-token default_token`) on a
//! 2.4.2 or 3.4.2 database refuses it from every executor-facing route. MySQL/MariaDB only:
//! upstream ships no PostgreSQL script.

use anyhow::{Context as _, ensure};
use jobwheel_admin::store::Generation;
use jobwheel_admin::users::UsersCommand;
use jobwheel_tests::databases::{FreshDatabase, Server};
use reqwest::Method;
use serde_json::json;

use super::Env;
use super::recording_executor::RecordingExecutor;
use crate::http::{TOKEN, eventually};

/// Upstream's documented default login.
const UPSTREAM_PASSWORD: &str = "123456";
/// A password the operator set in an upstream admin sharing the database.
const KEPT_PASSWORD: &str = "kept-in-upstream";
/// The AppName of upstream's seed group 1, which holds seed job 1.
const SAMPLE_APP: &str = "xxl-job-executor-sample";

/// One upstream release's script and what it left in the database.
struct Upstream {
    script: &'static str,
    generation: Generation,
    seed_job: &'static str,
    /// The seed admin's stored password hash.
    stored_before: &'static str,
    /// The seed group's own token (3.5's `xxl_job_group.access_token`).
    group_token: Option<&'static str>,
    /// How that generation stores [`KEPT_PASSWORD`] (MD5 hex on 2.x, SHA-256 hex on 3.x).
    kept_hash: &'static str,
}

const V2_4: Upstream = Upstream {
    script: include_str!("../../../fixtures/upstream/xxl-job-2.4.2.sql"),
    generation: Generation::V2,
    seed_job: "测试任务1",
    stored_before: "e10adc3949ba59abbe56e057f20f883e",
    group_token: None,
    kept_hash: "4e5689217ab2956b3c75e419e37402a0",
};
const V3_4: Upstream = Upstream {
    script: include_str!("../../../fixtures/upstream/xxl-job-3.4.2.sql"),
    generation: Generation::V3,
    seed_job: "示例任务01",
    stored_before: "8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92",
    group_token: None,
    kept_hash: "36ec9f0dc1d935eef912baf9b2a1d628e78e70680649903c1eaf763b0c6c96d4",
};
const V3_5: Upstream = Upstream {
    script: include_str!("../../../fixtures/upstream/xxl-job-3.5.0-SNAPSHOT.sql"),
    generation: Generation::V35,
    seed_job: "示例任务01",
    stored_before: "8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92",
    group_token: Some("default_token"),
    kept_hash: "36ec9f0dc1d935eef912baf9b2a1d628e78e70680649903c1eaf763b0c6c96d4",
};

/// Upstream's script without its `CREATE database` and `use` lines: everything else runs as
/// written, in the test's own database.
pub(crate) fn in_this_database(script: &str) -> String {
    script
        .lines()
        .filter(|line| {
            let lower = line.trim_start().to_ascii_lowercase();
            !lower.starts_with("create database") && !lower.starts_with("use ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

async fn adopt(upstream: &Upstream) -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(Server::MySql).await? else { return Ok(()) };
    let outcome = adopt_in(&db.url, upstream).await;
    db.drop_it().await?;
    outcome
}

async fn adopt_in(url: &str, upstream: &Upstream) -> anyhow::Result<()> {
    let pool = sqlx::MySqlPool::connect(url).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(in_this_database(upstream.script))).execute(&pool).await?;
    let password = |pool: sqlx::MySqlPool| async move {
        sqlx::query_scalar::<_, String>("SELECT password FROM xxl_job_user WHERE username = 'admin'")
            .fetch_one(&pool)
            .await
    };
    ensure!(password(pool.clone()).await? == upstream.stored_before, "upstream's own hash");

    let env = Env::start_on(url).await?;
    ensure!(env.store().schema().found == upstream.generation, "{:?}", env.store().schema());
    let users: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM xxl_job_user").fetch_one(&pool).await?;
    ensure!(users == 1, "upstream's admin is kept and no first-start administrator is added");
    let wrong = env
        .anonymous()
        .request(Method::POST, "/api/v1/session")
        .json(&json!({"username": "admin", "password": "654321"}))
        .send()
        .await?;
    ensure!(wrong.status() == 401, "a wrong password is still wrong: {}", wrong.status());
    // Upstream's published password is right, and refused all the same.
    let published = env
        .anonymous()
        .request(Method::POST, "/api/v1/session")
        .json(&json!({"username": "admin", "password": UPSTREAM_PASSWORD}))
        .send()
        .await?;
    let status = published.status();
    let text = published.text().await?;
    ensure!(
        status == 403 && text.contains("reset-password"),
        "the seed password does not sign in: {status} {text}"
    );
    ensure!(password(pool.clone()).await? == upstream.stored_before, "nothing was rehashed");
    // The operator's way in: a new password from the command line, stored as argon2.
    let new_password =
        jobwheel_admin::users::run(url, &UsersCommand::ResetPassword { username: "admin".into() })
            .await
            .context("users reset-password")?;
    let client = env.login_with("admin", &new_password).await;
    let rehashed = password(pool.clone()).await?;
    ensure!(rehashed.starts_with("$argon2"), "reset to an argon2 hash: {rehashed}");
    let (status, me) = client.get("/api/v1/session").await;
    ensure!(status == 200 && me["user"]["role"] == 1, "an administrator: {me}");
    ensure!(me["user"].get("publishedPassword").is_none(), "no longer marked: {me}");
    let (status, jobs) = client.get("/api/v1/jobs?jobGroup=1").await;
    ensure!(status == 200, "{jobs}");
    let listed = jobs.to_string();
    ensure!(
        listed.contains(upstream.seed_job),
        "upstream's seed job {:?} is listed: {listed}",
        upstream.seed_job
    );
    let (status, group) = client.get("/api/v1/groups/1").await;
    ensure!(status == 200 && group["appname"] == SAMPLE_APP, "{group}");
    ensure!(group["accessTokenSet"] == upstream.group_token.is_some(), "{group}");
    let executor = RecordingExecutor::start().await;
    let registry =
        json!({"registryGroup": "EXECUTOR", "registryKey": SAMPLE_APP, "registryValue": executor.address});
    let mut group_token = None;
    if let Some(seed_token) = upstream.group_token {
        ensure!(
            group["accessTokenRefused"] == "xxl-job's published default",
            "marked for the operator: {group}"
        );
        attacker_with_the_seed_token_gets_nothing(&env, &pool, seed_token, &registry).await?;
        // The administrator replaces it in one step: a new random token, shown once.
        let (status, set) = client.put("/api/v1/groups/1/access-token", json!({})).await;
        ensure!(status == 200, "{set}");
        let (_, group) = client.get("/api/v1/groups/1").await;
        ensure!(group.get("accessTokenRefused").is_none(), "{group}");
        group_token = Some(set["accessToken"].as_str().context("the new token")?.to_owned());
    }

    // An executor of the seed group registers as that generation's executors do, and the seed
    // job is triggered on it with a parameter longer than 2.x's `varchar(512)`.
    if let Some(token) = group_token.as_deref() {
        let refused = env.admin.executor_call("registry", &registry, Some(TOKEN), Some(SAMPLE_APP)).await;
        ensure!(refused["code"] == 500, "the global token does not act for a group with its own: {refused}");
        let accepted = env.admin.executor_call("registry", &registry, Some(token), Some(SAMPLE_APP)).await;
        ensure!(accepted["code"] == 200, "the group's new token: {accepted}");
    } else {
        let accepted = env.admin.executor_call("registry", &registry, Some(TOKEN), None).await;
        ensure!(accepted["code"] == 200, "{accepted}");
    }
    let param = "p".repeat(600);
    let (status, reply) = client.post("/api/v1/jobs/1/trigger", json!({"executorParam": param})).await;
    ensure!(status == 200, "{reply}");
    let run = eventually("the seed job's trigger", || async { executor.runs().first().cloned() }).await;
    ensure!(run.body["jobId"] == 1 && run.body["executorParams"] == param.as_str(), "{run:?}");
    match group_token.as_deref() {
        Some(token) => ensure!(
            run.path == "/trigger"
                && run.token.as_deref() == Some(token)
                && run.appname.as_deref() == Some(SAMPLE_APP),
            "3.5's protocol with the group's token: {run:?}"
        ),
        None => ensure!(run.path == "/run" && run.token.as_deref() == Some(TOKEN), "{run:?}"),
    }
    // The trigger's outcome (with its parameter) is written once `/run` has answered.
    let stored = eventually("the trigger's outcome in its log row", || async {
        let row: (i32, Option<String>) = sqlx::query_as(
            "SELECT trigger_code, executor_param FROM xxl_job_log WHERE job_id = 1 ORDER BY id DESC LIMIT 1",
        )
        .fetch_one(&pool)
        .await
        .expect("the log row");
        (row.0 != 0).then_some(row)
    })
    .await;
    ensure!(stored == (200, Some(param.clone())), "the log row keeps the whole parameter: {stored:?}");

    // A group created here is upstream's shape too, with a title 2.x's `varchar(12)` could
    // not hold.
    let title = "Nightly reports executors";
    let (status, created) = client
        .post("/api/v1/groups", json!({"appname": "reports-app", "title": title, "addressType": 0}))
        .await;
    ensure!(status == 201 || status == 200, "{created}");
    let name_column = if upstream.generation == Generation::V35 { "name" } else { "title" };
    let raw: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT {name_column} FROM xxl_job_group WHERE app_name = 'reports-app'"
    )))
    .fetch_one(&pool)
    .await?;
    ensure!(raw == title, "{raw}");

    if let Some(seed_token) = upstream.group_token {
        // With an executor registered, the seed token still triggers nothing.
        let trigger = env
            .admin
            .executor_call("triggerJob", &json!({"id": 1}), Some(seed_token), Some(SAMPLE_APP))
            .await;
        ensure!(trigger["code"] != 200, "{trigger}");
        tokens_shared_with_an_upstream_3_5_admin(&env, &client, &pool).await?;
        ensure!(executor.runs().len() == 1, "only the administrator's trigger ran: {:?}", executor.runs());
    }
    // A user whose stored hash is upstream's hash of `123456` is marked on the Users page and
    // refused like the seed admin.
    let (status, bob) = client
        .post("/api/v1/users", json!({"username": "bob-adopted", "password": "bob-secret", "role": 0}))
        .await;
    ensure!(status == 201 || status == 200, "{bob}");
    sqlx::query("UPDATE xxl_job_user SET password = ? WHERE username = 'bob-adopted'")
        .bind(upstream.stored_before)
        .execute(&pool)
        .await?;
    let (_, users) = client.get("/api/v1/users?username=bob-adopted").await;
    ensure!(users["items"][0]["publishedPassword"] == true, "{users}");
    let bob = env
        .anonymous()
        .post("/api/v1/session", json!({"username": "bob-adopted", "password": UPSTREAM_PASSWORD}))
        .await;
    ensure!(bob.0 == 403, "{bob:?}");
    // Logged out and in again: the argon2 hash answers.
    env.login_with("admin", &new_password).await;
    env.admin.stop().await.context("stopping the admin")
}

/// An attacker who knows upstream 3.5's seed token `default_token` and the seed AppName: no
/// executor registration, no job created through the job OpenAPI, no trigger.
async fn attacker_with_the_seed_token_gets_nothing(
    env: &Env,
    pool: &sqlx::MySqlPool,
    seed_token: &str,
    registry: &serde_json::Value,
) -> anyhow::Result<()> {
    let jobs =
        || async { sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM xxl_job_info").fetch_one(pool).await };
    let before = jobs().await?;
    let registered = env.admin.executor_call("registry", registry, Some(seed_token), Some(SAMPLE_APP)).await;
    ensure!(registered["code"] != 200, "registration with the seed token: {registered}");
    let add = json!({
        "jobGroup": 1, "name": "x", "author": "x", "alarmEmail": "", "scheduleType": "NONE", "scheduleConf": "",
        "misfireStrategy": "DO_NOTHING", "executorRouteStrategy": "FIRST", "executorHandler": "",
        "executorParam": "", "executorBlockStrategy": "SERIAL_EXECUTION", "executorTimeout": 0,
        "executorFailRetryCount": 0, "glueType": "GLUE_SHELL", "glueSource": "#!/bin/sh\nid > /tmp/pwned\n",
        "glueRemark": "x"
    });
    let added = env.admin.executor_call("addJob", &add, Some(seed_token), Some(SAMPLE_APP)).await;
    ensure!(added["code"] != 200, "addJob with the seed token: {added}");
    let trigger =
        env.admin.executor_call("triggerJob", &json!({"id": 1}), Some(seed_token), Some(SAMPLE_APP)).await;
    ensure!(trigger["code"] != 200, "triggerJob with the seed token: {trigger}");
    let callback = env
        .admin
        .executor_call(
            "callback",
            &json!([{"logId": 1, "handleCode": 200}]),
            Some(seed_token),
            Some(SAMPLE_APP),
        )
        .await;
    ensure!(callback["code"] != 200, "a forged callback: {callback}");
    ensure!(jobs().await? == before, "no job was added");
    let logs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM xxl_job_log").fetch_one(pool).await?;
    ensure!(logs == 0, "nothing was triggered");
    Ok(())
}

/// An admin started with upstream's properties-file token (`xxl.job.accessToken=default_token`,
/// as an operator moving from 2.4.2 or 3.4.2 would copy it) refuses that token on every
/// executor-facing route: nobody registers, calls back or adds jobs with it.
async fn the_published_global_token_is_refused(upstream: &Upstream) -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(Server::MySql).await? else { return Ok(()) };
    let outcome = async {
        let pool = sqlx::MySqlPool::connect(&db.url).await?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(in_this_database(upstream.script))).execute(&pool).await?;
        let env = Env::start_on_configured(&db.url, |c| c.access_token = Some("default_token".into())).await?;
        let executor = RecordingExecutor::start().await;
        let registry =
            json!({"registryGroup": "EXECUTOR", "registryKey": SAMPLE_APP, "registryValue": executor.address});
        for app in [None, Some(SAMPLE_APP)] {
            let registered = env.admin.executor_call("registry", &registry, Some("default_token"), app).await;
            ensure!(registered["code"] != 200, "registration: {registered}");
            let callback = env
                .admin
                .executor_call("callback", &json!([{"logId": 1, "handleCode": 200}]), Some("default_token"), app)
                .await;
            ensure!(callback["code"] != 200, "callback: {callback}");
        }
        let module = env
            .admin
            .http
            .get(env.admin.url(&format!("/api/wasm/{}", "0".repeat(64))))
            .header(jobwheel_admin::protocol::ACCESS_TOKEN_HEADER, "default_token")
            .send()
            .await?;
        ensure!(module.status() == 401, "module download: {}", module.status());
        let registered: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM xxl_job_registry").fetch_one(&pool).await?;
        ensure!(registered == 0, "nobody registered");
        env.admin.stop().await.context("stopping the admin")
    }
    .await;
    db.drop_it().await?;
    outcome
}

/// On a 3.5 schema the group's token lives in `xxl_job_group.access_token`, so one set in
/// either admin works in both: jobwheel writes it there (in the clear, as upstream reads it),
/// and one an upstream admin writes there is in force here within the snapshot's lifetime.
async fn tokens_shared_with_an_upstream_3_5_admin(
    env: &Env,
    client: &super::Client,
    pool: &sqlx::MySqlPool,
) -> anyhow::Result<()> {
    let column = || async {
        sqlx::query_scalar::<_, Option<String>>("SELECT access_token FROM xxl_job_group WHERE id = 1")
            .fetch_one(pool)
            .await
    };
    let (status, set) =
        client.put("/api/v1/groups/1/access-token", json!({"accessToken": "set-in-jobwheel"})).await;
    ensure!(status == 200, "{set}");
    ensure!(column().await?.as_deref() == Some("set-in-jobwheel"), "where a 3.5 admin reads it");
    let sealed: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobwheel_group_token").fetch_one(pool).await?;
    ensure!(sealed == 0, "no second copy that could disagree");

    sqlx::query("UPDATE xxl_job_group SET access_token = 'set-in-upstream' WHERE id = 1")
        .execute(pool)
        .await?;
    let registry = json!({"registryGroup": "EXECUTOR", "registryKey": SAMPLE_APP, "registryValue": "http://127.0.0.1:9/"});
    // Polled every 250 ms: faster, the refusals until the snapshot expires (up to 5 s) would
    // pass the wrong-token throttle's 60 a minute, and the address would be blocked.
    let deadline = tokio::time::Instant::now() + jobwheel_admin::credentials::SNAPSHOT_TTL * 3;
    loop {
        let reply =
            env.admin.executor_call("registry", &registry, Some("set-in-upstream"), Some(SAMPLE_APP)).await;
        if reply["code"] == 200 {
            break;
        }
        ensure!(tokio::time::Instant::now() < deadline, "the token an upstream admin set: {reply}");
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let old = env.admin.executor_call("registry", &registry, Some("set-in-jobwheel"), Some(SAMPLE_APP)).await;
    ensure!(old["code"] == 500, "the replaced token is refused: {old}");

    ensure!(client.delete("/api/v1/groups/1/access-token").await.0 == 204);
    ensure!(column().await?.is_none(), "cleared in upstream's column");
    Ok(())
}

/// While an upstream admin shares the database (`--keep-upstream-password-hashes`), a login
/// keeps upstream's hash and a password set in jobwheel is stored the way that upstream
/// verifies it: MD5 hex on 2.x, SHA-256 hex on 3.x.
async fn passwords_stay_upstream_verifiable(upstream: &Upstream, new_hash: &str) -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(Server::MySql).await? else { return Ok(()) };
    let outcome = async {
        let pool = sqlx::MySqlPool::connect(&db.url).await?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(in_this_database(upstream.script))).execute(&pool).await?;
        // The operator already gave `admin` a password of their own in the upstream admin.
        sqlx::query("UPDATE xxl_job_user SET password = ? WHERE username = 'admin'")
            .bind(upstream.kept_hash)
            .execute(&pool)
            .await?;
        let env = Env::start_on_configured(&db.url, |c| c.keep_upstream_password_hashes = true).await?;
        let stored = || async {
            sqlx::query_scalar::<_, String>("SELECT password FROM xxl_job_user WHERE username = 'admin'")
                .fetch_one(&pool)
                .await
        };
        let client = env.login_with("admin", KEPT_PASSWORD).await;
        ensure!(stored().await? == upstream.kept_hash, "upstream's hash is kept at login");
        let (status, reply) = client
            .put("/api/v1/session/password", json!({"oldPassword": KEPT_PASSWORD, "password": "654321"}))
            .await;
        ensure!(status == 204, "{reply}");
        ensure!(stored().await? == new_hash, "stored as upstream stores it");
        env.login_with("admin", "654321").await;
        env.admin.stop().await.context("stopping the admin")
    }
    .await;
    db.drop_it().await?;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharing_with_a_2_4_admin_keeps_md5_passwords() -> anyhow::Result<()> {
    // md5("654321")
    passwords_stay_upstream_verifiable(&V2_4, "c33367701511b4f6020ec61ded352059").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharing_with_a_3_5_admin_keeps_sha256_passwords() -> anyhow::Result<()> {
    // sha256("654321")
    passwords_stay_upstream_verifiable(
        &V3_5,
        "481f6cc0511143ccdd7e2d1b1b94faf0a700a8b49cd13922a70b5ae28acaa8c5",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xxl_job_2_4_database_is_adopted_logged_into_and_triggered() -> anyhow::Result<()> {
    adopt(&V2_4).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xxl_job_3_4_database_is_adopted_logged_into_and_triggered() -> anyhow::Result<()> {
    adopt(&V3_4).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xxl_job_3_5_database_is_adopted_with_its_group_tokens() -> anyhow::Result<()> {
    adopt(&V3_5).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_given_upstreams_default_token_on_a_2_4_database_refuses_it() -> anyhow::Result<()> {
    the_published_global_token_is_refused(&V2_4).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_given_upstreams_default_token_on_a_3_4_database_refuses_it() -> anyhow::Result<()> {
    the_published_global_token_is_refused(&V3_4).await
}

/// Review N11: `--keep-upstream-password-hashes` stores unsalted hashes, worth it only while an
/// upstream admin shares the database; on a database jobwheel created (no upstream admin can
/// share it) the admin refuses to start and says why.
#[tokio::test]
async fn keeping_upstream_hashes_is_refused_on_a_database_jobwheel_created() -> anyhow::Result<()> {
    let refused = match Env::start_configured(|c| c.keep_upstream_password_hashes = true).await {
        Ok(env) => {
            env.admin.stop().await?;
            anyhow::bail!("the admin started with --keep-upstream-password-hashes on its own database")
        }
        Err(e) => format!("{e:#}"),
    };
    ensure!(refused.contains("created by jobwheel"), "{refused}");
    Ok(())
}
