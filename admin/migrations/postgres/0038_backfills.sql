-- Issue 61: backfill. A backfill runs a job's or a workflow's schedule over a past range: each
-- scheduled time once (as the run's scheduled time and per-fire key), at most `parallelism` at
-- once. The row holds its request and where it has got to (cursor_ms: every scheduled time up to
-- it was handed out); each time handed out is a jobwheel_backfill_fire row with the log row or
-- instance that ran it. The sweep that hands times out holds the backfill's row lock, so two
-- admins hand each time out once.

CREATE TABLE jobwheel_backfill (
  id BIGSERIAL PRIMARY KEY,
  target_kind VARCHAR(16) NOT NULL,
  target_id BIGINT NOT NULL,
  job_group INT NOT NULL,
  from_ms BIGINT NOT NULL,
  to_ms BIGINT NOT NULL,
  parallelism INT NOT NULL,
  rerun_existing SMALLINT NOT NULL,
  status INT NOT NULL,
  cursor_ms BIGINT NOT NULL,
  total INT NOT NULL,
  handed INT NOT NULL DEFAULT 0,
  skipped INT NOT NULL DEFAULT 0,
  message TEXT,
  author VARCHAR(255) NOT NULL,
  created_ms BIGINT NOT NULL,
  end_ms BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX i_backfill_status ON jobwheel_backfill (status, id);
CREATE INDEX i_backfill_target ON jobwheel_backfill (target_kind, target_id, id);
CREATE TABLE jobwheel_backfill_fire (
  id BIGSERIAL PRIMARY KEY,
  backfill_id BIGINT NOT NULL,
  scheduled_ms BIGINT NOT NULL,
  claimed_ms BIGINT NOT NULL,
  log_id BIGINT,
  instance_id BIGINT
);
CREATE INDEX i_backfill_fire ON jobwheel_backfill_fire (backfill_id, id);
CREATE INDEX i_backfill_fire_time ON jobwheel_backfill_fire (scheduled_ms);
