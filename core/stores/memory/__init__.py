"""In-process stores, the embedded default for local runs and tests: sessions, limits, event logs, pending
requests, tasks and caches in dicts, for one process only. Atomic because nothing awaits between reading and
writing a value."""
