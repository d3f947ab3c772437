//! Alarm channels, routes, events and deliveries (`jobwheel_alarm_*`), and the sweeps' reads
//! of running logs and instances.

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::{
    AlarmStore, ChannelId, ChannelRow, DeliveryFilter, DeliveryId, DeliveryListRow, DeliveryOutcome,
    DeliveryRow, DeliveryStatus, EventId, EventRow, FailingJob, GroupId, InstanceRow, InstanceStatus, JobId,
    LogId, LogRow, NewChannel, NewDelivery, NewEvent, Page, Paged, RouteRow, StoreError,
};

macro_rules! channel_columns {
    () => {
        "SELECT id, name, kind, config, sealed, events, fold_secs, enabled, update_ms FROM jobwheel_alarm_channel"
    };
}
macro_rules! delivery_columns {
    () => {
        "d.id, d.event_id, d.channel_id, d.subject, d.status, d.due_ms, d.attempts, d.folded, d.folded_into, \
         d.lease_ms, d.created_ms, d.sent_ms, d.request, d.answer_code, d.answer"
    };
}
static LOAD: Sql = Sql::new(concat!(channel_columns!(), " WHERE id = ?"));
static FIND: Sql = Sql::new(concat!(channel_columns!(), " WHERE name = ?"));
static LIST: Sql = Sql::new(concat!(channel_columns!(), " ORDER BY name"));
static INSERT: Sql = Sql::new(
    "INSERT INTO jobwheel_alarm_channel (name, kind, config, sealed, events, fold_secs, enabled, update_ms) \
    VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
);
static UPDATE: Sql = Sql::new(
    "UPDATE jobwheel_alarm_channel SET name = ?, kind = ?, config = ?, sealed = ?, events = ?, fold_secs = ?, \
    enabled = ?, update_ms = ? WHERE id = ?",
);
static DELETE: Sql = Sql::new("DELETE FROM jobwheel_alarm_channel WHERE id = ?");

static SET_ROUTE: Sql = Sql::new(
    "INSERT INTO jobwheel_alarm_route (scope, target_id, channels, done_within_secs) VALUES (?, ?, ?, ?) \
    ON CONFLICT (scope, target_id) DO UPDATE SET channels = excluded.channels, \
    done_within_secs = excluded.done_within_secs",
);
static DELETE_ROUTE: Sql = Sql::new("DELETE FROM jobwheel_alarm_route WHERE scope = ? AND target_id = ?");
static ALL_ROUTES: Sql = Sql::new(
    "SELECT scope, target_id, channels, done_within_secs FROM jobwheel_alarm_route ORDER BY scope, target_id",
);
static TIMED_ROUTES: Sql = Sql::new(
    "SELECT scope, target_id, channels, done_within_secs FROM jobwheel_alarm_route \
    WHERE scope = ? AND done_within_secs > 0 ORDER BY target_id",
);

static INSERT_EVENT: Sql = Sql::new(
    "INSERT INTO jobwheel_alarm_event (event_key, kind, subject, created_ms, notice) VALUES (?, ?, ?, ?, ?) \
    RETURNING id",
);
static EVENT_ID: Sql = Sql::new("SELECT id FROM jobwheel_alarm_event WHERE event_key = ?");
static LOAD_EVENT: Sql = Sql::new(
    "SELECT id, event_key, kind, subject, created_ms, notice FROM jobwheel_alarm_event WHERE id = ?",
);
static LAST_MESSAGE: Sql = Sql::new(concat!(
    "SELECT ",
    delivery_columns!(),
    " FROM jobwheel_alarm_delivery d WHERE d.channel_id = ? AND d.subject = ? AND d.status <> ? \
    ORDER BY d.id DESC LIMIT 1"
));
static INSERT_DELIVERY: Sql = Sql::new(
    "INSERT INTO jobwheel_alarm_delivery (event_id, channel_id, subject, status, due_ms, folded_into, \
    lease_ms, created_ms, request, answer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '') RETURNING id",
);
static FOLD: Sql = Sql::new("UPDATE jobwheel_alarm_delivery SET folded = folded + 1 WHERE id = ?");
static DUE: Sql = Sql::new(concat!(
    "SELECT ",
    delivery_columns!(),
    " FROM jobwheel_alarm_delivery d WHERE (d.status = ? AND d.due_ms <= ?) \
    OR (d.status = ? AND d.lease_ms <= ?) ORDER BY d.due_ms, d.id LIMIT ?"
));
/// Guarded by what the sweep read, so of two admins reading the same row one claims it.
static CLAIM: Sql = Sql::new(
    "UPDATE jobwheel_alarm_delivery SET status = ?, lease_ms = ? \
    WHERE id = ? AND status = ? AND lease_ms = ? AND attempts = ?",
);
static FINISH: Sql = Sql::new(
    "UPDATE jobwheel_alarm_delivery SET status = ?, due_ms = ?, attempts = ?, sent_ms = ?, request = ?, \
    answer_code = ?, answer = ?, lease_ms = 0 WHERE id = ?",
);
static LOAD_DELIVERY: Sql =
    Sql::new(concat!("SELECT ", delivery_columns!(), " FROM jobwheel_alarm_delivery d WHERE d.id = ?"));

