-- When a claim was taken (status 0 -> 1), epoch ms. The lost-job monitor closes a log row with no
-- trigger outcome as "stalled" only once its trigger time *and* its claim's take are older than
-- --lost-job-timeout: a claim fired late (recovered after its admin died, or after a database
-- outage) has an old trigger time, and without this its row was closed while its /run was still
-- on its way, and the executor's real result was then refused as a repeat. NULL: pending,
-- discarded, or taken before this column existed.
ALTER TABLE jobwheel_ring_claim ADD COLUMN taken_at_ms BIGINT DEFAULT NULL;
