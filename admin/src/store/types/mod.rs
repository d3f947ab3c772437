//! Row and input types of the store: plain data mirroring upstream's columns, no serialization
//! (rows are not a wire contract; the HTTP layer has its own request/response types).
//!
//! Upstream `datetime` columns are `Option<DateTime<Utc>>` (second precision; NULL is legal in
//! upstream's DDL and in adopted databases); upstream's `bigint` millisecond columns
//! (`trigger_last_time`, `trigger_next_time`) and every time in jobwheel's own tables are `i64`
//! epoch milliseconds. Enum-like columns stay strings/integers: an adopted database may hold
//! values this version does not know, and interpreting them is the scheduler's business.

use chrono::{DateTime, Utc};

mod alarms;
mod audit;
mod backfills;
mod calendars;
mod credentials;
mod grants;
mod jobs;
mod logs;
mod retry;
mod workflow_items;
mod workflows;

pub use alarms::*;
pub use audit::*;
pub use backfills::*;
pub use calendars::*;
pub use credentials::*;
pub use grants::*;
pub use jobs::*;
pub use logs::*;
pub use retry::*;
pub use workflow_items::*;
pub use workflows::*;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, sqlx::Type)]
        #[sqlx(transparent)]
        pub struct $name(pub $inner);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id_type!(
    /// `xxl_job_group.id`.
    GroupId(i32)
);
id_type!(
    /// `xxl_job_info.id`.
    JobId(i32)
);
id_type!(
    /// `xxl_job_log.id`, the `logId` executors see.
    LogId(i64)
);
id_type!(
    /// `xxl_job_user.id`.
    UserId(i32)
);
id_type!(
    /// `jobwheel_ring_claim.id`.
    ClaimId(i64)
);
id_type!(
    /// `jobwheel_calendar.id`.
    CalendarId(i64)
);
id_type!(
    /// `jobwheel_alarm_channel.id`.
    ChannelId(i64)
);
id_type!(
    /// `jobwheel_alarm_event.id`.
    EventId(i64)
);
id_type!(
    /// `jobwheel_alarm_delivery.id`.
    DeliveryId(i64)
);
id_type!(
    /// `jobwheel_workflow.id`.
    WorkflowId(i64)
);
id_type!(
    /// `jobwheel_workflow_instance.id`.
    InstanceId(i64)
);
id_type!(
    /// `jobwheel_workflow_run.id`: one attempt of one node.
    RunId(i64)
);

/// One page of a list: `LIMIT limit OFFSET offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Rows to skip.
    pub offset: u32,
    /// Rows to return at most.
    pub limit: u32,
}

/// A page of rows plus the number of rows matching the filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Paged<T> {
    /// The rows of this page.
    pub rows: Vec<T>,
    /// All matching rows.
    pub total: u64,
}

// === groups and registry ===

/// `xxl_job_group` without its id.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Group {
    /// AppName; executors register under it.
    pub app_name: String,
    /// Display name.
    pub title: String,
    /// 0 automatic registration, 1 manual entry.
    pub address_type: i16,
    /// Comma-separated addresses (automatic groups: rewritten by the registry monitor).
    pub address_list: Option<String>,
    /// Last change.
    #[sqlx(try_from = "crate::store::time::DbSecs")]
    pub update_time: Option<DateTime<Utc>>,
}

/// A stored `xxl_job_group` row.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct GroupRow {
    /// Primary key.
    pub id: GroupId,
    /// The columns.
    #[sqlx(flatten)]
    pub group: Group,
    /// jobwheel: at most this many runs of the group in flight (`jobwheel_group_cap`); `None`:
    /// no cap.
    pub max_running: Option<i32>,
}

/// A group's access token as stored, with the group's AppName.
#[derive(Clone, PartialEq, Eq)]
pub struct GroupTokenRow {
    /// The group.
    pub group_id: GroupId,
    /// Its AppName, the name 3.5-style callers present with the token.
    pub app_name: String,
    /// The token.
    pub token: StoredToken,
}

