//! The store's alarm area (docs/alarms.md): channels, routes, events and deliveries, and the
//! reads the alarm monitor's sweeps make (runs past their duration, recoveries).
//!
//! An event is recorded once under its key (a unique index), so of several admins noticing the
//! same overdue run one records it; a delivery is claimed by a guarded status update with a
//! lease, so of several admins one sends it, and a dead admin's claim is taken again when its
//! lease ends.

use async_trait::async_trait;

use super::{
    ChannelId, ChannelRow, DeliveryFilter, DeliveryId, DeliveryListRow, DeliveryOutcome, DeliveryRow,
    EventId, EventRow, FailingJob, GroupId, InstanceRow, JobId, LogId, LogRow, NewChannel, NewDelivery,
    NewEvent, Page, Paged, RouteRow, StoreError,
};

/// Alarm channels and their traffic.
#[async_trait]
pub trait AlarmStore: Send + Sync {
    /// Adds a channel; `None` when the name is taken.
    async fn add_channel(&self, c: &NewChannel) -> Result<Option<ChannelId>, StoreError>;
    /// Replaces a channel's columns; false if it does not exist. Fails on a taken name.
    async fn update_channel(&self, id: ChannelId, c: &NewChannel) -> Result<bool, StoreError>;
    /// Deletes a channel (its deliveries stay in the log).
    async fn delete_channel(&self, id: ChannelId) -> Result<bool, StoreError>;
    /// One channel.
    async fn load_channel(&self, id: ChannelId) -> Result<Option<ChannelRow>, StoreError>;
    /// One channel by name.
    async fn find_channel(&self, name: &str) -> Result<Option<ChannelRow>, StoreError>;
    /// Every channel, by name.
    async fn list_channels(&self) -> Result<Vec<ChannelRow>, StoreError>;

    /// Sets (or, with no channels and no duration, removes) the route of `scope`/`target`.
    async fn set_route(&self, route: &RouteRow) -> Result<(), StoreError>;
    /// The routes of `targets` in `scope` (those that have one).
    async fn routes(&self, scope: &str, targets: &[i64]) -> Result<Vec<RouteRow>, StoreError>;
    /// Every route (to find what refers to a channel).
    async fn all_routes(&self) -> Result<Vec<RouteRow>, StoreError>;
    /// The routes of `scope` with a "should be done within" duration.
    async fn timed_routes(&self, scope: &str) -> Result<Vec<RouteRow>, StoreError>;

    /// Records an event; `None` if one with its key is recorded already.
    async fn record_event(&self, e: &NewEvent) -> Result<Option<EventId>, StoreError>;
    /// Whether an event with `key` is recorded.
    async fn event_recorded(&self, key: &str) -> Result<bool, StoreError>;
    /// One event.
    async fn load_event(&self, id: EventId) -> Result<Option<EventRow>, StoreError>;
    /// The newest delivery of `channel` on `subject` that is a message of its own (not folded).
    async fn last_message(
        &self,
        channel: ChannelId,
        subject: &str,
    ) -> Result<Option<DeliveryRow>, StoreError>;
    /// Adds a delivery: PENDING at `due_ms`, SENDING under the raiser's claim, or FOLDED into
    /// another delivery, whose count goes up in the same transaction.
    async fn add_delivery(&self, d: &NewDelivery<'_>) -> Result<DeliveryId, StoreError>;
    /// Deliveries due at `now_ms`: PENDING ones, and SENDING ones whose lease ended.
    async fn due_deliveries(&self, now_ms: i64, limit: u32) -> Result<Vec<DeliveryRow>, StoreError>;
    /// Claims `d` (as read by [`AlarmStore::due_deliveries`]) until `lease_ms`; false if another
    /// admin changed it first.
    async fn claim_delivery(&self, d: &DeliveryRow, lease_ms: i64) -> Result<bool, StoreError>;
    /// Stores an attempt's outcome.
    async fn finish_delivery(&self, id: DeliveryId, outcome: &DeliveryOutcome) -> Result<(), StoreError>;
    /// One delivery.
    async fn load_delivery(&self, id: DeliveryId) -> Result<Option<DeliveryRow>, StoreError>;
    /// The delivery log, newest first.
    async fn page_deliveries(
        &self,
        filter: &DeliveryFilter,
        page: Page,
    ) -> Result<Paged<DeliveryListRow>, StoreError>;

    /// Deletes deliveries and events recorded before `before_ms` (log retention); how many
    /// deliveries. A delivery still waiting to be sent is kept, and so is its event.
    async fn purge_alarms(&self, before_ms: i64) -> Result<u64, StoreError>;

    /// Remembers that `job`'s last alarm was the failure of `log`.
    async fn mark_failing(&self, job: JobId, log: LogId, now_ms: i64) -> Result<(), StoreError>;
    /// The jobs marked failing.
    async fn failing_jobs(&self, limit: u32) -> Result<Vec<FailingJob>, StoreError>;
    /// The first successful log of `job` after `after`, if any.
    async fn success_after(&self, job: JobId, after: LogId) -> Result<Option<LogId>, StoreError>;
    /// Forgets `job`'s failure if it is still `log`'s; false if another admin did first.
    async fn clear_failing(&self, job: JobId, log: LogId) -> Result<bool, StoreError>;

    /// Runs of `job` (of `group`) triggered at or before `before_secs` (epoch seconds), still
    /// without a result.
    async fn running_logs_before(
        &self,
        job: JobId,
        group: GroupId,
        before_secs: i64,
        limit: u32,
    ) -> Result<Vec<LogRow>, StoreError>;
    /// Running instances of `workflow` started before `before_ms`.
    async fn running_instances_before(
        &self,
        workflow: i64,
        before_ms: i64,
        limit: u32,
    ) -> Result<Vec<InstanceRow>, StoreError>;
}
