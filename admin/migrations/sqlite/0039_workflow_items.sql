-- Issue 61: map nodes. A map node's run (WAITING while its items run) has one row per item of the
-- array it maps over, taken from the context when it starts: the item's JSON, its state (the run
-- states: 0 due, 1 fired, 2 succeeded, 3 failed, 6 stopped), its attempt (the node's retries are
-- per item), the log row of its current attempt and what it reported. Items are taken DUE ->
-- FIRED with their log rows under the instance's row lock, so each item attempt is fired once
-- across admins; i_item_run finds a run's fired and due items in order, i_item_log a result's item.

CREATE TABLE jobwheel_workflow_item (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id BIGINT NOT NULL,
  idx INT NOT NULL,
  attempt INT NOT NULL DEFAULT 1,
  status INT NOT NULL DEFAULT 0,
  due_ms BIGINT NOT NULL DEFAULT 0,
  fired_ms BIGINT NOT NULL DEFAULT 0,
  end_ms BIGINT NOT NULL DEFAULT 0,
  log_id BIGINT,
  item TEXT NOT NULL,
  output TEXT,
  message TEXT
);
CREATE INDEX i_item_run ON jobwheel_workflow_item (run_id, status, idx);
CREATE INDEX i_item_log ON jobwheel_workflow_item (log_id);
