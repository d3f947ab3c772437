-- Issue 62: approval of new capabilities (docs/replay.md, "Capabilities and approval"). A module
-- version or a grant change that lets a job reach further than it could — a new kind of host
-- call, a new host, a group secret, a raised limit — made by someone who is not an administrator
-- (or through an API token without the `approve` scope) is held here until an administrator
-- approves or refuses it. A held module is stored as a candidate version (replayable, never run
-- by triggers); a held grant change keeps its request body. `widening` lists what is new, as
-- JSON; status 0 pending, 1 approved, 2 refused.

CREATE TABLE jobwheel_approval (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INT NOT NULL,
  kind VARCHAR(16) NOT NULL,
  version_id BIGINT,
  digest VARCHAR(64),
  grant_body TEXT,
  widening TEXT NOT NULL,
  requested_by VARCHAR(255) NOT NULL,
  requested_ms BIGINT NOT NULL,
  status SMALLINT NOT NULL DEFAULT 0,
  decided_by VARCHAR(255),
  decided_ms BIGINT NOT NULL DEFAULT 0,
  note TEXT
);
CREATE INDEX i_approval_job ON jobwheel_approval (job_id, id);
CREATE INDEX i_approval_status ON jobwheel_approval (status, id);
