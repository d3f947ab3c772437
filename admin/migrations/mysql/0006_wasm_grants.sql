-- jobwheel addition: what a GLUE_WASM job is granted beyond computing (docs/guest-abi.md).
-- jobwheel_job_grant: the job's network policy (entries one per line) and per-job limits.
-- jobwheel_variable: variables and secrets of an executor group (job_id = 0) or a job
-- (group_id = 0); a secret's value is XChaCha20-Poly1305 ciphertext (hex of nonce ‖ sealed)
-- under the admin's key file, never plaintext.
-- jobwheel_grant_history: every change of the above, without secret values.

CREATE TABLE IF NOT EXISTS `jobwheel_job_grant` (
  `job_id` int(11) NOT NULL,
  `http_allow` text NOT NULL,
  `http_max_requests` int(11) DEFAULT NULL,
  `http_max_response_bytes` bigint(20) DEFAULT NULL,
  `http_timeout_ms` bigint(20) DEFAULT NULL,
  `fuel` bigint(20) DEFAULT NULL,
  `memory_bytes` bigint(20) DEFAULT NULL,
  `update_ms` bigint(20) NOT NULL,
  PRIMARY KEY (`job_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `jobwheel_variable` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `group_id` int(11) NOT NULL,
  `job_id` int(11) NOT NULL,
  `name` varchar(128) NOT NULL,
  `secret` smallint(6) NOT NULL,
  `value` text NOT NULL,
  `update_ms` bigint(20) NOT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `i_variable_owner_name` (`group_id`, `job_id`, `name`),
  KEY `i_variable_job` (`job_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `jobwheel_grant_history` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `group_id` int(11) NOT NULL,
  `job_id` int(11) NOT NULL,
  `author` varchar(100) NOT NULL,
  `change_text` text NOT NULL,
  `add_ms` bigint(20) NOT NULL,
  PRIMARY KEY (`id`),
  KEY `i_grant_history_owner` (`group_id`, `job_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
