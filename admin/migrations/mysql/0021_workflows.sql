-- jobwheel addition: workflows (docs/workflows.md). A workflow is a DAG of nodes, each running
-- an existing job; `graph` is its JSON. An instance copies the graph it runs and keeps its context
-- (JSON: the start input and each node's output by node name). A run is one attempt of one node;
-- `jobwheel_workflow_log` links the xxl_job_log rows that fired it (one per shard), so a stored
-- result finds its run. Side tables: upstream's tables stay as upstream made them.

CREATE TABLE IF NOT EXISTS `jobwheel_workflow` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `name` varchar(255) NOT NULL,
  `job_group` int(11) NOT NULL,
  `schedule_type` varchar(50) NOT NULL DEFAULT 'NONE',
  `schedule_conf` varchar(128) DEFAULT NULL,
  `time_zone` varchar(64) DEFAULT NULL,
  `misfire_strategy` varchar(50) NOT NULL DEFAULT 'DO_NOTHING',
  `max_instances` int(11) NOT NULL DEFAULT 1,
  `overflow` varchar(16) NOT NULL DEFAULT 'SKIP',
  `graph` mediumtext NOT NULL,
  `status` int(11) NOT NULL DEFAULT 0,
  `trigger_last_time` bigint(13) NOT NULL DEFAULT 0,
  `trigger_next_time` bigint(13) NOT NULL DEFAULT 0,
  `author` varchar(64) NOT NULL DEFAULT '',
  `update_ms` bigint(20) NOT NULL DEFAULT 0,
  PRIMARY KEY (`id`),
  KEY `i_workflow_due` (`status`, `trigger_next_time`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `jobwheel_workflow_instance` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `workflow_id` bigint(20) NOT NULL,
  `status` int(11) NOT NULL,
  `trigger_type` varchar(32) NOT NULL,
  `fire_time_ms` bigint(20) NOT NULL,
  `start_ms` bigint(20) NOT NULL DEFAULT 0,
  `end_ms` bigint(20) NOT NULL DEFAULT 0,
  `graph` mediumtext NOT NULL,
  `context` mediumtext NOT NULL,
  PRIMARY KEY (`id`),
  KEY `i_instance_workflow` (`workflow_id`, `status`),
  KEY `i_instance_status` (`status`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `jobwheel_workflow_run` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `instance_id` bigint(20) NOT NULL,
  `node` varchar(64) NOT NULL,
  `attempt` int(11) NOT NULL,
  `status` int(11) NOT NULL,
  `due_ms` bigint(20) NOT NULL,
  `fired_ms` bigint(20) NOT NULL DEFAULT 0,
  `end_ms` bigint(20) NOT NULL DEFAULT 0,
  `deadline_ms` bigint(20) NOT NULL DEFAULT 0,
  `shards` int(11) NOT NULL DEFAULT 0,
  `log_id` bigint(20) DEFAULT NULL,
  `output` mediumtext,
  `message` text,
  PRIMARY KEY (`id`),
  KEY `i_run_instance` (`instance_id`),
  KEY `i_run_status` (`status`, `due_ms`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `jobwheel_workflow_log` (
  `log_id` bigint(20) NOT NULL,
  `run_id` bigint(20) NOT NULL,
  PRIMARY KEY (`log_id`),
  KEY `i_workflow_log_run` (`run_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
