-- jobwheel addition: the executor-group variables and secrets a Wasm job uses, one name per line
-- (NULL: none). A trigger carries the job's own variables and secrets and only the group's ones
-- named here, so a group secret reaches only the jobs that name it (docs/security.md).

ALTER TABLE `jobwheel_job_grant` ADD COLUMN `uses` text DEFAULT NULL;
