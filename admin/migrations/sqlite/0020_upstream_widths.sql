-- MySQL only: widens an adopted xxl-job 2.x database's narrow columns (see the MySQL migration
-- of the same name). Here the upstream tables are always jobwheel's own, already wide; the
-- migration exists so that every backend has the same list (docs/storage.md).
SELECT 1;
