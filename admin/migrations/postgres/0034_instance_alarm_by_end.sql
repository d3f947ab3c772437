-- Issue 59: a workflow instance's alarm no longer waits in its own claim state (alarm_status:
-- 1 waiting, then claimed, then 2 sent or 3 not). Every admin's workflow sweep finds instances
-- that ended FAILED or MISSED by their end time (i_instance_ended) and raises each on the alarm
-- desk, whose event key (WORKFLOW_FAILED:instance:<id>:<end_ms>) is recorded once: of several
-- admins one raises it, and a second failure after a rerun is a new event.
--
-- A sweep that starts looks back ten minutes, so the alarms of instances that ended in the last
-- ten minutes before this migration are recorded here under their new keys when they were
-- already raised (2 or 3), and are not raised again.

INSERT INTO jobwheel_alarm_event (event_key, kind, subject, created_ms, notice)
  SELECT (CASE status WHEN 3 THEN 'WORKFLOW_FAILED' ELSE 'WORKFLOW_MISSED' END) || ':instance:' || id || ':' || end_ms,
         CASE status WHEN 3 THEN 'WORKFLOW_FAILED' ELSE 'WORKFLOW_MISSED' END,
         'workflow:' || workflow_id, end_ms, '{}'
  FROM jobwheel_workflow_instance
  WHERE alarm_status IN (2, 3) AND status IN (3, 5)
    AND end_ms >= (SELECT MAX(m.end_ms) FROM jobwheel_workflow_instance m) - 600000;
DROP INDEX i_instance_alarm;
ALTER TABLE jobwheel_workflow_instance DROP COLUMN alarm_status;
CREATE INDEX i_instance_ended ON jobwheel_workflow_instance (status, end_ms, id);
