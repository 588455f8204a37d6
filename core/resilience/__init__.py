"""Pure resilience arithmetic: backoff, deadlines, token buckets and the circuit-breaker state machine.

No I/O here: stores apply these functions atomically, and the pipeline decides when to call them.
"""
