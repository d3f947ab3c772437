//! The access-token tables of docs/security.md, executed: the admin's executor-facing API (and
//! its UI files) and a real executor's API are called with no token, a wrong token, a
//! management credential and the access token, and must answer what each cell says — `ok`,
//! `refused` (upstream's HTTP 200 with `{"code":500,"msg":"The access token is wrong."}`) or an
//! HTTP status.

use chrono::Utc;
use jobwheel_admin::protocol::ACCESS_TOKEN_HEADER;
use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use tokio::sync::oneshot;

use crate::http::TOKEN;
use crate::http::mgmt::Env;
use crate::http::mgmt::matrix::{Row, check, table};

const WRONG_TOKEN: &str = "not-the-token-0123456789";

/// One column's credentials.
#[derive(Debug, Clone, Copy)]
enum Credentials<'a> {
    None,
    Token(&'a str),
    /// A management session cookie and API token, but no access token.
    Management {
        cookie: &'a str,
        bearer: &'a str,
    },
}

async fn send(
    http: &reqwest::Client,
    base: &str,
    row: &Row,
    path: &str,
    body: &Value,
    credentials: Credentials<'_>,
) -> (u16, Value) {
    let mut request = http.request(row.method.clone(), format!("{}{path}", base.trim_end_matches('/')));
    if row.method != Method::GET {
        request = request.json(body);
    }
    request = match credentials {
        Credentials::None => request,
        Credentials::Token(token) => request.header(ACCESS_TOKEN_HEADER, token),
        Credentials::Management { cookie, bearer } => request.header("cookie", cookie).bearer_auth(bearer),
    };
    let response = request.send().await.expect("the server answers");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// Asserts an answer against a cell; `refused` and an envelope `ok` are upstream's HTTP 200
/// envelopes, anything else is judged by [`check`].
fn judge(cell: &str, (status, body): (u16, Value), what: &str) {
    let envelope = body.get("code").is_some() && status == 200 && body.get("msg").is_some();
    match cell {
        "refused" => assert_eq!(
            (status, body["code"].as_i64(), body["msg"].as_str()),
            (200, Some(500), Some("The access token is wrong.")),
            "{what}: the matrix says refused; got {body}"
        ),
        "ok" if envelope => assert_eq!(body["code"], 200, "{what}: the matrix says ok; got {body}"),
        // Let through and acted on: the request fails for what it asks, not for its token.
        "answered" => assert!(
            envelope && body["code"] == 500 && body["msg"] != "The access token is wrong.",
            "{what}: the matrix says answered; got {status} {body}"
        ),
        _ => check(cell, status, what, &body),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admins_executor_facing_matrix_holds() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let (status, token) = root.post("/api/v1/tokens", json!({"name": "matrix"})).await;
    assert_eq!(status, 201, "{token}");
    let bearer = token["token"].as_str().expect("token secret").to_owned();
    let cookie = root.cookie.clone().expect("session cookie");
    let module = wat::parse_str(r#"(module (func (export "_start")))"#)?;
    env.store().put_wasm_module(&module, Utc::now().timestamp_millis()).await?;
    let digest = hex::encode(Sha256::digest(&module));

    let http = reqwest::Client::new();
    crate::http::health::wait_ready(&http, &env.admin.base).await;
    let registry = json!({"registryGroup": "EXECUTOR", "registryKey": "matrix-app", "registryValue": "http://127.0.0.1:9/"});
    for row in table("admin-executor") {
        let path = row.path.replace("{digest}", &digest);
        let body = if row.path.ends_with("/callback") { json!([]) } else { registry.clone() };
        let columns = [
            Credentials::None,
            Credentials::Token(WRONG_TOKEN),
            Credentials::Management { cookie: &cookie, bearer: &bearer },
            Credentials::Token(TOKEN),
        ];
        assert_eq!(row.cells.len(), columns.len(), "{}", row.name());
        for (credentials, cell) in columns.into_iter().zip(&row.cells) {
            let answer = send(&http, &env.admin.base, &row, &path, &body, credentials).await;
            judge(cell, answer, &format!("{} with {credentials:?}", row.name()));
        }
    }
    env.admin.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_executor_matrix_holds() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    // No admin: results stay spooled in the executor's directory, which this test discards.
    let config = ExecutorConfig::new("matrix", dir.path().join("logs"), Some(TOKEN.to_owned()));
    let mut handlers = Handlers::new();
    handlers.register("matrixNoop", |_ctx: JobContext| async move { Ok(()) });
    let (stop, stopped) = oneshot::channel::<()>();
    let executor = tokio::spawn(jobwheel_executor::run(config, handlers, listener, async move {
        let _ = stopped.await;
    }));

    let http = reqwest::Client::new();
    let now = Utc::now().timestamp_millis();
    for (n, row) in table("executor").into_iter().enumerate() {
        let columns = [Credentials::None, Credentials::Token(WRONG_TOKEN), Credentials::Token(TOKEN)];
        assert_eq!(row.cells.len(), columns.len(), "{}", row.name());
        for (m, (credentials, cell)) in columns.into_iter().zip(&row.cells).enumerate() {
            // A distinct log id per request, so an accepted /run is never a duplicate.
            let log_id = 1000 + n * 10 + m;
            let body = match row.path.as_str() {
                "/beat" | "/status" => json!(""),
                "/idleBeat" | "/kill" => json!({"jobId": 7}),
                "/log" => json!({"logDateTim": now, "logId": log_id, "fromLineNum": 1}),
                "/run" => json!({
                    "jobId": 7, "executorHandler": "matrixNoop", "executorParams": "",
                    "executorBlockStrategy": "SERIAL_EXECUTION", "executorTimeout": 0,
                    "logId": log_id, "logDateTime": now, "glueType": "BEAN", "glueSource": "",
                    "glueUpdatetime": now, "broadcastIndex": 0, "broadcastTotal": 1
                }),
                "/healthz" | "/readyz" | "/metrics" => Value::Null,
                // A record that does not parse: refused for that, once the token let it in.
                "/replay" => json!({
                    "module": {"digest": "0".repeat(64), "url": "api/wasm/x", "size": 1},
                    "record": "{}", "digestKey": "00", "timeoutMs": 1000
                }),
                other => panic!("no request body for executor path {other}"),
            };
            let answer = send(&http, &base, &row, &row.path, &body, credentials).await;
            judge(cell, answer, &format!("{} with {credentials:?}", row.name()));
        }
    }
    let _ = stop.send(());
    executor.await??;
    Ok(())
}
