"""The Lua scripts that make each Redis store operation atomic.

Every script takes the caller's clock (`now`, seconds) as an argument instead of reading Redis `TIME`: Lambda
hosts keep their clocks synchronized, and an injected clock lets the contract tests move time without sleeping.
Keys of one script share a hash tag, so each script runs on one slot of a Redis Cluster. Lua numbers are
returned as strings: Redis would truncate floats to integers.

redis-py sends a pipeline again when a dropped connection lost its answer (one retry, `redis_client`), so a
script may run twice. Each script that changes state either does nothing the second time (ROSTER_ADMIT finds the
session admitted, SESSION_LOAD and SESSION_SAVE write the same values, ROSTER_FORGET finds nothing to free), or
takes the caller's write token and answers the second run as the first when the state carries that token.
Rate limits and breakers are not: a resent BUCKET_TAKE takes twice, a resent BREAKER_RECORD counts a failure twice,
and a resent BREAKER_ADMIT that took the half-open trial finds the trial taken and refuses the call (a refusal with
its retry time, never an error; the trial is free again after the cool-down).
"""

from __future__ import annotations

# KEYS[1] session hash. ARGV: now, ttl seconds, grace seconds. -> {data, created, active} or nil.
SESSION_LOAD = """
local row = redis.call('HMGET', KEYS[1], 'data', 'created', 'expires')
if not row[1] or tonumber(row[3]) <= tonumber(ARGV[1]) then return false end
local expires = tonumber(ARGV[1]) + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'expires', tostring(expires))
redis.call('PEXPIRE', KEYS[1], math.ceil((tonumber(ARGV[2]) + tonumber(ARGV[3])) * 1000))
return {row[1], row[2], ARGV[1], tostring(expires)}
"""

# The start of a create that may arrive twice, for a script that first sets `now` and `token` (the write token):
# KEYS[1] is the new object's hash. A live object there answers 1 (created) when it carries this write's token (the
# same write arriving twice: redis-py resends a pipeline whose answer a dropped connection lost), else 0 (taken);
# an expired one is cleared for the new one.
CREATE_ONCE = """
local row = redis.call('HMGET', KEYS[1], 'expires', 'w')
if row[1] and tonumber(row[1]) > now then
  if row[2] == token then return 1 end
  return 0
end
redis.call('DEL', KEYS[1])
"""

# KEYS[1] session hash. ARGV: data, now, ttl, grace, write token. -> 1 created (also when this same create arrives
# again), 0 taken (a live session has this id).
SESSION_CREATE = (
    "local now, token = tonumber(ARGV[2]), ARGV[5]"
    + CREATE_ONCE
    + """local until_ = tonumber(ARGV[2]) + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'created', ARGV[2], 'expires', tostring(until_), 'w', ARGV[5])
redis.call('PEXPIRE', KEYS[1], math.ceil((tonumber(ARGV[3]) + tonumber(ARGV[4])) * 1000))
return 1
"""
)

# KEYS[1] session hash. ARGV: data, now. -> 1 saved, 0 gone (a save never brings back an ended session).
SESSION_SAVE = """
local expires = redis.call('HGET', KEYS[1], 'expires')
if not expires or tonumber(expires) <= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'data', ARGV[1])
return 1
"""

# KEYS[1] roster by expiry, KEYS[2] roster by creation (sorted sets of session ids), KEYS[3] owners (hash: session
# id -> principal), KEYS[4] each principal's live sessions (hash: principal -> count). ARGV: id, now, expires, limit
# (0: none), principal ('' when anonymous or with no quota: counted only toward the limit), quota per principal
# (0: none).
# -> 1 admitted (also when already in: the same write sent again), 0 the roster is full, -1 the principal's quota
# is. Entries whose session has ended only make the counts high, never low.
ROSTER_ADMIT = """
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 1 end
local principal, quota = ARGV[5], tonumber(ARGV[6])
if principal ~= '' and quota > 0 and (tonumber(redis.call('HGET', KEYS[4], principal)) or 0) >= quota then
  return -1
end
local limit = tonumber(ARGV[4])
if limit > 0 and redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
if principal ~= '' then
  redis.call('HSET', KEYS[3], ARGV[1], principal)
  redis.call('HINCRBY', KEYS[4], principal, 1)
end
return 1
"""

# KEYS: the four of ROSTER_ADMIT. ARGV: id. -> 1 removed, 0 it was not in the roster. Frees the session's place
# and its principal's, once however many ending or sweeping containers race.
ROSTER_FORGET = """
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
local owner = redis.call('HGET', KEYS[3], ARGV[1])
if owner then
  redis.call('HDEL', KEYS[3], ARGV[1])
  if redis.call('HINCRBY', KEYS[4], owner, -1) <= 0 then redis.call('HDEL', KEYS[4], owner) end
end
return removed
"""

# KEYS[1] any key. -> 1 deleted, 0 absent (a plain DEL, as a script so that it pipelines with the others).
KEY_DELETE = """
return redis.call('DEL', KEYS[1])
"""

