//! `jobwheel-admin secrets rotate-key` and the key file's checks, from the operator's side
//! (security review L8), against real `jobwheel-admin` processes on SQLite: a secret, a group
//! token and an alarm channel's URL set through the API are re-sealed under a new key that the
//! old one no longer opens, and the restarted admin works with it — flight records too, whose
//! secret digests are carried over to the new key, so a run recorded before the rotation still
//! replays; a key file others can read,
//! and a rotation that stopped between the database and the file, keep the admin from starting
//! with a message that says what to do; a wrong current key changes nothing.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use jobwheel_admin::credentials::SEAL_NAME;
use jobwheel_admin::sealing::SecretBox;
use jobwheel_admin::store::{GroupId, JobId, NewLog, Store, StoredToken, VariableOwner};
use jobwheel_protocol::flight::secret_digest;
use jobwheel_tests::api::Api;
use jobwheel_tests::cluster::{Daemon, binary};
use serde_json::json;

const API_TOKEN: &str = "rotation-test-api-token-012345678";
const SECRET: &str = "s3cret-value-for-rotation";
const GROUP_TOKEN: &str = "group-token-for-rotation-0123456789";
const APP: &str = "rot-app";

/// Runs `jobwheel-admin` with `args` to its end (bounded); its exit success and stdout+stderr.
async fn admin_command(args: &[&str]) -> anyhow::Result<(bool, String)> {
    let run = tokio::process::Command::new(binary("jobwheel-admin")?).args(args).kill_on_drop(true).output();
    let out =
        tokio::time::timeout(Duration::from_secs(60), run).await.context("jobwheel-admin did not end")??;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

fn key_in(dir: &Path) -> anyhow::Result<String> {
    Ok(std::fs::read_to_string(dir.join("secret-key"))?.trim().to_owned())
}

/// The stored secret and group token, each opened with `key` (`None`: it does not open).
async fn opened(
    store: &dyn Store,
    key: &str,
    group: GroupId,
    job: JobId,
) -> anyhow::Result<(Option<String>, Option<String>)> {
    let key = SecretBox::from_hex(key)?;
    let secret =
        store.list_variables(VariableOwner::Job(job)).await?.into_iter().find(|v| v.name == "API_KEY");
    let secret = secret.and_then(|v| key.open(VariableOwner::Job(job), "API_KEY", &v.value).ok());
    let token = store.group_tokens().await?.into_iter().find(|t| t.group_id == group);
    let token = token.and_then(|t| match t.token {
        StoredToken::Sealed(sealed) => key.open(VariableOwner::Group(group), SEAL_NAME, &sealed).ok(),
        StoredToken::Plain(_) => None,
    });
    Ok((secret, token))
}

/// Registers an executor of the group with its own token, as an executor would; the code.
async fn register_with_group_token(base: &str) -> anyhow::Result<i64> {
    let reply: serde_json::Value = reqwest::Client::new()
        .post(format!("{base}/api/registry"))
        .header("XXL-JOB-ACCESS-TOKEN", GROUP_TOKEN)
        .header("XXL-JOB-APPNAME", APP)
        .json(
            &json!({"registryGroup": "EXECUTOR", "registryKey": APP, "registryValue": "http://127.0.0.1:9/"}),
        )
        .send()
        .await?
        .json()
        .await?;
    reply["code"].as_i64().with_context(|| format!("no code: {reply}"))
}

#[tokio::test]
async fn rotate_key_reseals_everything_and_bad_key_files_are_refused() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("rotation.db").display());
    let data = dir.path().join("admin");
    let store = jobwheel_admin::store::connect(&url).await?;
    jobwheel_tests::fixtures::api_administrator(&*store, "ops", API_TOKEN).await?;
    let mut admin = Daemon::start_admin(&url, &data, &[], &[]).await?;
    let api = Api::new(&admin.base, API_TOKEN);
    let group = api.post("/groups", json!({"appname": APP, "title": "Rotation", "addressType": 0})).await?;
    let group = GroupId(i32::try_from(group["id"].as_i64().context("group id")?)?);
    api.put(&format!("/groups/{group}/access-token"), json!({"accessToken": GROUP_TOKEN})).await?;
    let job = JobId(i32::try_from(api.job(i64::from(group.0), "uses a secret", json!({})).await?)?);
    api.put(&format!("/jobs/{job}/secrets/API_KEY"), json!({"value": SECRET})).await?;
    // An alarm channel's URL is sealed too (docs/alarms.md); its host shows only when it opens.
    let channel = api
        .post("/alarm-channels", json!({"name": "rot-slack", "kind": "slack", "url": "https://hooks.slack.invalid/services/T/B/x"}))
        .await?;
    let channel = channel["id"].as_i64().context("channel id")?;
    let code = register_with_group_token(&admin.base).await?;
    ensure!(code == 200, "the group token works before: {code}\n{}", admin.log_tail(10));
    let old = key_in(&data)?;
    let (kept, changed) = recorded_runs(&*store, &admin.base, &old, job).await?;
    admin.stop().await?;

    ensure!(opened(&*store, &old, group, job).await? == (Some(SECRET.into()), Some(GROUP_TOKEN.into())));
    let db_args = ["--database-url", url.as_str(), "--data-dir", data.to_str().context("path")?];

    // A wrong current key opens nothing: refused, and nothing changes.
    let wrong = SecretBox::generate_key();
    let (ok, text) = admin_command(
        &[&db_args[..], &["--secret-key", &wrong, "secrets", "rotate-key", "--new-key", &wrong]].concat(),
    )
    .await?;
    ensure!(!ok && text.contains("does not open with the current secret key"), "{text}");
    ensure!(opened(&*store, &old, group, job).await?.0.as_deref() == Some(SECRET), "unchanged");

    // The rotation: every sealed value under a new key, which replaces the file (still 0600).
    let (ok, text) = admin_command(&[&db_args[..], &["secrets", "rotate-key"]].concat()).await?;
    ensure!(ok && text.contains("re-sealed 3 secret value(s) and 2 flight record(s)"), "{text}");
    let new = key_in(&data)?;
    ensure!(new != old && !text.contains(&new), "a new key, not printed: {text}");
    ensure!(std::fs::metadata(data.join("secret-key"))?.permissions().mode() & 0o777 == 0o600);
    ensure!(opened(&*store, &new, group, job).await? == (Some(SECRET.into()), Some(GROUP_TOKEN.into())));
    ensure!(opened(&*store, &old, group, job).await? == (None, None), "the old key opens nothing any more");
    admin.restart().await?;
    ensure!(
        register_with_group_token(&admin.base).await? == 200,
        "the restarted admin opens the group token"
    );
    let shown = Api::new(&admin.base, API_TOKEN).get(&format!("/alarm-channels/{channel}")).await?;
    ensure!(shown["urlHost"] == "hooks.slack.invalid", "the channel's URL opens under the new key: {shown}");
    // A run recorded before the rotation opens under the new key, and the secret it used still
    // matches its digest: its replay gets as far as looking for an executor (there is none
    // here). One whose secret digest did not match before still does not.
    let api = Api::new(&admin.base, API_TOKEN);
    let refused = api.post(&format!("/logs/{kept}/replay"), json!({})).await.expect_err("no executor");
    let text = refused.to_string();
    ensure!(
        text.contains("executor") && !text.contains("another key") && !text.contains("changed since"),
        "the record made before the rotation replays up to the executor: {text}"
    );
    let refused =
        api.post(&format!("/logs/{changed}/replay"), json!({})).await.expect_err("a changed secret");
    ensure!(refused.to_string().contains("the secret API_KEY changed since the run"), "{refused}");
    admin.stop().await?;

    // A key file other users may read: the admin does not start, and says how to fix it.
    let key_file = data.join("secret-key");
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644))?;
    let serve = ["--listen", "127.0.0.1:0", "--access-token", "some-global-token-0123456789"];
    let (ok, text) = admin_command(&[&db_args[..], &serve[..]].concat()).await?;
    ensure!(!ok && text.contains("chmod 600"), "{text}");
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600))?;

    // A rotation that committed but stopped before the rename: the database is sealed with
    // `secret-key.new`, `secret-key` is stale. The admin refuses to start; rotate-key finishes it.
    std::fs::rename(&key_file, data.join("secret-key.new"))?;
    std::fs::write(&key_file, format!("{}\n", SecretBox::generate_key()))?;
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600))?;
    let (ok, text) = admin_command(&[&db_args[..], &serve[..]].concat()).await?;
    ensure!(!ok && text.contains("rotate-key") && text.contains("secret-key.new"), "{text}");
    let (ok, text) = admin_command(&[&db_args[..], &["secrets", "rotate-key"]].concat()).await?;
    ensure!(ok && text.contains("finished the last rotation"), "{text}");
    ensure!(key_in(&data)? == new && !data.join("secret-key.new").exists());
    admin.restart().await?;
    ensure!(register_with_group_token(&admin.base).await? == 200, "the admin runs on the finished rotation");
    admin.stop().await
}

