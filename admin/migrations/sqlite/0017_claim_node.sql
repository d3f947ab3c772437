-- Shared scheduling: the admin (its jobwheel_scheduler node name) whose pre-read took the claim.
-- Recovery leaves a claim alone while that admin is live — it may only be slow, and it fires
-- its own claims — and recovers it once the admin has left the live count. NULL: the claim was
-- taken under upstream's exclusive lock, and recovery goes by the 3 s grace alone.
ALTER TABLE jobwheel_ring_claim ADD COLUMN node VARCHAR(100) DEFAULT NULL;
