-- Issue 61: sub-workflows. An instance started by a sub-workflow node names its parent instance
-- and the parent's node run that waits for it (NULL for every other instance). A parent finds its
-- children by parent_instance (i_instance_parent); the sweep finds children that ended while their
-- parent's run still waits through parent_run (i_instance_parent_run).

ALTER TABLE jobwheel_workflow_instance ADD COLUMN parent_instance BIGINT;
ALTER TABLE jobwheel_workflow_instance ADD COLUMN parent_run BIGINT;
CREATE INDEX i_instance_parent_run ON jobwheel_workflow_instance (parent_run);
CREATE INDEX i_instance_parent ON jobwheel_workflow_instance (parent_instance);
