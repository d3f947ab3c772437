//! Each vendor's webhook format and signature, and how its answer tells success (docs/alarms.md
//! links each vendor's page):
//!
//! - **DingTalk** custom robot: `{"msgtype":"markdown","markdown":{"title","text"},"at":{…}}`;
//!   signed: `timestamp` (ms) and `sign` = Base64(HMAC-SHA256(key = secret, `timestamp\nsecret`))
//!   in the query; success is `errcode` 0.
//! - **Feishu/Lark** custom bot: `{"msg_type":"text","content":{"text"}}`; signed: `timestamp`
//!   (s) and `sign` = Base64(HMAC-SHA256(key = `timestamp\nsecret`, empty message)) in the body;
//!   success is `code` 0 (older bots: `StatusCode` 0).
//! - **WeCom** group robot: `{"msgtype":"markdown","markdown":{"content"}}`; `errcode` 0.
//! - **Slack** incoming webhook: `{"text", "blocks":[section mrkdwn]}`; answers `ok`.
//! - **Generic webhook**: the channel's template rendered with the notice (or the notice as
//!   JSON); with a key, `X-Jobwheel-Timestamp` (s) and `X-Jobwheel-Signature:
//!   sha256=hex(HMAC-SHA256(key, "{timestamp}.{body}"))`; any 2xx.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use super::channel::{ChannelKind, ChannelSecret, ChannelSettings};
use super::notice::{EventKind, Notice, escape_markdown, escape_slack};

/// Header carrying the generic webhook's timestamp (epoch seconds).
pub const TIMESTAMP_HEADER: &str = "X-Jobwheel-Timestamp";
/// Header carrying the generic webhook's signature.
pub const SIGNATURE_HEADER: &str = "X-Jobwheel-Signature";
/// Work a template may do before it is stopped (minijinja fuel: roughly instructions).
const TEMPLATE_FUEL: u64 = 100_000;
/// WeCom refuses markdown over 4 096 bytes; the others have similar limits.
const MAX_TEXT: usize = 4000;

/// One request to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The URL with any query signature (secret: never logged or stored).
    pub url: String,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// `Content-Type`.
    pub content_type: String,
    /// The body (stored in the delivery log as what was sent).
    pub body: String,
}

/// Why a request could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The generic webhook's template does not compile or render.
    #[error("template: {0}")]
    Template(String),
    /// The stored URL does not parse.
    #[error("the channel's URL is not a valid http(s) URL")]
    Url,
}

fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length.
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

