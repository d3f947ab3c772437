-- jobwheel addition: a workflow's calendars, exclusion windows and alarms (docs/workflows.md,
-- "Schedule" and "Alarms"). `days` holds the rules as JSON ({"onlyOn":[calendar ids],
-- "neverOn":[…],"exclusionWindows":["HH:MM-HH:MM",…]}); the admin refuses to delete a calendar a
-- workflow refers to. `alarm_email` is where its alarms go (comma-separated, as a job's).
-- An instance that failed, or a scheduled start that was missed (late under DO_NOTHING, or
-- skipped at max instances — now kept as an instance in state 5, MISSED), waits in
-- `alarm_status` 1 until one admin claims it (2 sent, 3 not delivered); i_instance_alarm finds
-- the waiting ones without reading the rest.

ALTER TABLE jobwheel_workflow ADD COLUMN days VARCHAR(1024) NOT NULL DEFAULT '{}';
ALTER TABLE jobwheel_workflow ADD COLUMN alarm_email VARCHAR(255) NOT NULL DEFAULT '';
ALTER TABLE jobwheel_workflow_instance ADD COLUMN alarm_status INT NOT NULL DEFAULT 0;
CREATE INDEX i_instance_alarm ON jobwheel_workflow_instance (alarm_status);
