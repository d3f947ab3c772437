-- The argon2 hash stored after an adopted user's first login needs `varchar(100)` (xxl-job 2.x
-- had 50 on MySQL). jobwheel's own PostgreSQL schema has 100 already; this keeps the three
-- dialects' migrations in step and makes the width explicit.
ALTER TABLE xxl_job_user ALTER COLUMN password TYPE varchar(100);
