-- jobwheel addition: workflows (docs/workflows.md). A workflow is a DAG of nodes, each running
-- an existing job; `graph` is its JSON. An instance copies the graph it runs and keeps its context
-- (JSON: the start input and each node's output by node name). A run is one attempt of one node;
-- `jobwheel_workflow_log` links the xxl_job_log rows that fired it (one per shard), so a stored
-- result finds its run. Side tables: upstream's tables stay as upstream made them.

CREATE TABLE jobwheel_workflow (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name VARCHAR(255) NOT NULL,
  job_group INT NOT NULL,
  schedule_type VARCHAR(50) NOT NULL DEFAULT 'NONE',
  schedule_conf VARCHAR(128),
  time_zone VARCHAR(64),
  misfire_strategy VARCHAR(50) NOT NULL DEFAULT 'DO_NOTHING',
  max_instances INT NOT NULL DEFAULT 1,
  overflow VARCHAR(16) NOT NULL DEFAULT 'SKIP',
  graph TEXT NOT NULL,
  status INT NOT NULL DEFAULT 0,
  trigger_last_time BIGINT NOT NULL DEFAULT 0,
  trigger_next_time BIGINT NOT NULL DEFAULT 0,
  author VARCHAR(64) NOT NULL DEFAULT '',
  update_ms BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX i_workflow_due ON jobwheel_workflow (status, trigger_next_time);

CREATE TABLE jobwheel_workflow_instance (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workflow_id BIGINT NOT NULL,
  status INT NOT NULL,
  trigger_type VARCHAR(32) NOT NULL,
  fire_time_ms BIGINT NOT NULL,
  start_ms BIGINT NOT NULL DEFAULT 0,
  end_ms BIGINT NOT NULL DEFAULT 0,
  graph TEXT NOT NULL,
  context TEXT NOT NULL
);
CREATE INDEX i_instance_workflow ON jobwheel_workflow_instance (workflow_id, status);
CREATE INDEX i_instance_status ON jobwheel_workflow_instance (status);

CREATE TABLE jobwheel_workflow_run (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  instance_id BIGINT NOT NULL,
  node VARCHAR(64) NOT NULL,
  attempt INT NOT NULL,
  status INT NOT NULL,
  due_ms BIGINT NOT NULL,
  fired_ms BIGINT NOT NULL DEFAULT 0,
  end_ms BIGINT NOT NULL DEFAULT 0,
  deadline_ms BIGINT NOT NULL DEFAULT 0,
  shards INT NOT NULL DEFAULT 0,
  log_id BIGINT,
  output TEXT,
  message TEXT
);
CREATE INDEX i_run_instance ON jobwheel_workflow_run (instance_id);
CREATE INDEX i_run_status ON jobwheel_workflow_run (status, due_ms);

CREATE TABLE jobwheel_workflow_log (
  log_id BIGINT NOT NULL PRIMARY KEY,
  run_id BIGINT NOT NULL
);
CREATE INDEX i_workflow_log_run ON jobwheel_workflow_log (run_id);
