"""Asking the client at 2026-07-28: a handler's questions become `inputRequests`, and its retry replays it with
the answers.

A handler simply awaits `ctx.elicit(...)` (or `create_message`, `list_roots`). In a stateless request each question
has a key (given, or numbered in the order asked); when the round holds an answer for that key the call returns
it, otherwise the question is recorded and the handler stops with `InputRequired`. The dispatcher then answers
`input_required` with every question recorded this round and the answers so far sealed into `requestState`;
the client's retry runs the handler again from the start, now with answers. Questions awaited together (e.g.
with `asyncio.gather`) are asked in the same round.
"""

from __future__ import annotations

from typing import Any

from stratus.types import JsonObject

_SHORT = {"elicitation/create": "elicit", "sampling/createMessage": "sample", "roots/list": "roots"}


class InputRequired(Exception):  # noqa: N818 - a signal that ends the round, not an error
    """The handler asked something the client has not answered yet."""


class OutOfTime(InputRequired):
    """A task's next step might not finish in this invocation (`stratus.server.steps`): the run ends between two
    steps and goes on in the next invocation of the durable task worker. A signal that ends the run, like a question,
    never an error."""


class InputRound:
    """The answers available to one attempt of a stateless request, and the questions it asked without one."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: dict[str, JsonObject] = {}
        self._numbered = 0

    def answer(self, method: str, params: JsonObject, key: str | None) -> JsonObject:
        """The client's answer to this question, or (after recording it) InputRequired.

        Raises:
            InputRequired: there is no usable answer yet.
        """
        if key is None:
            self._numbered += 1
            key = f"{_SHORT.get(method, 'input')}-{self._numbered}"
        found = self.answers.get(key)
        if isinstance(found, dict):
            return found
        self.asked[key] = {"method": method, "params": params}
        raise InputRequired(key)
