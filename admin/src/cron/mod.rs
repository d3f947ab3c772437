//! Quartz cron expressions and next-fire-time computation (in progress).
