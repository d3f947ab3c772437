-- jobwheel addition (docs/sso.md, docs/security.md; review 2026-12-04, N4): when a single sign-on
-- account last signed in through its provider, so its sessions and API tokens stop working a
-- set time after the provider last vouched for the person; and an optional expiry of API tokens.

ALTER TABLE jobwheel_user_identity ADD COLUMN confirmed_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobwheel_api_token ADD COLUMN expires_ms BIGINT NULL;