/// Where and how a group's access token is kept.
#[derive(Clone, PartialEq, Eq)]
pub enum StoredToken {
    /// Sealed with the admin's secret key (`crate::sealing`) in `jobwheel_group_token`: on
    /// every schema but 3.5's.
    Sealed(String),
    /// In the clear in `xxl_job_group.access_token`, where an xxl-job 3.5 admin keeps it and
    /// reads it (`Schema::group_token_column`).
    Plain(String),
}

impl std::fmt::Debug for StoredToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StoredToken::Sealed(_) => "Sealed(..)",
            StoredToken::Plain(_) => "Plain(..)",
        })
    }
}

// Sealed, but still never printed.
impl std::fmt::Debug for GroupTokenRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupTokenRow")
            .field("group_id", &self.group_id)
            .field("app_name", &self.app_name)
            .finish_non_exhaustive()
    }
}

/// The identity of an `xxl_job_registry` row (its unique key `i_g_k_v`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryKey {
    /// `EXECUTOR` for executors.
    pub registry_group: String,
    /// The executor's AppName.
    pub registry_key: String,
    /// The executor's address.
    pub registry_value: String,
}

/// A stored `xxl_job_registry` row.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct RegistryRow {
    /// Primary key.
    pub id: i64,
    /// `EXECUTOR` for executors.
    pub registry_group: String,
    /// AppName.
    pub registry_key: String,
    /// Address.
    pub registry_value: String,
    /// Last heartbeat.
    #[sqlx(try_from = "crate::store::time::DbSecs")]
    pub update_time: Option<DateTime<Utc>>,
}

// === users ===

/// `xxl_job_user` without its id.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct User {
    /// Login name (unique).
    pub username: String,
    /// Password hash, opaque to the store.
    pub password: String,
    /// Current login token signature.
    pub token: Option<String>,
    /// 0 normal, 1 admin.
    pub role: i16,
    /// Comma-separated group ids a normal user may manage.
    pub permission: Option<String>,
}

/// A stored `xxl_job_user` row.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct UserRow {
    /// Primary key.
    pub id: UserId,
    /// The columns.
    #[sqlx(flatten)]
    pub user: User,
}

/// Filters of the user list; `None` means "any".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserFilter {
    /// `username LIKE %…%`.
    pub username: Option<String>,
    /// `role =`.
    pub role: Option<i16>,
}

// === wasm modules ===

/// Result of storing a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WasmPut {
    /// Lower-case hex SHA-256 of the bytes.
    pub digest: String,
    /// False when a module with that digest was already stored (nothing was written).
    pub inserted: bool,
}

/// A stored `jobwheel_wasm_module` row.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct WasmModuleRow {
    /// Primary key.
    pub id: i64,
    /// Lower-case hex SHA-256 of `bytes`.
    pub digest: String,
    /// The module.
    pub bytes: Vec<u8>,
    /// `bytes.len()`.
    pub size: i64,
    /// Upload time, epoch ms.
    pub created_at_ms: i64,
}

/// A version-history entry to add for a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWasmVersion {
    /// The job.
    pub job_id: JobId,
    /// Module digest.
    pub digest: String,
    /// Who uploaded it.
    pub uploader: Option<String>,
    /// Remark.
    pub remark: Option<String>,
    /// Epoch ms.
    pub created_at_ms: i64,
    /// A candidate (docs/replay.md, "What-if"): stored and replayable, never what a trigger runs.
    pub candidate: bool,
}

/// A job's current Wasm module without its bytes (`jobwheel_wasm_version` ⋈ `jobwheel_wasm_module`).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CurrentWasmModule {
    /// Lower-case hex SHA-256.
    pub digest: String,
    /// Bytes.
    pub size: i64,
}

/// A stored `jobwheel_wasm_version` row.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct WasmVersionRow {
    /// Primary key.
    pub id: i64,
    /// The job.
    pub job_id: JobId,
    /// Module digest.
    pub digest: String,
    /// Who uploaded it.
    pub uploader: Option<String>,
    /// Remark.
    pub remark: Option<String>,
    /// Epoch ms.
    pub created_at_ms: i64,
    /// 1 for a candidate (not what a trigger runs).
    pub candidate: i16,
}
