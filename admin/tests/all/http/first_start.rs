//! First start through `app::run`: a generated token and `admin` user exactly once, reused
//! afterwards; a configured token wins; a damaged token file stops the start.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::Arc;

use jobwheel_admin::secrets::{self, TOKEN_FILE, TokenSource};
use jobwheel_admin::store::{Page, UserFilter, UserRow};

use crate::http::{Admin, RecordingCore, success, test_config};

/// Starts an admin without a configured token, checks that the stored token works on the
/// executor API, stops it, and returns the token and the users.
pub(crate) async fn start_without_token(
    url: &str,
    data_dir: &Path,
) -> anyhow::Result<(String, Vec<UserRow>)> {
    let mut config = test_config(url);
    config.access_token = None;
    config.data_dir = data_dir.to_owned();
    let admin = Admin::start(config, Arc::new(RecordingCore::default())).await?;
    let token = std::fs::read_to_string(data_dir.join(TOKEN_FILE))?.trim().to_owned();
    let body = r#"{"registryGroup":"EXECUTOR","registryKey":"app","registryValue":"http://h:1/"}"#;
    assert_eq!(admin.post("/api/registry", body, Some(&token)).await.1, success());
    let users = admin.store.page_users(&UserFilter::default(), Page { offset: 0, limit: 10 }).await?.rows;
    admin.stop().await?;
    Ok((token, users))
}

/// The first-start contract on the database at `url`.
pub(crate) async fn check_first_start(url: &str, data_dir: &Path) -> anyhow::Result<()> {
    let (token, users) = start_without_token(url, data_dir).await?;
    assert_eq!(token.len(), 64, "32 random bytes in hex: {token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
    let mode = std::fs::metadata(data_dir.join(TOKEN_FILE))?.permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the token file is private");
    assert_eq!(users.len(), 1);
    let admin = &users[0].user;
    assert_eq!((admin.username.as_str(), admin.role), ("admin", 1));
    assert!(admin.password.starts_with("$argon2id$"), "{}", admin.password);
    assert!(admin.password.len() <= 100, "fits xxl_job_user.password varchar(100)");

    let (again, users_again) = start_without_token(url, data_dir).await?;
    assert_eq!(again, token, "the second start reuses the stored token");
    assert_eq!(users_again, users, "the second start creates no user and changes none");
    Ok(())
}

#[tokio::test]
async fn first_start_generates_the_token_and_admin_once() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let url = crate::http::sqlite_url(dir.path());
    check_first_start(&url, &dir.path().join("secrets")).await
}

#[tokio::test]
async fn the_notice_shows_generated_secrets_once_and_the_password_verifies() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = jobwheel_admin::store::connect(&crate::http::sqlite_url(dir.path())).await?;
    let first = secrets::prepare(store.as_ref(), None, None, dir.path()).await?;
    assert!(matches!(&first.token_source, TokenSource::Generated(p) if p == &dir.path().join(TOKEN_FILE)));
    let password = first.admin_password.clone().expect("the first start creates admin");
    let notice = first.first_start_notice("http://127.0.0.1:8080").expect("a notice");
    assert!(notice.contains(&first.access_token) && notice.contains(&password), "{notice}");
    assert!(notice.contains("--admin-addresses http://127.0.0.1:8080"), "{notice}");
    let stored = store.find_user("admin").await?.expect("admin").user.password;
    assert!(secrets::verify_password(&password, &stored));
    assert!(!secrets::verify_password("123456", &stored));

    let second = secrets::prepare(store.as_ref(), None, None, dir.path()).await?;
    assert_eq!(second.access_token, first.access_token);
    // The secret key was generated once (private file) and is the same on the second start.
    let key_file = dir.path().join(jobwheel_admin::sealing::KEY_FILE);
    assert_eq!(std::fs::metadata(&key_file)?.permissions().mode() & 0o777, 0o600);
    let owner = jobwheel_admin::store::VariableOwner::Job(jobwheel_admin::store::JobId(1));
    let sealed = first.secret_box.seal(owner, "TOKEN", "value");
    assert_eq!(second.secret_box.open(owner, "TOKEN", &sealed).as_deref(), Ok("value"));
    assert!(matches!(second.token_source, TokenSource::Stored(_)));
    assert!(second.admin_password.is_none());
    assert_eq!(second.first_start_notice("http://127.0.0.1:8080"), None, "nothing is shown twice");
    assert!(!format!("{second:?}").contains(&second.access_token), "Debug hides the token");
    Ok(())
}

#[tokio::test]
async fn a_configured_token_wins_and_no_file_is_written() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = jobwheel_admin::store::connect(&crate::http::sqlite_url(dir.path())).await?;
    let key = jobwheel_admin::sealing::SecretBox::generate_key();
    let prepared =
        secrets::prepare(store.as_ref(), Some("given"), Some(&key), &dir.path().join("secrets")).await?;
    assert_eq!((prepared.access_token.as_str(), &prepared.token_source), ("given", &TokenSource::Configured));
    assert!(!dir.path().join("secrets").exists(), "neither the token nor the key is written");
    let bad = secrets::prepare(store.as_ref(), Some("given"), Some("not-hex"), dir.path()).await;
    assert!(bad.is_err_and(|e| e.to_string().contains("64 hex characters")));
    // Only the admin user is new, so the notice shows the password and no token.
    let notice = prepared.first_start_notice("http://x").expect("admin was created");
    assert!(!notice.contains("given") && notice.contains("password:"), "{notice}");
    Ok(())
}

#[tokio::test]
async fn an_empty_token_file_stops_the_start() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join(TOKEN_FILE), "\n")?;
    let mut config = test_config(&crate::http::sqlite_url(dir.path()));
    config.access_token = None;
    config.data_dir = dir.path().to_owned();
    let error = match Admin::start(config, Arc::new(RecordingCore::default())).await {
        Ok(_) => anyhow::bail!("an admin with an empty token file must not start"),
        Err(e) => format!("{e:#}"),
    };
    assert!(error.contains("is empty; delete it to generate a new token"), "{error}");
    Ok(())
}
