//! Executor routing strategies (in progress).
