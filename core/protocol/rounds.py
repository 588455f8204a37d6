"""Multi round-trip requests (2026-07-28): the answers a retried request carries, and the `input_required` result
that asks for more.

A handler is replayed from the start on each round; nothing is kept between rounds but the sealed `requestState`
the client echoes, and each state's nonce is claimed once in the shared store so it cannot be replayed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stratus.protocol.call import Call
from stratus.protocol.request_state import STATE_TTL_SECONDS, RequestStateError, StateSealer, request_digest
from stratus.request.inputs import InputRound
from stratus.types import JsonObject

if TYPE_CHECKING:
    from stratus.stores.base import CacheStore


class InputRounds:
    """Opens a request's round from its `requestState` and `inputResponses`, and seals the next one."""

    def __init__(self, sealer: StateSealer, cache: CacheStore) -> None:
        self.sealer = sealer
        self.cache = cache

    async def open(self, call: Call) -> InputRound | None:
        """At 2026-07-28, the answers this attempt carries: earlier rounds' from its sealed requestState (claimed
        once), this round's from inputResponses. None on the handshake-era wire."""
        if not call.stateless or call.params.get("requestState") is None:
            return self.first(call)
        digest = request_digest(call.request.method, call.params)
        answers, nonce = self.sealer.open(call.params["requestState"], principal=call.principal_key, digest=digest)
        if not await self.cache.claim(f"mrtr:{nonce}", STATE_TTL_SECONDS):
            raise RequestStateError
        return self._with_responses(call, answers)

    def first(self, call: Call) -> InputRound | None:
        """`open` for an attempt without a requestState, which claims nothing (no await, so a call that asks
        nothing pays for no coroutine): this round's answers at 2026-07-28, and in a task's run on either era (its
        answers kept with the task); None for a handshake-era call, which asks on its stream."""
        return self._with_responses(call, {}) if call.stateless or call.steps is not None else None

    @staticmethod
    def _with_responses(call: Call, answers: dict[str, Any]) -> InputRound:
        responses = call.params.get("inputResponses")
        if isinstance(responses, dict):
            answers.update(responses)
        return InputRound(answers)

    def required(self, call: Call, inputs: InputRound | None) -> JsonObject:
        """The `input_required` result: this round's questions and every answer so far, sealed. A task's or a
        suspended call's run keeps its answers in the store, so it seals nothing."""
        assert inputs is not None
        if call.steps is not None:
            return {"resultType": "input_required", "inputRequests": inputs.asked}
        digest = request_digest(call.request.method, call.params)
        state, _ = self.sealer.seal(
            {key: value for key, value in inputs.answers.items() if isinstance(value, dict)},
            principal=call.principal_key,
            digest=digest,
        )
        return {"resultType": "input_required", "inputRequests": inputs.asked, "requestState": state}
