-- jobwheel addition: the output a workflow node's run reported in its callback (docs/workflows.md,
-- "Data between nodes"), by log row. Its own table, written before the result is stored, so an
-- instance advanced on that result always sees the output; the callback may arrive before the
-- run is linked to the row (a broadcast's shards), so it does not go through the link.

CREATE TABLE jobwheel_workflow_output (
  log_id BIGINT NOT NULL PRIMARY KEY,
  output TEXT NOT NULL
);
