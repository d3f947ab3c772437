//! Shared helpers for system tests.
