//! A local stand-in for each vendor's webhook endpoint (docs/alarms.md): it checks what the
//! vendor checks — the message format and, where the vendor signs, the signature computed here
//! independently of the admin's code — and answers as the vendor does (DingTalk `errcode
//! 310000` for a bad signature, Feishu `code 19021`, WeCom `errcode 40008` for a bad message,
//! Slack `400 invalid_payload`, the generic webhook 401).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// DingTalk's robot secret, Feishu's signing secret and the webhook's HMAC key in these tests.
pub(crate) const DINGTALK_SECRET: &str = "SECdingtalk-test-secret";
pub(crate) const FEISHU_SECRET: &str = "feishu-test-secret";
pub(crate) const HOOK_KEY: &str = "hook-test-key";

/// One request the receiver accepted or refused.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) body: Value,
    pub(crate) raw: String,
    /// What the receiver answered.
    pub(crate) accepted: bool,
}

#[derive(Default)]
struct Shared {
    seen: Mutex<Vec<Seen>>,
    /// Answers forced on the next requests to a path (path, status, body), before any check.
    forced: Mutex<VecDeque<(String, u16, String)>>,
}

/// The receiver: `url(path)` is a vendor's endpoint.
#[derive(Clone)]
pub(crate) struct Vendors {
    base: String,
    shared: Arc<Shared>,
}

fn hmac(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key");
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

impl Vendors {
    pub(crate) async fn start() -> anyhow::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = axum::Router::new().fallback(receive).with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Self { base, shared })
    }

    pub(crate) fn url(&self, path_and_query: &str) -> String {
        format!("{}{path_and_query}", self.base)
    }

    /// Every request so far to `path`.
    pub(crate) fn seen(&self, path: &str) -> Vec<Seen> {
        self.shared.seen.lock().expect("lock").iter().filter(|s| s.path == path).cloned().collect()
    }

    /// Answers the next request to `path` with `status` and `body`, whatever it is.
    pub(crate) fn force_next(&self, path: &str, status: u16, body: &str) {
        self.shared.forced.lock().expect("lock").push_back((path.to_owned(), status, body.to_owned()));
    }
}

async fn receive(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    Query(query): Query<std::collections::HashMap<String, String>>,
    headers: HeaderMap,
    raw: String,
) -> (StatusCode, String) {
    let body: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
    let path = uri.path().to_owned();
    let forced = {
        let mut queue = shared.forced.lock().expect("lock");
        let at = queue.iter().position(|(p, _, _)| *p == path);
        at.and_then(|i| queue.remove(i)).map(|(_, status, body)| (status, body))
    };
    let (status, answer) = forced.unwrap_or_else(|| judge(&path, &query, &headers, &raw, &body));
    let accepted =
        (200..300).contains(&status) && !answer.contains("\"errcode\":3") && !answer.contains("\"code\":19");
    shared.seen.lock().expect("lock").push(Seen { path, body, raw, accepted });
    (StatusCode::from_u16(status).expect("status"), answer)
}

/// What the vendor at `path` answers.
fn judge(
    path: &str,
    query: &std::collections::HashMap<String, String>,
    headers: &HeaderMap,
    raw: &str,
    body: &Value,
) -> (u16, String) {
    let text = |v: &Value| v.as_str().is_some_and(|s| !s.is_empty());
    match path {
        // https://open.dingtalk.com/document/robots/customize-robot-security-settings
        "/robot/send" => {
            let (Some(ts), Some(sign)) = (query.get("timestamp"), query.get("sign")) else {
                return (200, json!({"errcode": 310000, "errmsg": "sign not match"}).to_string());
            };
            let expected = BASE64
                .encode(hmac(DINGTALK_SECRET.as_bytes(), format!("{ts}\n{DINGTALK_SECRET}").as_bytes()));
            if *sign != expected || query.get("access_token").map(String::as_str) != Some("tok-dt") {
                return (200, json!({"errcode": 310000, "errmsg": "sign not match"}).to_string());
            }
            if body["msgtype"] != "markdown"
                || !text(&body["markdown"]["title"])
                || !text(&body["markdown"]["text"])
            {
                return (200, json!({"errcode": 40035, "errmsg": "缺少参数 json"}).to_string());
            }
            (200, json!({"errcode": 0, "errmsg": "ok"}).to_string())
        }
        // https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot
        "/open-apis/bot/v2/hook/fs-token" => {
            let ts = body["timestamp"].as_str().unwrap_or_default();
            let expected = BASE64.encode(hmac(format!("{ts}\n{FEISHU_SECRET}").as_bytes(), b""));
            if body["sign"].as_str() != Some(expected.as_str()) {
                return (200, json!({"code": 19021, "msg": "sign match fail or timestamp is not within one hour from current time"}).to_string());
            }
            if body["msg_type"] != "text" || !text(&body["content"]["text"]) {
                return (200, json!({"code": 9499, "msg": "Bad Request"}).to_string());
            }
            (200, json!({"code": 0, "msg": "success", "data": {}}).to_string())
        }
        // https://developer.work.weixin.qq.com/document/path/91770
        "/cgi-bin/webhook/send" => {
            let content = body["markdown"]["content"].as_str().unwrap_or_default();
            if body["msgtype"] != "markdown" || content.is_empty() || content.len() > 4096 {
                return (200, json!({"errcode": 40008, "errmsg": "invalid message type"}).to_string());
            }
            (200, json!({"errcode": 0, "errmsg": "ok"}).to_string())
        }
        // https://api.slack.com/messaging/webhooks
        "/services/T000/B000/XXXX" => {
            if !text(&body["text"]) || body["blocks"][0]["text"]["type"] != "mrkdwn" {
                return (400, "invalid_payload".to_owned());
            }
            (200, "ok".to_owned())
        }
        "/hook" => {
            let header =
                |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
            let ts = header("x-jobwheel-timestamp");
            let expected = format!(
                "sha256={}",
                hex::encode(hmac(HOOK_KEY.as_bytes(), format!("{ts}.{raw}").as_bytes()))
            );
            if header("x-jobwheel-signature") != expected {
                return (401, "bad signature".to_owned());
            }
            (204, String::new())
        }
        _ => (404, "no such endpoint".to_owned()),
    }
}
