-- jobwheel addition: alarm channels (docs/alarms.md). A channel is a configured way of telling
-- people (e-mail, DingTalk, Feishu, WeCom, Slack, a templated webhook): `config` is its JSON
-- without secrets, `sealed` its webhook URL and signing key sealed under the admin's secret key.
-- A route chooses channels for a job, a group or a workflow (the job's own, else its group's)
-- and holds the "should be done within" duration. An event is one thing worth telling (a failed,
-- missed, lost or overdue run, a recovery, a workflow's failure, miss or overrun), recorded once
-- under its key; a delivery is that event on one channel: sent, retried with backoff, or folded
-- into the channel's message of the window. `jobwheel_alarm_failing` remembers the jobs whose
-- last alarm was a failure, so the first success after it can be told.

CREATE TABLE jobwheel_alarm_channel (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name VARCHAR(64) NOT NULL,
  kind VARCHAR(16) NOT NULL,
  config TEXT NOT NULL,
  sealed TEXT NOT NULL,
  events VARCHAR(255) NOT NULL,
  fold_secs INT NOT NULL DEFAULT 300,
  enabled INT NOT NULL DEFAULT 1,
  update_ms BIGINT NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX u_alarm_channel_name ON jobwheel_alarm_channel (name);

CREATE TABLE jobwheel_alarm_route (
  scope VARCHAR(16) NOT NULL,
  target_id BIGINT NOT NULL,
  channels VARCHAR(512) NOT NULL DEFAULT '',
  done_within_secs INT NOT NULL DEFAULT 0,
  PRIMARY KEY (scope, target_id)
);

CREATE TABLE jobwheel_alarm_event (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  event_key VARCHAR(128) NOT NULL,
  kind VARCHAR(32) NOT NULL,
  subject VARCHAR(64) NOT NULL,
  created_ms BIGINT NOT NULL,
  notice TEXT NOT NULL
);
CREATE UNIQUE INDEX u_alarm_event_key ON jobwheel_alarm_event (event_key);

CREATE TABLE jobwheel_alarm_delivery (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id BIGINT NOT NULL,
  channel_id BIGINT NOT NULL,
  subject VARCHAR(64) NOT NULL,
  status INT NOT NULL,
  due_ms BIGINT NOT NULL,
  attempts INT NOT NULL DEFAULT 0,
  folded INT NOT NULL DEFAULT 0,
  folded_into BIGINT NOT NULL DEFAULT 0,
  lease_ms BIGINT NOT NULL DEFAULT 0,
  created_ms BIGINT NOT NULL,
  sent_ms BIGINT NOT NULL DEFAULT 0,
  request TEXT NOT NULL,
  answer_code INT NOT NULL DEFAULT 0,
  answer TEXT NOT NULL
);
CREATE INDEX i_alarm_delivery_due ON jobwheel_alarm_delivery (status, due_ms);
CREATE INDEX i_alarm_delivery_subject ON jobwheel_alarm_delivery (channel_id, subject, id);

CREATE TABLE jobwheel_alarm_failing (
  job_id INT NOT NULL PRIMARY KEY,
  log_id BIGINT NOT NULL,
  since_ms BIGINT NOT NULL
);