# KEYS[1] session hash. ARGV: write token, seconds to keep the tombstone. -> 1 ended (also when this same write
# arrives again), 0 no such session (or another request ended it). The session is replaced by a tombstone naming
# the write (no data: it loads as absent, and a create may reuse the key).
SESSION_END = """
local ended = redis.call('HGET', KEYS[1], 'ended')
if ended then
  if ended == ARGV[1] then return 1 end
  return 0
end
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'ended', ARGV[1])
redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) * 1000))
return 1
"""

# KEYS[1] bucket hash. ARGV: now, rate, burst, cost. -> {allowed 0/1, retry_after}.
BUCKET_TAKE = """
local now, rate, burst, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local row = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(row[1])
if tokens == nil then
  tokens = burst
else
  tokens = math.min(burst, tokens + math.max(0, now - tonumber(row[2])) * rate)
end
local allowed, retry = 0, 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  retry = (cost - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', ARGV[1])
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {allowed, string.format('%.17g', retry)}
"""

# KEYS[1] bucket hash. ARGV: now, rate, burst, cost. Gives back tokens a refused call took (never past burst).
BUCKET_GIVE = """
local now, rate, burst, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local row = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
if row[1] == false then return 0 end
local tokens = math.min(burst, tonumber(row[1]) + math.max(0, now - tonumber(row[2])) * rate + cost)
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', ARGV[1])
return 1
"""

# KEYS[1] breaker hash. ARGV: now, cooldown. -> {allowed 0/1, state, retry_after, trial} (trial: the `now` of a
# half-open trial this call took, else '').
BREAKER_ADMIT = """
local now, cooldown = tonumber(ARGV[1]), tonumber(ARGV[2])
local row = redis.call('HMGET', KEYS[1], 'state', 'opened_at', 'trial_at')
local state = row[1] or 'closed'
if state == 'open' then
  local reopen = tonumber(row[2]) + cooldown
  if now < reopen then return {0, 'open', string.format('%.17g', reopen - now), ''} end
  redis.call('HSET', KEYS[1], 'state', 'half_open', 'trial_at', ARGV[1])
  return {1, 'half_open', '0', ARGV[1]}
end
if state == 'half_open' then
  local trial = tonumber(row[3])
  if trial == nil or now - trial >= cooldown then
    redis.call('HSET', KEYS[1], 'trial_at', ARGV[1])
    return {1, 'half_open', '0', ARGV[1]}
  end
  return {0, 'half_open', string.format('%.17g', cooldown), ''}
end
return {1, 'closed', '0', ''}
"""

# KEYS[1] breaker hash. ARGV: trial. Gives back the half-open trial taken at `trial` if it is still the current one.
BREAKER_RELEASE = """
local row = redis.call('HMGET', KEYS[1], 'state', 'trial_at')
if row[1] == 'half_open' and row[2] == ARGV[1] then redis.call('HDEL', KEYS[1], 'trial_at') return 1 end
return 0
"""

# KEYS[1] breaker hash, KEYS[2] failure times (sorted set). ARGV: now, success 0/1, threshold, window, cooldown.
# -> {state before, state after}.
BREAKER_RECORD = """
local now, success = tonumber(ARGV[1]), ARGV[2] == '1'
local threshold, window, cooldown = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local keep = math.ceil((window + cooldown) * 1000) + 1000
local before = redis.call('HGET', KEYS[1], 'state') or 'closed'
local function open()
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'state', 'open', 'opened_at', ARGV[1])
  redis.call('HDEL', KEYS[1], 'trial_at')
  redis.call('PEXPIRE', KEYS[1], keep)
  return {before, 'open'}
end
if before == 'half_open' then
  if success then
    redis.call('DEL', KEYS[1], KEYS[2])
    return {before, 'closed'}
  end
  return open()
end
if success or before == 'open' then return {before, before} end
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('ZADD', KEYS[2], now, ARGV[1] .. ':' .. seq)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%.17g', now - window))
if redis.call('ZCARD', KEYS[2]) >= threshold then return open() end
redis.call('PEXPIRE', KEYS[1], keep)
redis.call('PEXPIRE', KEYS[2], keep)
return {before, before}
"""

