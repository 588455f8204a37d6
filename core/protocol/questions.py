"""Questions to a client whose replies are kept with a stored record, not awaited by anything running: a task's
(2025-11-25 tasks) and a suspended call's (`stratus.protocol.relayed_calls`).

Both ask as a 2026-07-28 multi round-trip request does (`stratus.request.inputs`): each question has a key, and a
question without an answer ends the run (the task `input_required`, the call suspended). The questions go out to the
client as requests on a stream: a task's on its client's `tasks/result` stream, carrying the
`io.modelcontextprotocol/related-task` metadata (Tasks, "Input Required Status"); a suspended call's on the call's own
stream, before it ends for the client to poll. A question's request id names its record and key
(`stratus-task:<task id>:<key>`, `stratus-call:<call id>:<key>`), so a reply POSTed to any container is kept with the
record, and once the last one is in, the run starts again with the answers. The handshake transport reads every
reply's id here, so this module imports nothing more at load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from stratus.types import JsonObject

if TYPE_CHECKING:
    from stratus.request.outbound import Outbound

Kind = Literal["stratus-task:", "stratus-call:"]
TASK: Kind = "stratus-task:"
CALL: Kind = "stratus-call:"
PREFIXES = (TASK, CALL)
"""What a question's id starts with (`str.startswith` takes the tuple: one test per reply)."""


def question_id(kind: Kind, record_id: str, key: str) -> str:
    """The request id of question `key` of the task or call `record_id`."""
    return f"{kind}{record_id}:{key}"


def parse_question_id(request_id: object) -> tuple[Kind, str, str] | None:
    """The kind, record id and question key a request id names; None for any other id."""
    if not isinstance(request_id, str):
        return None
    for kind in PREFIXES:
        if request_id.startswith(kind):
            record_id, colon, key = request_id[len(kind) :].partition(":")
            return (kind, record_id, key) if colon and record_id and key else None
    return None


async def ask(outbound: Outbound, kind: Kind, record_id: str, questions: JsonObject) -> None:
    """Send `questions` (`{key: {"method", "params"}}`) to the client on `outbound`; a task's are related to it."""
    for key, question in questions.items():
        params: JsonObject = dict(question.get("params") or {})
        if kind == TASK:
            from stratus.protocol.task_wire import RELATED_TASK_META  # with the task service: off the cold path

            params["_meta"] = {**(params.get("_meta") or {}), RELATED_TASK_META: {"taskId": record_id}}
        await outbound.send_request(question_id(kind, record_id, key), str(question.get("method")), params)
