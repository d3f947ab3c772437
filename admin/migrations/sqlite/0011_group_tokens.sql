-- jobwheel addition: per-group access tokens (xxl-job 3.5's per-executor tokens). A group with
-- a token accepts its executors' registrations, callbacks and module downloads with that token
-- and its AppName (headers XXL-JOB-ACCESS-TOKEN + XXL-JOB-APPNAME), serves xxl-job 3.5's job
-- OpenAPI to callers presenting them, and is called with 3.5's protocol (/trigger, both headers).
-- The token is sealed with the admin's secret key like a secret variable; upstream 3.5 keeps it
-- in plain text in xxl_job_group.access_token. See docs/security.md and docs/storage.md.

CREATE TABLE jobwheel_group_token (
  group_id INTEGER NOT NULL PRIMARY KEY,
  sealed TEXT NOT NULL,
  update_time BIGINT NOT NULL
);
