-- xxl-job 3.4.2 schema translated column for column from upstream's MySQL DDL.
-- Type mapping: integer ids are `INTEGER PRIMARY KEY AUTOINCREMENT` (ids are never reused: an
-- executor names its log files by log id), varchar/text -> TEXT, tinyint/int/bigint -> INTEGER,
-- datetime -> TEXT holding UTC 'YYYY-MM-DD HH:MM:SS' (SQLite's own date format; see
-- docs/storage.md, "Time"). Upstream's seed rows are not inserted except `schedule_lock`.

CREATE TABLE xxl_job_info (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_group INTEGER NOT NULL,
  job_desc TEXT NOT NULL,
  add_time TEXT DEFAULT NULL,
  update_time TEXT DEFAULT NULL,
  author TEXT DEFAULT NULL,
  alarm_email TEXT DEFAULT NULL,
  schedule_type TEXT NOT NULL DEFAULT 'NONE',
  schedule_conf TEXT DEFAULT NULL,
  misfire_strategy TEXT NOT NULL DEFAULT 'DO_NOTHING',
  executor_route_strategy TEXT DEFAULT NULL,
  executor_handler TEXT DEFAULT NULL,
  executor_param TEXT,
  executor_block_strategy TEXT DEFAULT NULL,
  executor_timeout INTEGER NOT NULL DEFAULT 0,
  executor_fail_retry_count INTEGER NOT NULL DEFAULT 0,
  glue_type TEXT NOT NULL,
  glue_source TEXT,
  glue_remark TEXT DEFAULT NULL,
  glue_updatetime TEXT DEFAULT NULL,
  child_jobid TEXT DEFAULT NULL,
  trigger_status INTEGER NOT NULL DEFAULT 0,
  trigger_last_time INTEGER NOT NULL DEFAULT 0,
  trigger_next_time INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE xxl_job_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_group INTEGER NOT NULL,
  job_id INTEGER NOT NULL,
  executor_address TEXT DEFAULT NULL,
  executor_handler TEXT DEFAULT NULL,
  executor_param TEXT,
  executor_sharding_param TEXT DEFAULT NULL,
  executor_fail_retry_count INTEGER NOT NULL DEFAULT 0,
  trigger_time TEXT DEFAULT NULL,
  trigger_code INTEGER NOT NULL,
  trigger_msg TEXT,
  handle_time TEXT DEFAULT NULL,
  handle_code INTEGER NOT NULL,
  handle_msg TEXT,
  alarm_status INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX I_trigger_time ON xxl_job_log (trigger_time);
CREATE INDEX I_handle_code ON xxl_job_log (handle_code);
CREATE INDEX I_jobgroup ON xxl_job_log (job_group);
CREATE INDEX I_jobid ON xxl_job_log (job_id);

CREATE TABLE xxl_job_log_report (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  trigger_day TEXT DEFAULT NULL,
  running_count INTEGER NOT NULL DEFAULT 0,
  suc_count INTEGER NOT NULL DEFAULT 0,
  fail_count INTEGER NOT NULL DEFAULT 0,
  update_time TEXT DEFAULT NULL
);
CREATE UNIQUE INDEX i_trigger_day ON xxl_job_log_report (trigger_day);

CREATE TABLE xxl_job_logglue (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL,
  glue_type TEXT DEFAULT NULL,
  glue_source TEXT,
  glue_remark TEXT NOT NULL,
  add_time TEXT DEFAULT NULL,
  update_time TEXT DEFAULT NULL
);

CREATE TABLE xxl_job_registry (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  registry_group TEXT NOT NULL,
  registry_key TEXT NOT NULL,
  registry_value TEXT NOT NULL,
  update_time TEXT DEFAULT NULL
);
CREATE UNIQUE INDEX i_g_k_v ON xxl_job_registry (registry_group, registry_key, registry_value);

CREATE TABLE xxl_job_group (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  app_name TEXT NOT NULL,
  title TEXT NOT NULL,
  address_type INTEGER NOT NULL DEFAULT 0,
  address_list TEXT,
  update_time TEXT DEFAULT NULL
);

CREATE TABLE xxl_job_user (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  username TEXT NOT NULL,
  password TEXT NOT NULL,
  token TEXT DEFAULT NULL,
  role INTEGER NOT NULL,
  permission TEXT DEFAULT NULL
);
CREATE UNIQUE INDEX i_username ON xxl_job_user (username);

CREATE TABLE xxl_job_lock (
  lock_name TEXT NOT NULL PRIMARY KEY
);

INSERT INTO xxl_job_lock (lock_name) VALUES ('schedule_lock');
