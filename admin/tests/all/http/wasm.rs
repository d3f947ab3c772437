//! `GET /api/wasm/{digest}`: module bytes for executors, behind the access token.

use std::sync::Arc;

use jobwheel_admin::protocol::ACCESS_TOKEN_HEADER;
use serde_json::{Value, json};

use crate::http::{Admin, RecordingCore, TOKEN, sqlite_url, test_config};

#[tokio::test]
async fn modules_are_served_by_digest_to_token_holders() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let admin =
        Admin::start(test_config(&sqlite_url(dir.path())), Arc::new(RecordingCore::default())).await?;
    // Any bytes will do: the admin serves what it stored, validation happens at upload.
    let bytes = b"\0asm\x01\0\0\0 module bytes".to_vec();
    let put = admin.store.put_wasm_module(&bytes, 1_700_000_000_000).await?;
    let unknown = "0".repeat(64);

    for prefix in ["", "/xxl-job-admin"] {
        let url = admin.url(&format!("{prefix}/api/wasm/{}", put.digest));
        let response = admin.http.get(&url).header(ACCESS_TOKEN_HEADER, TOKEN).send().await?;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "application/wasm");
        assert_eq!(response.bytes().await?.as_ref(), bytes.as_slice());

        let cases = [
            (put.digest.as_str(), None, 401, "The access token is wrong.".to_owned()),
            (put.digest.as_str(), Some("wrong"), 401, "The access token is wrong.".to_owned()),
            (unknown.as_str(), Some(TOKEN), 404, format!("no wasm module with digest {unknown}")),
            (
                "ABC",
                Some(TOKEN),
                400,
                "invalid module digest \"ABC\": expected 64 lower-case hex characters (SHA-256)".to_owned(),
            ),
        ];
        for (digest, token, status, msg) in cases {
            let mut request = admin.http.get(admin.url(&format!("{prefix}/api/wasm/{digest}")));
            if let Some(token) = token {
                request = request.header(ACCESS_TOKEN_HEADER, token);
            }
            let response = request.send().await?;
            assert_eq!(response.status(), status, "{digest} {token:?}");
            assert_eq!(response.json::<Value>().await?, json!({"code": status, "msg": msg}));
        }

        let response = admin.http.post(&url).header(ACCESS_TOKEN_HEADER, TOKEN).send().await?;
        assert_eq!(response.status(), 405);
        assert_eq!(response.json::<Value>().await?["code"], 405);
    }
    admin.stop().await
}
