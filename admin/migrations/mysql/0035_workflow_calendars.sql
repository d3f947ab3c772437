-- Issue 59: a workflow's calendars and exclusion windows are kept as a job's are, in side tables
-- (jobwheel_workflow_calendar: a reference per calendar, ONLY or NEVER; jobwheel_workflow_window:
-- the windows joined by commas), no longer as JSON in jobwheel_workflow.days. A calendar that a
-- workflow refers to can then not be deleted, checked in the same statement as for jobs. The
-- references and windows of every workflow are copied from the JSON (a reference to a calendar
-- that no longer exists is dropped, as the scheduler ignored it), then the column goes.
-- JSON_TABLE: MySQL 8.0 and MariaDB 10.6 or later.

CREATE TABLE IF NOT EXISTS `jobwheel_workflow_calendar` (
  `workflow_id` bigint(20) NOT NULL,
  `calendar_id` bigint(20) NOT NULL,
  `mode` varchar(8) NOT NULL,
  PRIMARY KEY (`workflow_id`, `calendar_id`),
  KEY `i_workflow_calendar_calendar` (`calendar_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `jobwheel_workflow_window` (
  `workflow_id` bigint(20) NOT NULL,
  `windows` varchar(255) NOT NULL,
  PRIMARY KEY (`workflow_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

INSERT INTO jobwheel_workflow_calendar (workflow_id, calendar_id, mode)
  SELECT DISTINCT w.id, j.c, 'ONLY'
  FROM jobwheel_workflow w,
       JSON_TABLE(IF(JSON_VALID(w.days), w.days, '{}'), '$.onlyOn[*]' COLUMNS (c BIGINT PATH '$')) j
  WHERE j.c IN (SELECT id FROM jobwheel_calendar);
INSERT INTO jobwheel_workflow_calendar (workflow_id, calendar_id, mode)
  SELECT DISTINCT w.id, j.c, 'NEVER'
  FROM jobwheel_workflow w,
       JSON_TABLE(IF(JSON_VALID(w.days), w.days, '{}'), '$.neverOn[*]' COLUMNS (c BIGINT PATH '$')) j
  WHERE j.c IN (SELECT id FROM jobwheel_calendar)
    AND NOT EXISTS (SELECT 1 FROM jobwheel_workflow_calendar r WHERE r.workflow_id = w.id AND r.calendar_id = j.c);
INSERT INTO jobwheel_workflow_window (workflow_id, windows)
  SELECT w.id, GROUP_CONCAT(j.win SEPARATOR ',')
  FROM jobwheel_workflow w,
       JSON_TABLE(IF(JSON_VALID(w.days), w.days, '{}'), '$.exclusionWindows[*]' COLUMNS (win VARCHAR(32) PATH '$')) j
  GROUP BY w.id;

ALTER TABLE jobwheel_workflow DROP COLUMN days;
