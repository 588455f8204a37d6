"""A task's questions on the handshake-era wire (2025-11-25 tasks).

A task's run asks its client as a 2026-07-28 multi round-trip request does (`stratus.request.inputs`): each question
has a key, and a question without an answer ends the run with the task `input_required` (`TaskService.run`). A
2026-07-28 client reads the questions in `tasks/get` and answers with `tasks/update`. A 2025-11-25 client calls
`tasks/result` when it sees `input_required` (Tasks, "Input Required Status"): the questions go out on that
request's stream as requests to the client, each carrying the `io.modelcontextprotocol/related-task` metadata, and
the client POSTs its replies as for any request. A question's request id names its task and key
(`stratus-task:<task id>:<key>`), so its reply is kept with the task on whichever container it lands, with no waiter
anywhere: once the last one is in, the task runs again with the answers (`TaskService.answer`). The handshake
transport reads every reply's id here, so this module imports nothing more at load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stratus.types import JsonObject

if TYPE_CHECKING:
    from stratus.request.outbound import Outbound

QUESTION_PREFIX = "stratus-task:"


def question_id(task_id: str, key: str) -> str:
    """The request id of the task's question `key`."""
    return f"{QUESTION_PREFIX}{task_id}:{key}"


def parse_question_id(request_id: object) -> tuple[str, str] | None:
    """The task id and question key a request id names; None for any other id."""
    if not isinstance(request_id, str) or not request_id.startswith(QUESTION_PREFIX):
        return None
    task_id, colon, key = request_id[len(QUESTION_PREFIX) :].partition(":")
    return (task_id, key) if colon and task_id and key else None


async def ask(outbound: Outbound, task_id: str, questions: JsonObject) -> None:
    """Send the task's `questions` (`{key: {"method", "params"}}`) to its client on `outbound`, related to the task."""
    from stratus.protocol.task_wire import RELATED_TASK_META  # with the task service; this module is on the cold path

    for key, question in questions.items():
        params: JsonObject = dict(question.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), RELATED_TASK_META: {"taskId": task_id}}
        await outbound.send_request(question_id(task_id, key), str(question.get("method")), params)
