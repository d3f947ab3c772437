-- jobwheel addition: job tags. A job carries up to 16 short lower-case tags; the job list
-- filters by one (GET /api/v1/jobs?tag=). A side table, so upstream's xxl_job_info stays as
-- upstream made it; deleted with the job. See docs/storage.md.

CREATE TABLE jobwheel_job_tag (
  job_id INTEGER NOT NULL,
  tag VARCHAR(32) NOT NULL,
  PRIMARY KEY (job_id, tag)
);
CREATE INDEX i_job_tag ON jobwheel_job_tag (tag);
