-- jobwheel addition: calendars and exclusion windows. A calendar is a named set of dates
-- (weekdays, yearly dates, single dates and ranges; `days` is their JSON); a job refers to
-- calendars as "only on" or "never on" and may carry daily exclusion windows. Side tables, so
-- upstream's xxl_job_info stays as upstream made it; a job's rows are deleted with the job, and
-- a calendar cannot be deleted while a job refers to it. See docs/scheduling.md and
-- docs/storage.md.

CREATE TABLE jobwheel_calendar (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name VARCHAR(64) NOT NULL,
  description VARCHAR(255) NOT NULL DEFAULT '',
  days TEXT NOT NULL,
  update_ms BIGINT NOT NULL
);
CREATE UNIQUE INDEX i_calendar_name ON jobwheel_calendar (name);

CREATE TABLE jobwheel_job_calendar (
  job_id INTEGER NOT NULL,
  calendar_id BIGINT NOT NULL,
  mode VARCHAR(8) NOT NULL,
  PRIMARY KEY (job_id, calendar_id)
);
CREATE INDEX i_job_calendar_calendar ON jobwheel_job_calendar (calendar_id);

CREATE TABLE jobwheel_job_window (
  job_id INTEGER NOT NULL PRIMARY KEY,
  windows VARCHAR(255) NOT NULL
);
