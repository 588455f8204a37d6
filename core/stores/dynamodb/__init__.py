"""DynamoDB stores (boto3, imported only when `STRATUS_STORE=dynamodb://TABLE`): one table for all state.

Key design (string keys; `expires` is both a field every read compares and the table's TTL attribute, since TTL
deletion is lazy):

    PK                                   SK        attributes
    {prefix}#session#<session id>        session   data (JSON), created, active, expires, v
    {prefix}#roster                      <id>      created, until (the session's expiry when last looked at), principal
    {prefix}#roster                      #count    count (live sessions, for the session limit)
    {prefix}#principal#<principal>       principal count (that principal's live sessions, for its quota)
    {prefix}#window#<bucket key>#<n>     window    count, expires (calls counted in fixed window n)
    {prefix}#breaker#<breaker key>       breaker   state, opened_at, trial_at, failures, expires, v

Sessions and breakers change by conditional writes on the item's version `v` (optimistic concurrency): the
state machines of `stratus.resilience` run here, and a write that lost a race is retried from a fresh read. Rate
limits are atomic counters per fixed window, which never need a retry however many containers race. A
tools/call's checks take at most two requests: one strongly consistent `BatchGetItem`, one write (a transaction
when several) for what changed. Sessions slide their expiry at most once per tenth of their idle timeout
(`TOUCH_SHARE`), so most session reads write nothing. boto3 calls run on the table's own worker threads, as many
as the client has pooled connections (not the event loop's default executor, which the application's blocking
calls share and which a slow neighbour can fill), with botocore's timeouts and retry mode set explicitly;
`ConditionalCheckFailed` and every transport error are mapped to domain errors where the call is made
(`DynamoTable`).

botocore sends a request again when its answer is lost (a read timeout, a dropped connection), so a conditional
write may arrive a second time after it was applied, and then fail its own condition. Every such write is
idempotent: a transaction carries a `ClientRequestToken` (DynamoDB applies the same token once, for ten minutes),
and the items a conditional write creates or moves carry the write's token `w`, so a condition that fails on the
writer's own token reads as done. The item is seen in the same round trip (`ReturnValuesOnConditionCheckFailure`).
The item tokens also hold where the request token is not honoured (moto's server, which ignores it).

DynamoDB event logs, pending server-to-client requests, tasks and caches, in the same table.

    PK                                   SK                 attributes
    {prefix}#stream#<stream>             seq                seq (counter), expires, w
    {prefix}#stream#<stream>             event#<seq, 12d>   data, expires
    {prefix}#pending#<request>           pending            state (open / answered / taken), reply, expires, w
    {prefix}#task#<task id>              task               principal, status, result, created, updated, expires, w
    {prefix}#cache#<key>                 cache              value, expires, w

DynamoDB cannot push, so a waiter polls its pending item with a growing interval (10 ms up to 250 ms).

`w` is the token of the last conditional write of the item (see `stratus.stores.dynamodb`): when botocore resends a
write whose answer was lost and the resend fails its condition, the item it gets back names that write, and the
write reads as done instead of as refused.
"""