static PURGE_DELIVERIES: Sql =
    Sql::new("DELETE FROM jobwheel_alarm_delivery WHERE created_ms < ? AND status NOT IN (?, ?)");
/// A derived table, because MySQL refuses a subquery on the table being deleted from (and the
/// events of deliveries still waiting stay).
static PURGE_EVENTS: Sql = Sql::new(
    "DELETE FROM jobwheel_alarm_event WHERE created_ms < ? AND id NOT IN \
    (SELECT event_id FROM (SELECT event_id FROM jobwheel_alarm_delivery) d)",
);
static MARK_FAILING: Sql = Sql::new(
    "INSERT INTO jobwheel_alarm_failing (job_id, log_id, since_ms) VALUES (?, ?, ?) \
    ON CONFLICT (job_id) DO UPDATE SET log_id = excluded.log_id, since_ms = excluded.since_ms",
);
static FAILING: Sql = Sql::new("SELECT job_id, log_id FROM jobwheel_alarm_failing ORDER BY job_id LIMIT ?");
static SUCCESS_AFTER: Sql = Sql::new(
    "SELECT id FROM xxl_job_log WHERE job_id = ? AND id > ? AND handle_code = 200 ORDER BY id LIMIT 1",
);
static CLEAR_FAILING: Sql = Sql::new("DELETE FROM jobwheel_alarm_failing WHERE job_id = ? AND log_id = ?");
/// Through `i_log_group_running (job_group, handle_code, trigger_code)`: only the group's
/// running logs are read, however long the job's history.
static RUNNING_BEFORE: Sql = Sql::new(concat!(
    "SELECT ",
    log_columns!(),
    " FROM xxl_job_log WHERE job_group = ? AND handle_code = 0 AND trigger_code = 200 AND job_id = ? \
    AND trigger_time <= TS(?) ORDER BY id LIMIT ?"
));
static INSTANCES_BEFORE: Sql = Sql::new(
    "SELECT id, workflow_id, status, trigger_type, rerun_of, parent_instance, parent_run, fire_time_ms, start_ms, end_ms, \
         graph, context \
    FROM jobwheel_workflow_instance WHERE workflow_id = ? AND status = ? AND start_ms < ? ORDER BY id LIMIT ?",
);

fn channel_args(c: &NewChannel) -> Vec<crate::store::db::Arg<'_>> {
    args![&c.name, &c.kind, &c.config, &c.sealed, &c.events, c.fold_secs, c.enabled, c.update_ms].into()
}

fn push_filter(q: &mut QueryBuf<'_>, f: &DeliveryFilter) {
    q.push(" WHERE d.status <> ").bind(DeliveryStatus::Folded);
    if let Some(channel) = f.channel {
        q.push(" AND d.channel_id = ").bind(channel);
    }
    if let Some(subject) = &f.subject {
        q.push(" AND d.subject = ").bind(subject.clone());
    }
    if let Some(status) = f.status {
        q.push(" AND d.status = ").bind(status);
    }
}

