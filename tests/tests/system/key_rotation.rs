//! `jobwheel-admin secrets rotate-key` and the key file's checks, from the operator's side
//! (security review L8), against real `jobwheel-admin` processes on SQLite: a secret, a group
//! token and an alarm channel's URL set through the API are re-sealed under a new key that the
//! old one no longer opens, and the restarted admin works with it; a key file others can read,
//! and a rotation that stopped between the database and the file, keep the admin from starting
//! with a message that says what to do; a wrong current key changes nothing.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use jobwheel_admin::credentials::SEAL_NAME;
use jobwheel_admin::sealing::SecretBox;
use jobwheel_admin::store::{GroupId, JobId, Store, StoredToken, VariableOwner};
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
    admin.stop().await?;

    let old = key_in(&data)?;
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
    ensure!(ok && text.contains("re-sealed 3 secret value(s)"), "{text}");
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
