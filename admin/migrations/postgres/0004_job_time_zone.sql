-- jobwheel addition: a per-job time zone (IANA name) for CRON schedules. A side table rather
-- than a column on xxl_job_info, so that upstream's table stays exactly upstream's (an xxl-job
-- database adopted by jobwheel is not altered). No row = the admin's zone. See docs/storage.md.

CREATE TABLE jobwheel_job_zone (
  job_id integer NOT NULL PRIMARY KEY,
  time_zone varchar(64) NOT NULL
);
