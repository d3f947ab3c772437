-- xxl-job 2.x created `xxl_job_user.password` as varchar(50), room for its MD5 hex only; the
-- argon2 hash jobwheel stores after a user's first login (about 97 characters) needs 3.x's
-- varchar(100). Widening is invisible to an upstream admin sharing the database. On a database
-- created by jobwheel or xxl-job 3.x this changes nothing.
ALTER TABLE `xxl_job_user` MODIFY COLUMN `password` varchar(100) NOT NULL;
