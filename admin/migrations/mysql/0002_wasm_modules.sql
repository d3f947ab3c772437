-- jobwheel addition: content-addressed Wasm module store and per-job version history.
-- Times in jobwheel's own tables are epoch milliseconds (BIGINT) on every backend.

CREATE TABLE IF NOT EXISTS `jobwheel_wasm_module` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `digest` varchar(64) NOT NULL,
  `bytes` longblob NOT NULL,
  `size` bigint(20) NOT NULL,
  `created_at_ms` bigint(20) NOT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `i_wasm_module_digest` (`digest`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `jobwheel_wasm_version` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `job_id` int(11) NOT NULL,
  `digest` varchar(64) NOT NULL,
  `uploader` varchar(64) DEFAULT NULL,
  `remark` varchar(128) DEFAULT NULL,
  `created_at_ms` bigint(20) NOT NULL,
  PRIMARY KEY (`id`),
  KEY `i_wasm_version_job` (`job_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
