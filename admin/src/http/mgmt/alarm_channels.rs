//! `/api/v1/alarm-channels` (docs/alarms.md): administrators configure channels and try them
//! (what was delivered: `alarm_deliveries.rs`). Signed-in users list channels'
//! names and kinds (the job form offers them). A channel's URL and signing key are sealed on
//! the way in and never shown again: a read says whether they are set and the URL's host.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::ApiJson;
use super::auth::Principal;
use crate::alarm::outbox::{self, Raise};
use crate::alarm::{ChannelKind, ChannelSecret, ChannelSettings, EventKind, Notice, vendors};
use crate::http::{ApiError, MgmtState};
use crate::store::{ChannelId, ChannelRow, NewChannel};

const NAME_MAX: usize = 64;
const SECRET_MAX: usize = 2048;
const TEMPLATE_MAX: usize = 16 * 1024;
/// Longest folding window: a day.
const FOLD_MAX: i64 = 86_400;
const DEFAULT_FOLD: i64 = 300;

/// A channel as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ChannelView {
    id: i64,
    name: String,
    kind: String,
    #[serde(flatten)]
    settings: ChannelSettings,
    events: Vec<String>,
    fold_secs: i32,
    enabled: bool,
    /// Whether a URL is stored, and its host (the rest may be a credential).
    url_set: bool,
    url_host: Option<String>,
    signing_key_set: bool,
    update_time: i64,
}

/// The channel form. `url` and `signingKey` absent keep the stored ones; `signingKey: ""`
/// removes it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ChannelInput {
    name: String,
    kind: String,
    #[serde(flatten)]
    settings: ChannelSettings,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    signing_key: Option<String>,
    #[serde(default)]
    events: Option<Vec<String>>,
    #[serde(default)]
    fold_secs: Option<i64>,
    #[serde(default)]
    enabled: Option<bool>,
}

pub(super) fn bad(field: &str, rule: impl std::fmt::Display) -> ApiError {
    ApiError::BadRequest(format!("{field}: {rule}"))
}

fn view(state: &MgmtState, row: ChannelRow, admin: bool) -> ChannelView {
    let c = row.channel;
    let secret: ChannelSecret = state
        .secret_box
        .open_channel(&c.name, &c.sealed)
        .ok()
        .and_then(|plain| serde_json::from_str(&plain).ok())
        .unwrap_or_default();
    let url_host = reqwest::Url::parse(&secret.url).ok().and_then(|u| u.host_str().map(str::to_owned));
    let settings =
        if admin { serde_json::from_str(&c.config).unwrap_or_default() } else { ChannelSettings::default() };
    ChannelView {
        id: row.id.0,
        name: c.name,
        kind: c.kind,
        settings,
        events: c.events.split(',').filter(|e| !e.is_empty()).map(str::to_owned).collect(),
        fold_secs: c.fold_secs,
        enabled: c.enabled.is_on(),
        url_set: !secret.url.is_empty(),
        url_host: url_host.filter(|_| admin),
        signing_key_set: secret.signing_key.is_some(),
        update_time: c.update_ms,
    }
}

