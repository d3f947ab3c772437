//! Engine tests: the scheduler with controlled time (and its claim recovery on every backend,
//! broadcast shards included),
//! the trigger path and the monitors against a fake executor, alarms to local SMTP and webhook
//! receivers, and one end-to-end run on a real in-process executor.

mod alarm_channels;
pub(crate) mod alarm_vendors;
mod backfills;
mod broadcast_recovery;
mod calendars;
mod client;
pub(crate) mod completion;
mod early;
mod exactly_once;
mod group_cap;
mod job_epoch;
mod log_report;
mod missed_fire;
mod outcome_backlog;
mod real_executor;
mod retention;
mod retry_backoff;
mod scheduler;
mod sends_first;
mod sharing;
mod staging;
mod support;
pub(crate) mod time_zones;
mod trigger;
mod upstream_alarms;
mod workflow_alarm_scan;
mod workflow_approvals;
mod workflow_children;
mod workflow_conditions;
mod workflow_maps;
mod workflow_ops;
mod workflow_schedule;
pub(crate) mod workflows;
