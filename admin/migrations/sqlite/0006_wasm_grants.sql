-- jobwheel addition: what a GLUE_WASM job is granted beyond computing (docs/guest-abi.md).
-- jobwheel_job_grant: the job's network policy (entries one per line) and per-job limits.
-- jobwheel_variable: variables and secrets of an executor group (job_id = 0) or a job
-- (group_id = 0); a secret's value is XChaCha20-Poly1305 ciphertext (hex of nonce ‖ sealed)
-- under the admin's key file, never plaintext.
-- jobwheel_grant_history: every change of the above, without secret values.

CREATE TABLE jobwheel_job_grant (
  job_id INTEGER NOT NULL PRIMARY KEY,
  http_allow TEXT NOT NULL,
  http_max_requests INTEGER DEFAULT NULL,
  http_max_response_bytes BIGINT DEFAULT NULL,
  http_timeout_ms BIGINT DEFAULT NULL,
  fuel BIGINT DEFAULT NULL,
  memory_bytes BIGINT DEFAULT NULL,
  update_ms BIGINT NOT NULL
);

CREATE TABLE jobwheel_variable (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  group_id INTEGER NOT NULL,
  job_id INTEGER NOT NULL,
  name VARCHAR(128) NOT NULL,
  secret SMALLINT NOT NULL,
  value TEXT NOT NULL,
  update_ms BIGINT NOT NULL
);
CREATE UNIQUE INDEX i_variable_owner_name ON jobwheel_variable (group_id, job_id, name);
CREATE INDEX i_variable_job ON jobwheel_variable (job_id);

CREATE TABLE jobwheel_grant_history (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  group_id INTEGER NOT NULL,
  job_id INTEGER NOT NULL,
  author VARCHAR(100) NOT NULL,
  change_text TEXT NOT NULL,
  add_ms BIGINT NOT NULL
);
CREATE INDEX i_grant_history_owner ON jobwheel_grant_history (group_id, job_id);
