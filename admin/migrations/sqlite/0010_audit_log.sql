-- jobwheel addition: the audit log — every management change through /api/v1, with who made
-- it, when, from which client address, and the changed resource before and after (JSON, secret
-- values never included). Deleted with the trigger logs by the log retention. See
-- docs/storage.md and docs/api.md.

CREATE TABLE jobwheel_audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at_ms BIGINT NOT NULL,
  user_id INTEGER DEFAULT NULL,
  username VARCHAR(50) NOT NULL,
  client VARCHAR(64) NOT NULL,
  action VARCHAR(64) NOT NULL,
  target VARCHAR(64) NOT NULL,
  detail TEXT DEFAULT NULL,
  before_json TEXT DEFAULT NULL,
  after_json TEXT DEFAULT NULL
);
CREATE INDEX i_audit_at ON jobwheel_audit (at_ms);
CREATE INDEX i_audit_target ON jobwheel_audit (target);
