-- Issue 62: approval of new capabilities (docs/replay.md, "Capabilities and approval"). A module
-- version or a grant change that lets a job reach further than it could — a new kind of host
-- call, a new host, a group secret, a raised limit — made by someone who is not an administrator
-- (or through an API token without the `approve` scope) is held here until an administrator
-- approves or refuses it. A held module is stored as a candidate version (replayable, never run
-- by triggers); a held grant change keeps its request body. `widening` lists what is new, as
-- JSON; status 0 pending, 1 approved, 2 refused.

CREATE TABLE IF NOT EXISTS `jobwheel_approval` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `job_id` int(11) NOT NULL,
  `kind` varchar(16) NOT NULL,
  `version_id` bigint(20) DEFAULT NULL,
  `digest` varchar(64) DEFAULT NULL,
  `grant_body` mediumtext,
  `widening` text NOT NULL,
  `requested_by` varchar(255) NOT NULL,
  `requested_ms` bigint(20) NOT NULL,
  `status` smallint(6) NOT NULL DEFAULT 0,
  `decided_by` varchar(255) DEFAULT NULL,
  `decided_ms` bigint(20) NOT NULL DEFAULT 0,
  `note` text,
  PRIMARY KEY (`id`),
  KEY `i_approval_job` (`job_id`, `id`),
  KEY `i_approval_status` (`status`, `id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
