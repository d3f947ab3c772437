-- jobwheel addition: login sessions and API tokens of the management API (docs/api.md).
-- Only SHA-256 digests are stored. Sessions are rows rather than signed cookies so that logout
-- and a password change end them, on every admin sharing the database.

CREATE TABLE jobwheel_session (
  id_hash VARCHAR(64) NOT NULL PRIMARY KEY,
  user_id INTEGER NOT NULL,
  csrf_token VARCHAR(64) NOT NULL,
  created_ms BIGINT NOT NULL,
  expires_ms BIGINT NOT NULL
);
CREATE INDEX i_session_user ON jobwheel_session (user_id);

CREATE TABLE jobwheel_api_token (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id INTEGER NOT NULL,
  name VARCHAR(100) NOT NULL,
  token_hash VARCHAR(64) NOT NULL,
  created_ms BIGINT NOT NULL,
  last_used_ms BIGINT DEFAULT NULL
);
CREATE UNIQUE INDEX i_api_token_hash ON jobwheel_api_token (token_hash);
CREATE INDEX i_api_token_user ON jobwheel_api_token (user_id);
