//! Storage on SQLite, PostgreSQL and MySQL (in progress).