# KEYS[1] counter hash (seq, expires), KEYS[2] events list, KEYS[3] write tokens (sorted set: token -> seq, the
# newest `max events`). ARGV: data, max events, ttl, now, grace, write token, publishing command (PUBLISH, or on a
# cluster SPUBLISH: the channel is KEYS[2], so its shard is the one running the script).
# -> the event's sequence number, also published on the channel named like the events list (waking followers).
# The same append arriving again finds its token and answers its number without adding a copy. A stream past its
# expiry starts again from 1.
EVENT_APPEND = """
local now, ttl = tonumber(ARGV[4]), tonumber(ARGV[3])
local expires = redis.call('HGET', KEYS[1], 'expires')
if expires and tonumber(expires) <= now then redis.call('DEL', KEYS[1], KEYS[2], KEYS[3]) end
local sent = redis.call('ZSCORE', KEYS[3], ARGV[6])
if sent then return tonumber(sent) end
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('HSET', KEYS[1], 'expires', string.format('%.17g', now + ttl))
redis.call('RPUSH', KEYS[2], seq .. '|' .. ARGV[1])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[2]), -1)
redis.call('ZADD', KEYS[3], seq, ARGV[6])
redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -tonumber(ARGV[2]) - 1)
local keep = math.ceil((ttl + tonumber(ARGV[5])) * 1000)
redis.call('PEXPIRE', KEYS[1], keep)
redis.call('PEXPIRE', KEYS[2], keep)
redis.call('PEXPIRE', KEYS[3], keep)
redis.call(ARGV[7], KEYS[2], seq)
return seq
"""

# KEYS[1] counter hash, KEYS[2] events list. ARGV: now. -> the kept events ("seq|data"), none once expired.
EVENT_READ = """
local expires = redis.call('HGET', KEYS[1], 'expires')
if not expires or tonumber(expires) <= tonumber(ARGV[1]) then return {} end
return redis.call('LRANGE', KEYS[2], 0, -1)
"""

# KEYS[1] marker ('1' while open, then 'answered:<token>' until it expires), KEYS[2] reply list. ARGV: reply,
# write token. -> 1 delivered (also when this same reply arrives again), 0 nobody waits (or already answered).
PENDING_DELIVER = """
local state = redis.call('GET', KEYS[1])
if state == 'answered:' .. ARGV[2] then return 1 end
if state ~= '1' then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
redis.call('SET', KEYS[1], 'answered:' .. ARGV[2], 'KEEPTTL')
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], math.max(ttl, 1000))
return 1
"""

# KEYS[1] task hash. ARGV: now, ttl, grace, principal, status, request, write token. -> 1 created (also when this
# same create arrives again), 0 taken.
TASK_CREATE = (
    "local now, token = tonumber(ARGV[1]), ARGV[7]"
    + CREATE_ONCE
    + """local until_ = tonumber(ARGV[1]) + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'principal', ARGV[4], 'status', ARGV[5], 'request', ARGV[6], 'created', ARGV[1],
  'updated', ARGV[1], 'expires', string.format('%.17g', until_), 'w', ARGV[7])
redis.call('PEXPIRE', KEYS[1], math.ceil((tonumber(ARGV[2]) + tonumber(ARGV[3])) * 1000))
return 1
"""
)

# KEYS[1] task hash. ARGV: now, status, has result 0/1, result, write token, expected statuses... -> 1 moved (also
# when this same move arrives again), 0 not.
TASK_UPDATE = """
local row = redis.call('HMGET', KEYS[1], 'status', 'expires', 'w')
if not row[1] or tonumber(row[2]) <= tonumber(ARGV[1]) then return 0 end
if row[3] == ARGV[5] then return 1 end
local allowed = false
for i = 6, #ARGV do if ARGV[i] == row[1] then allowed = true end end
if not allowed then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'updated', ARGV[1], 'w', ARGV[5])
if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'result', ARGV[4]) end
return 1
"""

# KEYS[1] cache key. ARGV: now, ttl, grace, write token. -> 1 claimed (also when this same claim arrives again),
# 0 someone holds it. A claim's value is the token of the call that took it.
CACHE_CLAIM = """
local stored = redis.call('GET', KEYS[1])
if stored then
  local expires, holder = string.match(stored, '^([^|]*)|(.*)$')
  if tonumber(expires) and tonumber(expires) > tonumber(ARGV[1]) then
    if holder == ARGV[4] then return 1 end
    return 0
  end
end
redis.call('SET', KEYS[1], string.format('%.17g', tonumber(ARGV[1]) + tonumber(ARGV[2])) .. '|' .. ARGV[4],
  'PX', math.ceil((tonumber(ARGV[2]) + tonumber(ARGV[3])) * 1000))
return 1
"""

ALL = {
    "session_load": SESSION_LOAD,
    "session_create": SESSION_CREATE,
    "session_save": SESSION_SAVE,
    "roster_admit": ROSTER_ADMIT,
    "roster_forget": ROSTER_FORGET,
    "key_delete": KEY_DELETE,
    "session_end": SESSION_END,
    "bucket_take": BUCKET_TAKE,
    "bucket_give": BUCKET_GIVE,
    "breaker_admit": BREAKER_ADMIT,
    "breaker_release": BREAKER_RELEASE,
    "breaker_record": BREAKER_RECORD,
    "event_append": EVENT_APPEND,
    "event_read": EVENT_READ,
    "pending_deliver": PENDING_DELIVER,
    "task_create": TASK_CREATE,
    "task_update": TASK_UPDATE,
    "cache_claim": CACHE_CLAIM,
}
