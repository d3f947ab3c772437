-- Issue 59: a workflow's calendars and exclusion windows are kept as a job's are, in side tables
-- (jobwheel_workflow_calendar: a reference per calendar, ONLY or NEVER; jobwheel_workflow_window:
-- the windows joined by commas), no longer as JSON in jobwheel_workflow.days. A calendar that a
-- workflow refers to can then not be deleted, checked in the same statement as for jobs. The
-- references and windows of every workflow are copied from the JSON (a reference to a calendar
-- that no longer exists is dropped, as the scheduler ignored it), then the column goes.

CREATE TABLE jobwheel_workflow_calendar (
  workflow_id BIGINT NOT NULL,
  calendar_id BIGINT NOT NULL,
  mode VARCHAR(8) NOT NULL,
  PRIMARY KEY (workflow_id, calendar_id)
);
CREATE INDEX i_workflow_calendar_calendar ON jobwheel_workflow_calendar (calendar_id);

CREATE TABLE jobwheel_workflow_window (
  workflow_id BIGINT NOT NULL PRIMARY KEY,
  windows VARCHAR(255) NOT NULL
);

INSERT INTO jobwheel_workflow_calendar (workflow_id, calendar_id, mode)
  SELECT DISTINCT w.id, j.value::bigint, 'ONLY'
  FROM jobwheel_workflow w CROSS JOIN LATERAL jsonb_array_elements_text(w.days::jsonb -> 'onlyOn') j
  WHERE j.value::bigint IN (SELECT id FROM jobwheel_calendar);
INSERT INTO jobwheel_workflow_calendar (workflow_id, calendar_id, mode)
  SELECT DISTINCT w.id, j.value::bigint, 'NEVER'
  FROM jobwheel_workflow w CROSS JOIN LATERAL jsonb_array_elements_text(w.days::jsonb -> 'neverOn') j
  WHERE j.value::bigint IN (SELECT id FROM jobwheel_calendar)
    AND NOT EXISTS (SELECT 1 FROM jobwheel_workflow_calendar r
                    WHERE r.workflow_id = w.id AND r.calendar_id = j.value::bigint);
INSERT INTO jobwheel_workflow_window (workflow_id, windows)
  SELECT w.id, string_agg(j.value, ',')
  FROM jobwheel_workflow w CROSS JOIN LATERAL jsonb_array_elements_text(w.days::jsonb -> 'exclusionWindows') j
  GROUP BY w.id;

ALTER TABLE jobwheel_workflow DROP COLUMN days;
