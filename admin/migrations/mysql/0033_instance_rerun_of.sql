-- Issue 59: how a workflow instance started is a name (TriggerType: CRON, MISFIRE, MANUAL, API,
-- RERUN), no longer free text; a rerun names the instance it reruns in rerun_of instead of in
-- the text ("RERUN of 12" becomes RERUN with rerun_of 12). The API still shows "RERUN of 12".
-- MySQL assigns left to right: rerun_of is read from the old text before it is replaced.

ALTER TABLE jobwheel_workflow_instance ADD COLUMN rerun_of BIGINT NULL;
UPDATE jobwheel_workflow_instance SET rerun_of = CAST(SUBSTRING(trigger_type, 10) AS SIGNED), trigger_type = 'RERUN'
  WHERE trigger_type LIKE 'RERUN of %';
