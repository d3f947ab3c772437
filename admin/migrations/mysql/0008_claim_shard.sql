-- A broadcast trigger fans out into one claim per shard: its own claim becomes shard 0 and, in
-- the same transaction, a pending claim "i/total" is inserted for every other shard. Each shard
-- then consumes its own claim when it fires, so an admin that dies between shards leaves the
-- unfired ones pending for recovery instead of losing them. NULL on a whole-job claim.
ALTER TABLE jobwheel_ring_claim ADD COLUMN shard VARCHAR(16) DEFAULT NULL;
