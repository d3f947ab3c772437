-- jobwheel addition: login sessions and API tokens of the management API (docs/api.md).
-- Only SHA-256 digests are stored. Sessions are rows rather than signed cookies so that logout
-- and a password change end them, on every admin sharing the database.

CREATE TABLE IF NOT EXISTS `jobwheel_session` (
  `id_hash` varchar(64) NOT NULL,
  `user_id` int(11) NOT NULL,
  `csrf_token` varchar(64) NOT NULL,
  `created_ms` bigint(20) NOT NULL,
  `expires_ms` bigint(20) NOT NULL,
  PRIMARY KEY (`id_hash`),
  KEY `i_session_user` (`user_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `jobwheel_api_token` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `user_id` int(11) NOT NULL,
  `name` varchar(100) NOT NULL,
  `token_hash` varchar(64) NOT NULL,
  `created_ms` bigint(20) NOT NULL,
  `last_used_ms` bigint(20) DEFAULT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `i_api_token_hash` (`token_hash`),
  KEY `i_api_token_user` (`user_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