/// The stored row of a form, `current` being the stored channel it replaces.
fn checked(
    state: &MgmtState,
    input: ChannelInput,
    current: Option<&ChannelRow>,
) -> Result<NewChannel, ApiError> {
    let name = input.name.trim().to_owned();
    if name.is_empty() || name.chars().count() > NAME_MAX {
        return Err(bad("name", format!("1 to {NAME_MAX} characters")));
    }
    let kind = ChannelKind::parse(input.kind.trim())
        .ok_or_else(|| bad("kind", "must be email, dingtalk, feishu, wecom, slack or webhook"))?;
    let mut settings = input.settings;
    settings.recipients.retain(|r| !r.trim().is_empty());
    if let Some(r) = settings.recipients.iter().find(|r| !r.contains('@') || r.len() > 255) {
        return Err(bad("recipients", format!("{r:?} is not a mail address")));
    }
    if let Some(m) = settings
        .at_mobiles
        .iter()
        .find(|m| m.len() > 32 || !m.chars().all(|c| c.is_ascii_digit() || c == '+' || c == '-'))
    {
        return Err(bad("atMobiles", format!("{m:?} is not a mobile number")));
    }
    if let Some(template) = settings.template.as_deref().filter(|t| !t.trim().is_empty()) {
        if template.len() > TEMPLATE_MAX {
            return Err(bad("template", format!("at most {TEMPLATE_MAX} bytes")));
        }
        vendors::check_template(template).map_err(|e| bad("template", e))?;
    } else {
        settings.template = None;
    }
    if let Some(ct) = &settings.content_type
        && (ct.len() > 100 || ct.chars().any(char::is_control))
    {
        return Err(bad("contentType", "at most 100 characters, one line"));
    }
    let events = match input.events {
        None => EventKind::DEFAULT.iter().map(|k| k.as_str().to_owned()).collect(),
        Some(events) => {
            let mut out: Vec<String> = Vec::new();
            for e in events {
                let kind = EventKind::parse(e.trim()).filter(|k| *k != EventKind::Test).ok_or_else(|| {
                    bad("events", format!("{e:?} is not an event; use FAILED, MISSED, LOST, OVERDUE, RECOVERED, WORKFLOW_FAILED, WORKFLOW_MISSED or WORKFLOW_OVERDUE"))
                })?;
                if !out.iter().any(|o| o == kind.as_str()) {
                    out.push(kind.as_str().to_owned());
                }
            }
            out
        }
    };
    let fold_secs = input.fold_secs.unwrap_or(DEFAULT_FOLD);
    if !(0..=FOLD_MAX).contains(&fold_secs) {
        return Err(bad("foldSecs", format!("must be 0 (no folding) to {FOLD_MAX} seconds")));
    }
    // The secrets: what the form gives, else what is stored (opened under the old name).
    let stored: ChannelSecret = match current {
        Some(row) if !row.channel.sealed.is_empty() => {
            let plain = state
                .secret_box
                .open_channel(&row.channel.name, &row.channel.sealed)
                .map_err(|e| ApiError::Conflict(e.to_string()))?;
            serde_json::from_str(&plain).unwrap_or_default()
        }
        _ => ChannelSecret::default(),
    };
    let url = match input.url.map(|u| u.trim().to_owned()) {
        Some(url) if !url.is_empty() => {
            let parsed = reqwest::Url::parse(&url).map_err(|_| bad("url", "not a valid URL"))?;
            if !matches!(parsed.scheme(), "http" | "https") || url.len() > SECRET_MAX {
                return Err(bad("url", format!("an http(s) URL of at most {SECRET_MAX} characters")));
            }
            url
        }
        _ => stored.url,
    };
    if kind.needs_url() && url.is_empty() {
        return Err(bad(
            "url",
            format!("required for a {} channel (the webhook address the vendor gave you)", kind.as_str()),
        ));
    }
    let signing_key = match input.signing_key {
        None => stored.signing_key,
        Some(key) if key.trim().is_empty() => None,
        Some(key) if key.len() > SECRET_MAX => {
            return Err(bad("signingKey", format!("at most {SECRET_MAX} characters")));
        }
        Some(key) => Some(key.trim().to_owned()),
    };
    if signing_key.is_some() && !kind.signs() {
        return Err(bad("signingKey", format!("a {} channel is not signed", kind.as_str())));
    }
    let secret = ChannelSecret { url, signing_key };
    let sealed = if kind.needs_url() {
        let plain = serde_json::to_string(&secret).map_err(ApiError::internal)?;
        state.secret_box.seal_channel(&name, &plain)
    } else {
        String::new()
    };
    Ok(NewChannel {
        name,
        kind: kind.as_str().to_owned(),
        config: serde_json::to_string(&settings).map_err(ApiError::internal)?,
        sealed,
        events: events.join(","),
        fold_secs: i32::try_from(fold_secs).unwrap_or(0),
        enabled: input.enabled.unwrap_or(true).into(),
        update_ms: state.clock.now_ms(),
    })
}

async fn load(state: &MgmtState, id: i64) -> Result<ChannelRow, ApiError> {
    state
        .store
        .load_channel(ChannelId(id))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("alarm channel {id} not found")))
}

fn taken(name: &str) -> ApiError {
    ApiError::Conflict(format!("name: an alarm channel named {name:?} exists already"))
}

