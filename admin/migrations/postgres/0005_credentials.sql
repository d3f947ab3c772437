-- jobwheel addition: login sessions and API tokens of the management API (docs/api.md).
-- Only SHA-256 digests are stored. Sessions are rows rather than signed cookies so that logout
-- and a password change end them, on every admin sharing the database.

CREATE TABLE jobwheel_session (
  id_hash varchar(64) NOT NULL PRIMARY KEY,
  user_id integer NOT NULL,
  csrf_token varchar(64) NOT NULL,
  created_ms bigint NOT NULL,
  expires_ms bigint NOT NULL
);
CREATE INDEX i_session_user ON jobwheel_session (user_id);

CREATE TABLE jobwheel_api_token (
  id bigserial PRIMARY KEY,
  user_id integer NOT NULL,
  name varchar(100) NOT NULL,
  token_hash varchar(64) NOT NULL,
  created_ms bigint NOT NULL,
  last_used_ms bigint DEFAULT NULL
);
CREATE UNIQUE INDEX i_api_token_hash ON jobwheel_api_token (token_hash);
CREATE INDEX i_api_token_user ON jobwheel_api_token (user_id);
