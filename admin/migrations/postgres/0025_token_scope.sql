-- jobwheel addition: what an API token may do (docs/security.md, docs/mcp.md). `read` only reads,
-- `run` also triggers, starts and stops jobs and workflows and kills runs, `write` does everything
-- its user may. Tokens made before this migration keep full rights.

ALTER TABLE jobwheel_api_token ADD COLUMN scope VARCHAR(8) NOT NULL DEFAULT 'write';