/// Two recorded runs of `job`, sent by an executor with their results (the admin seals them
/// under `key`): one that used the job's `API_KEY` as it is, one whose recorded digest is of
/// another value (a secret changed since). Their log ids.
async fn recorded_runs(store: &dyn Store, base: &str, key: &str, job: JobId) -> anyhow::Result<(i64, i64)> {
    let module = wat::parse_str(r#"(module (memory (export "memory") 1) (func (export "_start")))"#)?;
    let module = store.put_wasm_module(&module, 0).await?.digest;
    let digest_key = SecretBox::from_hex(key)?.journal_digest_key(job);
    let row = store.load_job(job).await?.context("the job")?;
    let mut logs = Vec::new();
    let mut results = Vec::new();
    for value in [SECRET, "a value the secret no longer has"] {
        let new = NewLog { job_group: row.job.job_group, job_id: job, trigger_time: chrono::Utc::now() };
        let log = store.insert_log(&new).await?.0;
        let record = json!({
            "module": module,
            "summary": {"outcome": "succeeded", "fuel": 10, "peakMemoryBytes": 65536, "lines": 0, "linesSha256": "00"},
            "journal": {
                "version": 1,
                "inputs": {"jobId": job.0, "logId": log, "shard": [0, 1], "fireKey": "k", "scheduledTime": 0, "param": "",
                           "env": [{"secret": {"name": "API_KEY", "digest": secret_digest(&digest_key, value)}}]},
                "insecureSeed": "0"
            }
        });
        results
            .push(json!({"logId": log, "handleCode": 200, "handleMsg": "ok", "flight": record.to_string()}));
        logs.push(log);
    }
    let reply: serde_json::Value = reqwest::Client::new()
        .post(format!("{base}/api/callback"))
        // The group has a token of its own: its executors deliver its results with it.
        .header("XXL-JOB-ACCESS-TOKEN", GROUP_TOKEN)
        .header("XXL-JOB-APPNAME", APP)
        .json(&results)
        .send()
        .await?
        .json()
        .await?;
    ensure!(reply["code"] == 200, "{reply}");
    // Results are stored by the admin's completion batches, after the answer.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    for log in &logs {
        while store.flight(jobwheel_admin::store::LogId(*log)).await?.is_none() {
            ensure!(tokio::time::Instant::now() < deadline, "log {log}'s record was not stored");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Ok((logs[0], logs[1]))
}