/// `GET /api/v1/alarm-channels`.
pub(crate) async fn list(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
) -> Result<Json<Vec<ChannelView>>, ApiError> {
    let rows = state.store.list_channels().await?;
    Ok(Json(rows.into_iter().map(|r| view(&state, r, principal.is_admin())).collect()))
}

/// `GET /api/v1/alarm-channels/{id}`.
pub(crate) async fn get(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<Json<ChannelView>, ApiError> {
    Ok(Json(view(&state, load(&state, id).await?, principal.is_admin())))
}

/// `POST /api/v1/alarm-channels` (administrators).
pub(crate) async fn create(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiJson(input): ApiJson<ChannelInput>,
) -> Result<(StatusCode, Json<ChannelView>), ApiError> {
    principal.require_admin()?;
    let channel = checked(&state, input, None)?;
    let id = state.store.add_channel(&channel).await?.ok_or_else(|| taken(&channel.name))?;
    Ok((StatusCode::CREATED, Json(view(&state, load(&state, id.0).await?, true))))
}

/// `PUT /api/v1/alarm-channels/{id}` (administrators).
pub(crate) async fn update(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
    ApiJson(input): ApiJson<ChannelInput>,
) -> Result<Json<ChannelView>, ApiError> {
    principal.require_admin()?;
    let current = load(&state, id).await?;
    let channel = checked(&state, input, Some(&current))?;
    if let Some(other) = state.store.find_channel(&channel.name).await?
        && other.id != current.id
    {
        return Err(taken(&channel.name));
    }
    state.store.update_channel(current.id, &channel).await?;
    Ok(Json(view(&state, load(&state, id).await?, true)))
}

/// `DELETE /api/v1/alarm-channels/{id}` (administrators): refused while a job, group or
/// workflow chooses it; its deliveries stay in the log.
pub(crate) async fn delete(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<StatusCode, ApiError> {
    principal.require_admin()?;
    let current = load(&state, id).await?;
    let users: Vec<String> = state
        .store
        .all_routes()
        .await?
        .into_iter()
        .filter(|r| r.channel_ids().contains(&current.id))
        .map(|r| format!("{} {}", r.scope, r.target_id))
        .collect();
    if !users.is_empty() {
        return Err(ApiError::Conflict(format!(
            "alarm channel {:?} is chosen by {}; remove it there first",
            current.channel.name,
            users.join(", ")
        )));
    }
    state.store.delete_channel(current.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// What a test queued.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TestReply {
    id: i64,
    queued: usize,
}

/// `POST /api/v1/alarm-channels/{id}/test` (administrators): queues a test message, delivered
/// within a second or so and shown in the delivery log.
pub(crate) async fn test(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<(StatusCode, Json<TestReply>), ApiError> {
    principal.require_admin()?;
    let channel = load(&state, id).await?;
    if !channel.channel.enabled.is_on() {
        return Err(ApiError::Conflict(format!("alarm channel {:?} is disabled", channel.channel.name)));
    }
    let now_ms = state.clock.now_ms();
    let notice = Notice {
        kind: EventKind::Test.as_str().to_owned(),
        title: channel.channel.name.clone(),
        message: Some(format!("Sent from jobwheel by {} to try this channel.", principal.user.user.username)),
        at_ms: now_ms,
        ..Notice::default()
    };
    let raise = Raise {
        key: format!("TEST:channel:{id}:{now_ms}:{:08x}", rand::random::<u32>()),
        subject: format!("test:{id}"),
        notice,
        channels: vec![channel.id],
        upstream: Vec::new(),
        fold: false,
    };
    let queued = outbox::raise(state.store.as_ref(), &raise, now_ms).await?.queued;
    Ok((StatusCode::ACCEPTED, Json(TestReply { id, queued })))
}

/// A channel as the API shows it, for the audit log (never its secrets).
pub(crate) struct ChannelSnapshot;

#[async_trait::async_trait]
impl super::audit::AuditSnapshot for ChannelSnapshot {
    async fn read(&self, state: &MgmtState, id: i64) -> Result<Option<serde_json::Value>, ApiError> {
        match state.store.load_channel(ChannelId(id)).await? {
            Some(row) => Ok(Some(super::audit::to_json(view(state, row, true))?)),
            None => Ok(None),
        }
    }
}
