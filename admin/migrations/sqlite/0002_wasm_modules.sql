-- jobwheel addition: content-addressed Wasm module store and per-job version history.
-- Times in jobwheel's own tables are epoch milliseconds (INTEGER) on every backend.

CREATE TABLE jobwheel_wasm_module (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  digest TEXT NOT NULL,
  bytes BLOB NOT NULL,
  size INTEGER NOT NULL,
  created_at_ms INTEGER NOT NULL
);
CREATE UNIQUE INDEX i_wasm_module_digest ON jobwheel_wasm_module (digest);

CREATE TABLE jobwheel_wasm_version (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL,
  digest TEXT NOT NULL,
  uploader TEXT DEFAULT NULL,
  remark TEXT DEFAULT NULL,
  created_at_ms INTEGER NOT NULL
);
CREATE INDEX i_wasm_version_job ON jobwheel_wasm_version (job_id);