/// Cuts `text` to at most `MAX_TEXT` bytes on a character boundary.
fn cut(mut text: String) -> String {
    if text.len() > MAX_TEXT {
        let mut end = MAX_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// The request `kind` sends for `notice` with `folded` events folded into it, at `now_ms`.
pub fn build(
    kind: ChannelKind,
    settings: &ChannelSettings,
    secret: &ChannelSecret,
    notice: &Notice,
    folded: i32,
    now_ms: i64,
) -> Result<Outgoing, BuildError> {
    let key = secret.signing_key.as_deref().filter(|k| !k.is_empty());
    let mut url = reqwest::Url::parse(&secret.url).map_err(|_| BuildError::Url)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(BuildError::Url);
    }
    let json_body = |v: Value| v.to_string();
    let (body, content_type, headers) = match kind {
        ChannelKind::Dingtalk => {
            if let Some(key) = key {
                let timestamp = now_ms.to_string();
                let sign =
                    BASE64.encode(hmac_sha256(key.as_bytes(), format!("{timestamp}\n{key}").as_bytes()));
                url.query_pairs_mut().append_pair("timestamp", &timestamp).append_pair("sign", &sign);
            }
            let mut text = cut(notice.markdown(folded, "### ", escape_markdown));
            for mobile in &settings.at_mobiles {
                text.push_str(&format!(" @{mobile}"));
            }
            let body = json!({
                "msgtype": "markdown",
                "markdown": { "title": notice.subject_line(), "text": text },
                "at": { "atMobiles": settings.at_mobiles, "isAtAll": settings.at_all },
            });
            (json_body(body), "application/json", Vec::new())
        }
        ChannelKind::Feishu => {
            let mut body = json!({ "msg_type": "text", "content": { "text": cut(notice.text(folded)) } });
            if let Some(key) = key {
                let timestamp = (now_ms / 1000).to_string();
                let sign = BASE64.encode(hmac_sha256(format!("{timestamp}\n{key}").as_bytes(), b""));
                body["timestamp"] = json!(timestamp);
                body["sign"] = json!(sign);
            }
            (json_body(body), "application/json", Vec::new())
        }
        ChannelKind::Wecom => {
            let colour = if notice.event_kind().is_some_and(EventKind::is_good) { "info" } else { "warning" };
            let mut text =
                format!("<font color=\"{colour}\">**{}**</font>\n", escape_markdown(&notice.subject_line()));
            for (label, value) in notice.lines(folded) {
                text.push_str(&format!("\n> {label}: {}", escape_markdown(&value.replace('\n', " "))));
            }
            let body = json!({ "msgtype": "markdown", "markdown": { "content": cut(text) } });
            (json_body(body), "application/json", Vec::new())
        }
        ChannelKind::Slack => {
            let text = cut(notice.markdown(folded, "*", escape_slack));
            let body = json!({
                "text": escape_slack(&notice.subject_line()),
                "blocks": [ { "type": "section", "text": { "type": "mrkdwn", "text": text } } ],
            });
            (json_body(body), "application/json", Vec::new())
        }
        ChannelKind::Webhook => {
            let body = render_template(settings.template.as_deref(), notice, folded)?;
            let mut headers = Vec::new();
            if let Some(key) = key {
                let timestamp = (now_ms / 1000).to_string();
                let signed = hmac_sha256(key.as_bytes(), format!("{timestamp}.{body}").as_bytes());
                headers.push((TIMESTAMP_HEADER.to_owned(), timestamp));
                headers.push((SIGNATURE_HEADER.to_owned(), format!("sha256={}", hex::encode(signed))));
            }
            let content_type = settings.content_type.as_deref().unwrap_or("application/json");
            return Ok(Outgoing { url: url.into(), headers, content_type: content_type.to_owned(), body });
        }
        ChannelKind::Email => return Err(BuildError::Url),
    };
    Ok(Outgoing { url: url.into(), headers, content_type: content_type.to_owned(), body })
}

/// The generic webhook's body: `template` rendered with the notice's fields and `folded`, or
/// the notice as JSON (with `folded`) when there is no template.
pub fn render_template(template: Option<&str>, notice: &Notice, folded: i32) -> Result<String, BuildError> {
    let mut context = serde_json::to_value(notice).unwrap_or_default();
    context["folded"] = json!(folded);
    context["subjectLine"] = json!(notice.subject_line());
    context["text"] = json!(notice.text(folded));
    let Some(template) = template.filter(|t| !t.trim().is_empty()) else {
        return Ok(context.to_string());
    };
    // Memory: no operator or builtin that multiplies text, and the output capped (N8).
    super::template_guard::refuse_amplifiers(template).map_err(BuildError::Template)?;
    let mut env = minijinja::Environment::new();
    env.set_fuel(Some(TEMPLATE_FUEL));
    // JSON bodies are the common case: `{{ message|tojson }}` escapes a value for them.
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    let tmpl = env.template_from_str(template).map_err(|e| BuildError::Template(e.to_string()))?;
    let mut out = super::template_guard::CappedWriter::default();
    tmpl.render_captured_to(&context, &mut out).map_err(|e| BuildError::Template(e.to_string()))?;
    Ok(String::from_utf8_lossy(&out.bytes).into_owned())
}

/// Checks a template at save time by rendering it with a sample notice.
pub fn check_template(template: &str) -> Result<(), BuildError> {
    let sample = Notice {
        kind: EventKind::Failed.as_str().to_owned(),
        title: "sample".to_owned(),
        job_id: Some(1),
        message: Some("sample".to_owned()),
        ..Notice::default()
    };
    render_template(Some(template), &sample, 0).map(|_| ())
}

/// Whether the answer (`status`, `body`) of `kind`'s endpoint means the message was accepted.
/// DingTalk, Feishu and WeCom answer HTTP 200 with an error code in the body for refusals
/// (a bad signature, a keyword mismatch, a rate limit), so the body decides for them.
pub fn accepted(kind: ChannelKind, status: u16, body: &str) -> Result<(), String> {
    if !(200..300).contains(&status) {
        return Err(format!("answered HTTP {status}"));
    }
    let code = |field: &str| serde_json::from_str::<Value>(body).ok().and_then(|v| v.get(field)?.as_i64());
    match kind {
        ChannelKind::Dingtalk | ChannelKind::Wecom => match code("errcode") {
            Some(0) => Ok(()),
            Some(c) => Err(format!("errcode {c}")),
            None => Err("the answer has no errcode".to_owned()),
        },
        ChannelKind::Feishu => match code("code").or_else(|| code("StatusCode")) {
            Some(0) => Ok(()),
            Some(c) => Err(format!("code {c}")),
            None => Err("the answer has no code".to_owned()),
        },
        ChannelKind::Slack | ChannelKind::Webhook | ChannelKind::Email => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_renders_the_notice_and_a_bad_one_is_refused() {
        let notice =
            Notice { kind: "FAILED".into(), title: "etl \"x\"".into(), job_id: Some(7), ..Notice::default() };
        let body = render_template(
            Some("{\"job\": {{ jobId }}, \"t\": {{ title|tojson }}, \"n\": {{ folded }}}"),
            &notice,
            3,
        )
        .unwrap();
        assert_eq!(body, "{\"job\": 7, \"t\": \"etl \\\"x\\\"\", \"n\": 3}");
        assert!(check_template("{{ unclosed").is_err());
        assert!(
            check_template(
                "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"
            )
            .is_err()
        );
    }

    #[test]
    fn vendor_answers_decide_by_their_codes() {
        assert!(accepted(ChannelKind::Dingtalk, 200, r#"{"errcode":0,"errmsg":"ok"}"#).is_ok());
        assert!(
            accepted(ChannelKind::Dingtalk, 200, r#"{"errcode":310000,"errmsg":"sign not match"}"#).is_err()
        );
        assert!(accepted(ChannelKind::Feishu, 200, r#"{"code":19021,"msg":"sign match fail"}"#).is_err());
        assert!(accepted(ChannelKind::Feishu, 200, r#"{"StatusCode":0}"#).is_ok());
        assert!(accepted(ChannelKind::Slack, 404, "no_service").is_err());
    }
}
