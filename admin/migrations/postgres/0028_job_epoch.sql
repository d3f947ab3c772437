-- jobwheel addition: a counter every job edit of a jobwheel admin moves (save, start, stop,
-- delete, priority, time zone). The pre-read reads it before the due jobs, and a trigger fires
-- with the job row its pre-read read as long as the counter has not moved since; when it has,
-- the trigger reads the job again (engine/trigger.rs, ARCHITECTURE.md "Fewer durable writes
-- per trigger"). One row; edits serialize on it, and they are rare.

CREATE TABLE jobwheel_job_epoch (
  id INTEGER NOT NULL PRIMARY KEY,
  epoch BIGINT NOT NULL DEFAULT 0
);
INSERT INTO jobwheel_job_epoch (id, epoch) VALUES (1, 0);
