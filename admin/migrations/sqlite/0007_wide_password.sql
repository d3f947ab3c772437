-- The argon2 hash stored after an adopted user's first login needs room that xxl-job 2.x's
-- MySQL column did not have (see the MySQL migration of this number). SQLite does not enforce
-- declared lengths, so there is nothing to change; the migration keeps the dialects in step.
SELECT 1;
