-- jobwheel addition: a counter every deletion of trigger logs by a jobwheel admin moves (a log
-- clear, the daily retention, a job deleted with its logs). The report monitor keeps each
-- five-minute slice of the last three days' counts between its minute passes and recounts only
-- the slices that can have changed (engine/report.rs); a deletion can change any slice, so when
-- the counter moved every admin recounts them all. One row; deletions are rare.

CREATE TABLE jobwheel_log_epoch (
  id INTEGER NOT NULL PRIMARY KEY,
  epoch BIGINT NOT NULL DEFAULT 0
);
INSERT INTO jobwheel_log_epoch (id, epoch) VALUES (1, 0);
