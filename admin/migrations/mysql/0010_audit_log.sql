-- jobwheel addition: the audit log — every management change through /api/v1, with who made
-- it, when, from which client address, and the changed resource before and after (JSON, secret
-- values never included). Deleted with the trigger logs by the log retention. See
-- docs/storage.md and docs/api.md.

CREATE TABLE IF NOT EXISTS `jobwheel_audit` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `at_ms` bigint(20) NOT NULL,
  `user_id` int(11) DEFAULT NULL,
  `username` varchar(50) NOT NULL,
  `client` varchar(64) NOT NULL,
  `action` varchar(64) NOT NULL,
  `target` varchar(64) NOT NULL,
  `detail` mediumtext DEFAULT NULL,
  `before_json` mediumtext DEFAULT NULL,
  `after_json` mediumtext DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `i_audit_at` (`at_ms`),
  KEY `i_audit_target` (`target`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
