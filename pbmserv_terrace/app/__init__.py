"""The running server: drivers (IMAP, embedded SMTP, pipe), ordering, the outbox sender, timers, health."""