#[async_trait]
impl AlarmStore for SqlStore {
    async fn add_channel(&self, c: &NewChannel) -> Result<Option<ChannelId>, StoreError> {
        match self.ex().insert_id(&INSERT, &channel_args(c)).await {
            Ok(id) => Ok(Some(ChannelId(id))),
            Err(e) if e.is_duplicate() => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn update_channel(&self, id: ChannelId, c: &NewChannel) -> Result<bool, StoreError> {
        let mut args = channel_args(c);
        args.push(id.into());
        Ok(self.ex().execute(&UPDATE, &args).await? > 0)
    }

    async fn delete_channel(&self, id: ChannelId) -> Result<bool, StoreError> {
        Ok(self.ex().execute(&DELETE, &args![id]).await? > 0)
    }

    async fn load_channel(&self, id: ChannelId) -> Result<Option<ChannelRow>, StoreError> {
        self.ex().fetch_optional(&LOAD, &args![id]).await
    }

    async fn find_channel(&self, name: &str) -> Result<Option<ChannelRow>, StoreError> {
        self.ex().fetch_optional(&FIND, &args![name]).await
    }

    async fn list_channels(&self) -> Result<Vec<ChannelRow>, StoreError> {
        self.ex().fetch_all(&LIST, &[]).await
    }

    async fn set_route(&self, r: &RouteRow) -> Result<(), StoreError> {
        if r.channels.trim().is_empty() && r.done_within_secs == 0 {
            self.ex().execute(&DELETE_ROUTE, &args![r.scope.as_str(), r.target_id]).await?;
        } else {
            let args = args![r.scope.as_str(), r.target_id, r.channels.as_str(), r.done_within_secs];
            self.ex().execute(&SET_ROUTE, &args).await?;
        }
        Ok(())
    }

    async fn routes(&self, scope: &str, targets: &[i64]) -> Result<Vec<RouteRow>, StoreError> {
        if targets.is_empty() {
            return Ok(Vec::new());
        }
        let mut q = QueryBuf::new(
            "SELECT scope, target_id, channels, done_within_secs FROM jobwheel_alarm_route WHERE scope = ",
        );
        q.bind(scope).push(" AND target_id IN (").bind_list(targets.iter().copied()).push(")");
        self.ex().fetch_all(&q, q.args()).await
    }

    async fn all_routes(&self) -> Result<Vec<RouteRow>, StoreError> {
        self.ex().fetch_all(&ALL_ROUTES, &[]).await
    }

    async fn timed_routes(&self, scope: &str) -> Result<Vec<RouteRow>, StoreError> {
        self.ex().fetch_all(&TIMED_ROUTES, &args![scope]).await
    }

    async fn record_event(&self, e: &NewEvent) -> Result<Option<EventId>, StoreError> {
        let args = args![&e.event_key, &e.kind, &e.subject, e.created_ms, &e.notice];
        match self.ex().insert_id(&INSERT_EVENT, &args).await {
            Ok(id) => Ok(Some(EventId(id))),
            Err(e) if e.is_duplicate() => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn event_recorded(&self, key: &str) -> Result<bool, StoreError> {
        let id: Option<i64> = self.ex().fetch_value(&EVENT_ID, &args![key]).await?;
        Ok(id.is_some())
    }

    async fn load_event(&self, id: EventId) -> Result<Option<EventRow>, StoreError> {
        self.ex().fetch_optional(&LOAD_EVENT, &args![id]).await
    }

    async fn last_message(
        &self,
        channel: ChannelId,
        subject: &str,
    ) -> Result<Option<DeliveryRow>, StoreError> {
        self.ex().fetch_optional(&LAST_MESSAGE, &args![channel, subject, DeliveryStatus::Folded]).await
    }

    async fn add_delivery(&self, d: &NewDelivery<'_>) -> Result<DeliveryId, StoreError> {
        let status = match (d.into, d.claimed_until) {
            (Some(_), _) => DeliveryStatus::Folded,
            (None, Some(_)) => DeliveryStatus::Sending,
            (None, None) => DeliveryStatus::Pending,
        };
        let into_id = d.into.map_or(0, |i| i.0);
        let lease_ms = d.claimed_until.unwrap_or(0);
        let mut tx = self.db.begin().await?;
        let args = args![
            d.event,
            d.channel,
            d.subject,
            status,
            d.due_ms,
            into_id,
            lease_ms,
            d.created_ms,
            d.request
        ];
        let id = DeliveryId(tx.ex().insert_id(&INSERT_DELIVERY, &args).await?);
        if let Some(into) = d.into {
            tx.ex().execute(&FOLD, &args![into]).await?;
        }
        tx.commit().await?;
        Ok(id)
    }

    async fn due_deliveries(&self, now_ms: i64, limit: u32) -> Result<Vec<DeliveryRow>, StoreError> {
        let args = args![DeliveryStatus::Pending, now_ms, DeliveryStatus::Sending, now_ms, i64::from(limit)];
        self.ex().fetch_all(&DUE, &args).await
    }

    async fn claim_delivery(&self, d: &DeliveryRow, lease_ms: i64) -> Result<bool, StoreError> {
        let args = args![DeliveryStatus::Sending, lease_ms, d.id, d.status, d.lease_ms, d.attempts];
        Ok(self.ex().execute(&CLAIM, &args).await? > 0)
    }

    async fn finish_delivery(&self, id: DeliveryId, o: &DeliveryOutcome) -> Result<(), StoreError> {
        let args = args![o.status, o.due_ms, o.attempts, o.sent_ms, &o.request, o.answer_code, &o.answer, id];
        self.ex().execute(&FINISH, &args).await?;
        Ok(())
    }

    async fn load_delivery(&self, id: DeliveryId) -> Result<Option<DeliveryRow>, StoreError> {
        self.ex().fetch_optional(&LOAD_DELIVERY, &args![id]).await
    }

    async fn page_deliveries(
        &self,
        filter: &DeliveryFilter,
        page: Page,
    ) -> Result<Paged<DeliveryListRow>, StoreError> {
        let mut count = QueryBuf::new("SELECT I64(COUNT(*)) FROM jobwheel_alarm_delivery d");
        push_filter(&mut count, filter);
        let total: i64 = self.ex().fetch_one::<(i64,)>(&count, count.args()).await?.0;
        let mut rows = QueryBuf::new(concat!(
            "SELECT ",
            delivery_columns!(),
            ", e.kind FROM jobwheel_alarm_delivery d JOIN jobwheel_alarm_event e ON e.id = d.event_id"
        ));
        push_filter(&mut rows, filter);
        rows.push(" ORDER BY d.id DESC LIMIT ").bind(i64::from(page.limit));
        rows.push(" OFFSET ").bind(i64::from(page.offset));
        let rows = self.ex().fetch_all(&rows, rows.args()).await?;
        Ok(Paged { rows, total: u64::try_from(total).unwrap_or(0) })
    }

    async fn purge_alarms(&self, before_ms: i64) -> Result<u64, StoreError> {
        let deleted = self
            .ex()
            .execute(&PURGE_DELIVERIES, &args![before_ms, DeliveryStatus::Pending, DeliveryStatus::Sending])
            .await?;
        self.ex().execute(&PURGE_EVENTS, &args![before_ms]).await?;
        Ok(deleted)
    }

    async fn mark_failing(&self, job: JobId, log: LogId, now_ms: i64) -> Result<(), StoreError> {
        self.ex().execute(&MARK_FAILING, &args![job, log, now_ms]).await?;
        Ok(())
    }

    async fn failing_jobs(&self, limit: u32) -> Result<Vec<FailingJob>, StoreError> {
        self.ex().fetch_all(&FAILING, &args![i64::from(limit)]).await
    }

    async fn success_after(&self, job: JobId, after: LogId) -> Result<Option<LogId>, StoreError> {
        self.ex().fetch_value(&SUCCESS_AFTER, &args![job, after]).await
    }

    async fn clear_failing(&self, job: JobId, log: LogId) -> Result<bool, StoreError> {
        Ok(self.ex().execute(&CLEAR_FAILING, &args![job, log]).await? > 0)
    }

    async fn running_logs_before(
        &self,
        job: JobId,
        group: GroupId,
        before_secs: i64,
        limit: u32,
    ) -> Result<Vec<LogRow>, StoreError> {
        self.ex().fetch_all(&RUNNING_BEFORE, &args![group, job, before_secs, i64::from(limit)]).await
    }

    async fn running_instances_before(
        &self,
        workflow: i64,
        before_ms: i64,
        limit: u32,
    ) -> Result<Vec<InstanceRow>, StoreError> {
        let args = args![workflow, InstanceStatus::Running, before_ms, i64::from(limit)];
        self.ex().fetch_all(&INSTANCES_BEFORE, &args).await
    }
}
