//! The management API (`/api/v1`, docs/api.md) through real HTTP: an admin with the scheduling
//! engine on a temporary SQLite database, users created through the store, and a client that
//! logs in like the web UI (session cookie + CSRF header) or calls with an API token.

use jobwheel_admin::secrets::hash_password;
use jobwheel_admin::store::{Group, GroupId, Store, User, UserId};
use reqwest::Method;
use serde_json::{Value, json};

use std::sync::Arc;

use jobwheel_admin::clock::ManualClock;

use crate::http::store_only_core::StoreOnlyCore;
use crate::http::{Admin, sqlite_url, test_config};

mod adoption;
mod alarm_channels;
mod approvals;
mod audit;
mod authz;
mod backfills;
mod calendars;
mod dashboard;
mod flights;
mod glue;
mod glue_java;
mod grants;
mod group_tokens;
mod groups;
mod job_tags;
mod jobs;
mod limits;
mod logs;
mod map_nodes;
pub(crate) mod matrix;
mod matrix_workflows;
mod matrix_world;
mod mcp;
mod openapi_jobs;
mod priority;
mod recording_executor;
mod session;
mod sharing;
mod sso_ldap;
mod sso_oidc;
mod sub_workflows;
mod tokens;
mod transfer;
mod trigger_addresses;
mod users;
mod wasm;
mod workflow_approvals;
mod workflows;

/// Password of every user made by [`add_user`].
pub(crate) const PASSWORD: &str = "secret-pw";

/// A running admin with its engine, plus the directory holding its database.
pub(crate) struct Env {
    pub(crate) admin: Admin,
    /// The database URL (the admin's own).
    pub(crate) url: String,
    _dir: tempfile::TempDir,
}

impl Env {
    pub(crate) async fn start() -> anyhow::Result<Self> {
        Self::start_configured(|_| {}).await
    }

    /// Like [`start`](Self::start), with the test configuration changed by `configure` first.
    pub(crate) async fn start_configured(
        configure: impl FnOnce(&mut jobwheel_admin::config::AdminConfig),
    ) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let url = sqlite_url(dir.path());
        let mut config = test_config(&url);
        configure(&mut config);
        let admin = Admin::start_engine(config).await?;
        Ok(Self { admin, url, _dir: dir })
    }

    /// An admin without a scheduling engine whose core decides by `clock`, which its HTTP edge
    /// reads too: a test steps session lifetimes and throttle windows without waiting.
    pub(crate) async fn start_on_clock(clock: Arc<ManualClock>) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let url = sqlite_url(dir.path());
        let admin = Admin::start_with(test_config(&url), move |store| {
            Arc::new(StoreOnlyCore::on_clock(store, clock)) as Arc<dyn jobwheel_admin::http::AdminCore>
        })
        .await?;
        Ok(Self { admin, url, _dir: dir })
    }

    /// An admin with its engine on the existing database at `url`.
    pub(crate) async fn start_on(url: &str) -> anyhow::Result<Self> {
        Self::start_on_configured(url, |_| {}).await
    }

    /// Like [`start_on`](Self::start_on), with the test configuration changed by `configure`.
    pub(crate) async fn start_on_configured(
        url: &str,
        configure: impl FnOnce(&mut jobwheel_admin::config::AdminConfig),
    ) -> anyhow::Result<Self> {
        let mut config = test_config(url);
        configure(&mut config);
        let admin = Admin::start_engine(config).await?;
        Ok(Self { admin, url: url.to_owned(), _dir: tempfile::tempdir()? })
    }

    pub(crate) fn store(&self) -> &dyn Store {
        &*self.admin.store
    }

    /// An anonymous client.
    pub(crate) fn anonymous(&self) -> Client {
        Client {
            base: self.admin.base.clone(),
            http: reqwest::Client::new(),
            cookie: None,
            csrf: None,
            bearer: None,
        }
    }

    /// A client logged in as `username` (password [`PASSWORD`]).
    pub(crate) async fn login(&self, username: &str) -> Client {
        self.login_with(username, PASSWORD).await
    }

    /// A client logged in as `username` with `password`.
    pub(crate) async fn login_with(&self, username: &str, password: &str) -> Client {
        let mut client = self.anonymous();
        let response = client
            .request(Method::POST, "/api/v1/session")
            .json(&json!({"username": username, "password": password}))
            .send()
            .await
            .expect("admin answers");
        assert_eq!(response.status(), 200, "login of {username}");
        let cookie = response
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .expect("session cookie")
            .to_owned();
        let body: Value = response.json().await.expect("JSON");
        client.cookie = Some(cookie);
        client.csrf = body["csrfToken"].as_str().map(str::to_owned);
        client
    }

    /// An admin user (role 1).
    pub(crate) async fn admin_user(&self, username: &str) -> UserId {
        add_user(self.store(), username, 1, &[]).await
    }

    /// A normal user (role 0) permitted on `groups`.
    pub(crate) async fn normal_user(&self, username: &str, groups: &[GroupId]) -> UserId {
        add_user(self.store(), username, 0, groups).await
    }

    /// A group with a manual address list, written through the store.
    pub(crate) async fn group(&self, app_name: &str) -> GroupId {
        self.store()
            .add_group(&Group {
                app_name: app_name.to_owned(),
                title: app_name.to_owned(),
                address_type: 1,
                address_list: Some("http://127.0.0.1:9/".to_owned()),
                update_time: None,
            })
            .await
            .expect("group")
    }
}

pub(crate) async fn add_user(store: &dyn Store, username: &str, role: i16, groups: &[GroupId]) -> UserId {
    let permission = groups.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
    store
        .add_user(&User {
            username: username.to_owned(),
            password: hash_password(PASSWORD).expect("hash"),
            token: None,
            role,
            permission: (!permission.is_empty()).then_some(permission),
        })
        .await
        .expect("user")
}

/// A management API client.
#[derive(Clone)]
pub(crate) struct Client {
    base: String,
    http: reqwest::Client,
    pub(crate) cookie: Option<String>,
    pub(crate) csrf: Option<String>,
    pub(crate) bearer: Option<String>,
}

impl Client {
    /// The same client authenticating with an API token instead.
    pub(crate) fn with_token(&self, token: &str) -> Client {
        Client { cookie: None, csrf: None, bearer: Some(token.to_owned()), ..self.clone() }
    }

    /// A request with this client's credentials (cookie + CSRF header, or bearer token).
    pub(crate) fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        if let Some(csrf) = &self.csrf {
            request = request.header("x-csrf-token", csrf);
        }
        if let Some(token) = &self.bearer {
            request = request.bearer_auth(token);
        }
        request
    }

    /// Sends a JSON request; the status and the JSON reply (`null` for an empty body).
    pub(crate) async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.request(method, path);
        if let Some(body) = body {
            request = request.json(&body);
        }
        reply(request.send().await.expect("admin answers")).await
    }

    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        self.call(Method::GET, path, None).await
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(Method::POST, path, Some(body)).await
    }

    pub(crate) async fn put(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(Method::PUT, path, Some(body)).await
    }

    pub(crate) async fn delete(&self, path: &str) -> (u16, Value) {
        self.call(Method::DELETE, path, None).await
    }
}

/// Status and JSON body of a response; every error must be `{"code","msg"}` JSON.
pub(crate) async fn reply(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.expect("reply body");
    let json = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("reply {text:?} is not JSON: {e}"))
    };
    if status >= 400 {
        assert_eq!(json["code"], status, "error body carries the status: {json}");
        assert!(json["msg"].as_str().is_some_and(|m| !m.is_empty()), "error has a message: {json}");
    }
    (status, json)
}
