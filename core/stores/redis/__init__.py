"""Redis stores (redis-py asyncio): every atomic step is one Lua script, run by SHA.

Keys live under a prefix and carry a hash tag, so all keys of one session, bucket or breaker sit in one slot of a
Redis Cluster / ElastiCache Serverless:

    {prefix}:{s:<session id>}          hash: data (JSON), created, expires (slid by each load), w (write token);
                                       once ended, for GRACE_SECONDS: ended (the ending write's token) alone
    {prefix}:{roster}:expires          sorted set: session id -> its expiry when last looked at
    {prefix}:{roster}:created          sorted set: session id -> its creation time
    {prefix}:{roster}:owners           hash: session id -> its principal (anonymous sessions are not in it)
    {prefix}:{roster}:principals       hash: principal -> its live sessions (for its quota)
    {prefix}:{rl:<limit key>}          hash: tokens, ts
    {prefix}:{br:<breaker key>}        hash: state, opened_at, trial_at, seq
    {prefix}:{br:<breaker key>}:fails  sorted set of failure times

Expiry is a field compared on every read; Redis key TTLs (with a grace period) only collect garbage. The roster
counts live sessions for the session limit and `/health`: a request sliding a session's expiry does not touch it,
so `sweep` re-reads the sessions whose roster expiry has passed, moving the live ones forward and dropping the
rest. A session's principal is counted in the roster's slot too, so one script admits a session against the global
limit and its principal's quota together, and one frees both. One client,
with its connection pool, serves every warm invocation on the process's one event loop. Socket timeouts, a
single immediate retry and a bounded wait for a pooled connection bound every call; a store that does not answer
becomes `StoreUnavailableError`.

Redis event logs, pending server-to-client requests, tasks and caches.

    {prefix}:{ev:<stream>}:seq / :events     hash (seq, expires), list of "seq|data" (newest `max_events`)
    {prefix}:{ev:<stream>}:tokens            sorted set: the newest appends' write tokens -> their seq
    {prefix}:{pr:<request>}:open / :reply    marker ('1' while a reply is awaited, then 'answered:<token>'), list
                                             the reply is pushed to
    {prefix}:{t:<task id>}                   hash: principal, status, result, created, updated, expires, w
    {prefix}:{c:<key>}                       string "expires|value" (a claim's value: its write token)

Each write a dropped connection may make redis-py send twice carries a write token (see
`stratus.stores.redis_scripts`), so the second run answers like the first and adds nothing.

A follower of an event log subscribes to the channel named like its events list, which every append publishes
to, so a new event wakes it at once and an idle follower sends nothing. On a Redis Cluster (`redis+cluster://`)
that channel is a shard channel (SPUBLISH / SSUBSCRIBE), in the slot of the stream's keys, so an event reaches only
the shard holding its stream. A waiter blocks on its reply list
(BLPOP) in slices shorter than the socket timeout, so a reply posted to any container wakes it at once without
polling.
"""
