//! The anonymous OpenID Connect endpoints from the flooder's side (review N6): callbacks without
//! the login cookie are refused without an audit row each, and starting logins neither makes the
//! admin ask the provider each time nor is unbounded per address. The provider is a stand-in
//! that serves discovery and keys and counts what it is asked.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::routing::get;
use jobwheel_admin::sso::SsoConfig;
use serde_json::json;

use super::Env;

/// A provider stand-in: its issuer URL and how many requests it answered.
async fn provider() -> anyhow::Result<(String, Arc<AtomicUsize>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let issuer = format!("http://{}", listener.local_addr()?);
    let asked = Arc::new(AtomicUsize::new(0));
    let metadata = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/auth"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    });
    let (m, a, b) = (metadata.clone(), Arc::clone(&asked), Arc::clone(&asked));
    let app = Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(move || {
                a.fetch_add(1, Ordering::SeqCst);
                let m = m.clone();
                async move { axum::Json(m) }
            }),
        )
        .route(
            "/jwks",
            get(move || {
                b.fetch_add(1, Ordering::SeqCst);
                async { axum::Json(json!({"keys": []})) }
            }),
        );
    // Ends with the test's runtime.
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((issuer, asked))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_sign_in_floods_are_folded_cached_and_throttled() -> anyhow::Result<()> {
    let (issuer, asked) = provider().await?;
    let config = SsoConfig::parse(&format!(
        r#"
public_url = "http://127.0.0.1:1"

[[oidc]]
id = "corp"
name = "Corp"
issuer = "{issuer}"
insecure = true
client_id = "jobwheel"

[[oidc.map]]
group = "/jobwheel-admins"
role = "admin"
"#
    ))
    .map_err(anyhow::Error::msg)?;
    let env = Env::start_configured(|c| c.sso = Some(config)).await?;
    env.admin_user("root").await;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()?;

    // 300 forged callbacks (no login cookie): each refused, one audit row for the lot.
    let callback = env.admin.url("/api/v1/sso/oidc/corp/callback?state=x&code=y");
    for _ in 0..300 {
        let response = http.get(&callback).send().await?;
        assert!(response.status().is_redirection(), "back to the login page: {}", response.status());
    }
    let root = env.login("root").await;
    let (_, audit) = root.get("/api/v1/audit?action=session.login_failed&limit=500").await;
    let rows = audit["total"].as_u64().unwrap_or(u64::MAX);
    assert!((1..=2).contains(&rows), "{rows} audit rows for 300 refused callbacks: {audit}");

    // 100 logins started from one address: the provider is asked once (metadata and keys),
    // and the address gets 429 after its allowance.
    let login = env.admin.url("/api/v1/sso/oidc/corp/login");
    let mut redirected = 0;
    for _ in 0..100 {
        let response = http.get(&login).send().await?;
        match response.status().as_u16() {
            303 | 302 | 307 => redirected += 1,
            429 => {}
            other => panic!("unexpected {other}: {}", response.text().await?),
        }
    }
    assert!((1..=20).contains(&redirected), "{redirected} of 100 starts went to the provider");
    assert!(
        asked.load(Ordering::SeqCst) <= 2,
        "the provider was asked {} times",
        asked.load(Ordering::SeqCst)
    );
    env.admin.stop().await
}

/// Review N17: a provider reached over plain http (keys a network attacker could swap) or a
/// directory over plain `ldap://` (passwords in the clear) is refused unless marked a test
/// bench; with an https `public_url` the login cookie is `__Host-` and `Secure`, so a sibling
/// subdomain cannot plant one, and the session cookie is `Secure` without `--secure-cookie`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_connections_are_refused_and_https_cookies_are_host_bound() -> anyhow::Result<()> {
    let oidc = |insecure: &str| {
        format!(
            "public_url = \"https://jobwheel.example\"\n[[oidc]]\nid = \"corp\"\nname = \"Corp\"\nissuer = \"http://idp.example\"\nclient_id = \"j\"\n{insecure}\n[[oidc.map]]\ngroup = \"/a\"\nrole = \"admin\"\n"
        )
    };
    let refused = SsoConfig::parse(&oidc("")).expect_err("an http issuer");
    assert!(refused.contains("plain http"), "{refused}");
    assert!(SsoConfig::parse(&oidc("insecure = true")).is_ok());
    let ldap = "[[ldap]]\nid = \"ad\"\nname = \"AD\"\nurl = \"ldap://dc.example\"\nbind_dn = \"{username}@example\"\ngroup_base = \"dc=example\"\n[[ldap.map]]\ngroup = \"cn=a,dc=example\"\n";
    let refused = SsoConfig::parse(ldap).expect_err("plain ldap");
    assert!(refused.contains("in the clear"), "{refused}");
    assert!(SsoConfig::parse(&ldap.replace("ldap://", "ldaps://")).is_ok());

    let (issuer, _) = provider().await?;
    let config = SsoConfig::parse(&format!(
        "public_url = \"https://jobwheel.example\"\n[[oidc]]\nid = \"corp\"\nname = \"Corp\"\nissuer = \"{issuer}\"\ninsecure = true\nclient_id = \"j\"\n[[oidc.map]]\ngroup = \"/a\"\nrole = \"admin\"\n"
    ))
    .map_err(anyhow::Error::msg)?;
    let env = Env::start_configured(|c| c.sso = Some(config)).await?;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()?;
    let started = http.get(env.admin.url("/api/v1/sso/oidc/corp/login")).send().await?;
    let cookie =
        started.headers().get("set-cookie").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    assert!(
        cookie.starts_with("__Host-jobwheel_sso=")
            && cookie.contains("; Secure")
            && cookie.contains("Path=/;"),
        "{cookie}"
    );
    env.admin_user("root").await;
    let login = http
        .post(env.admin.url("/api/v1/session"))
        .json(&json!({"username": "root", "password": super::PASSWORD}))
        .send()
        .await?;
    let session =
        login.headers().get("set-cookie").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    assert!(session.contains("Secure"), "{session}");
    env.admin.stop().await
}
