"""The conformance "everything server": the fixture contract the official MCP conformance suite calls.

`scripts/conformance` serves this module with `stratus serve --app examples.everything:server` and runs the
suite against it at both protocol eras. Names and values follow the contract in the conformance docs exactly;
clients check some of the texts verbatim, so do not reword them.

Fixtures that need a streamed response or multi-round requests (log and progress notifications mid-call,
sampling, elicitation, roots, `input_required` results) are written the way a server author would write them
against `Context`: the transport streams them, or at 2026-07-28 turns a question into an `input_required` round.
`tests/conformance/expected-failures-*.txt` lists the scenarios that still fail, with the reason.
"""

from __future__ import annotations

import asyncio
import io
import json
import struct
import wave
import zlib
from typing import Annotated, Any

from pydantic import BaseModel, Field

from stratus import (
    Audio,
    Context,
    EmbeddedResource,
    Image,
    McpServer,
    Message,
    Text,
    TextResource,
    ToolError,
    user,
)
from stratus.errors import InternalError

server = McpServer(
    "stratus-everything",
    "1.0.0",
    title="Stratus conformance server",
    instructions="Fixtures for the MCP conformance suite: every content type, resources, prompts and completions.",
)


# -- media, built here so the repository holds no binary files ---------------------------------------------------


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _one_pixel_png() -> bytes:
    """A valid 1x1 red RGBA PNG."""
    header = struct.pack(
        ">IIBBBBB", 1, 1, 8, 6, 0, 0, 0
    )  # width, height, bit depth, RGBA, deflate, filter, no interlace
    pixels = zlib.compress(b"\x00\xff\x00\x00\xff")  # filter byte "none", then one red, opaque pixel
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", pixels) + _png_chunk(b"IEND", b"")


def _short_wav() -> bytes:
    """A valid mono 16-bit 8 kHz WAV holding 10 ms of silence."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(8000)
        audio.writeframes(b"\x00\x00" * 80)
    return buffer.getvalue()


PNG = _one_pixel_png()
WAV = _short_wav()


def _json(value: Any) -> str:
    """JSON as JavaScript's `JSON.stringify` writes it, which is what the reference servers return."""
    return json.dumps(value, separators=(",", ":"))


# -- content tools --------------------------------------------------------------------------------------------


@server.tool()
def test_simple_text() -> str:
    """Tests simple text content response."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> Image:
    """Tests image content response (a 1x1 PNG)."""
    return Image(PNG, "image/png")


@server.tool()
def test_audio_content() -> Audio:
    """Tests audio content response (a short WAV)."""
    return Audio(WAV, "audio/wav")


@server.tool()
def test_embedded_resource() -> EmbeddedResource:
    """Tests embedded resource content response."""
    return EmbeddedResource(
        TextResource("test://embedded-resource", "This is an embedded resource content.", "text/plain")
    )


@server.tool()
def test_multiple_content_types() -> list[Text | Image | EmbeddedResource]:
    """Tests response with multiple content types (text, image, resource)."""
    return [
        Text("Multiple content types test:"),
        Image(PNG, "image/png"),
        EmbeddedResource(
            TextResource("test://mixed-content-resource", _json({"test": "data", "value": 123}), "application/json")
        ),
    ]


@server.tool()
def test_error_handling() -> str:
    """Tests error response handling: the result has isError set, it is not a JSON-RPC error."""
    raise ToolError("This tool intentionally returns an error for testing")


# -- notifications during a call (delivered once responses can stream) ----------------------------------------


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Tests tool that emits log messages during execution."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Tests tool that reports progress notifications."""
    for step in (0, 50, 100):
        if step:
            await asyncio.sleep(0.05)
        await ctx.report_progress(step, 100, f"Completed step {step} of 100")
    return f"Progress reported for token {ctx.progress_token}"


@server.tool()
async def test_reconnection() -> str:
    """Tests SSE stream disconnection and client reconnection (SEP-1699)."""
    await asyncio.sleep(0.1)
    return (
        "Reconnection test completed successfully. If you received this, "
        "the client properly reconnected after stream closure."
    )


@server.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs one info message, delivered only when the request's _meta sets a log level."""
    await ctx.info("test_logging_tool ran")
    return "Logged one info message"


# -- server-to-client requests (sampling, elicitation) --------------------------------------------------------


def _text_of(sampled: dict[str, Any]) -> str:
    content = sampled.get("content")
    if isinstance(content, list):
        content = next((block for block in content if isinstance(block, dict) and block.get("type") == "text"), None)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    return "No response"


def _ask_user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": {"type": "text", "text": text}}]


def _form(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


@server.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Tests server-initiated sampling (LLM completion request).

    Args:
        prompt: the prompt to send to the LLM.
    """
    sampled = await ctx.create_message(_ask_user(prompt), max_tokens=100)
    return f"LLM response: {_text_of(sampled)}"


@server.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Tests server-initiated elicitation (user input request).

    Args:
        message: the message to show the user.
    """
    schema = _form({"username": {"type": "string"}, "email": {"type": "string"}}, ["username", "email"])
    answer = await ctx.elicit(message, schema)
    return f"User response: action={answer.get('action')}, content={_json(answer.get('content') or {})}"


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Tests elicitation with default values for every primitive type (SEP-1034)."""
    schema = _form(
        {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
        [],
    )
    answer = await ctx.elicit("Please review and update the form fields with defaults", schema)
    return f"Elicitation completed: action={answer.get('action')}, content={_json(answer.get('content') or {})}"


def _titled(prefix: str, titles: tuple[str, str, str]) -> list[dict[str, str]]:
    return [{"const": f"{prefix}{number}", "title": title} for number, title in enumerate(titles, start=1)]


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Tests elicitation with the five enum schema shapes (SEP-1330)."""
    options = ["option1", "option2", "option3"]
    schema = _form(
        {
            "untitledSingle": {"type": "string", "description": "Select one option", "enum": options},
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": _titled("value", ("First Option", "Second Option", "Third Option")),
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": options},
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {"anyOf": _titled("value", ("First Choice", "Second Choice", "Third Choice"))},
            },
        },
        [],
    )
    answer = await ctx.elicit("Please select options from the enum fields", schema)
    return f"Elicitation completed: action={answer.get('action')}, content={_json(answer.get('content') or {})}"


# -- JSON Schema 2020-12 (pending upstream) -------------------------------------------------------------------


class Address(BaseModel):
    """A postal address."""

    street: str | None = None
    city: str | None = None


# An explicit inputSchema is listed verbatim: every 2020-12 keyword the author wrote reaches the client.
CONTACT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(input_schema=CONTACT_SCHEMA)
def json_schema_2020_12_tool(
    name: str | None = None,
    address: Address | None = None,
    contactMethod: str | None = None,  # noqa: N803 - the schema's own name
    phone: str | None = None,
    email: str | None = None,
) -> str:
    """Tool with JSON Schema 2020-12 features ($schema, $defs, $anchor, allOf/anyOf, if/then/else) for conformance
    testing (SEP-1613, SEP-2106)."""
    given = {"name": name, "contactMethod": contactMethod, "phone": phone, "email": email}
    arguments: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
    if address is not None:
        arguments["address"] = address.model_dump(exclude_none=True)
    return f"JSON Schema 2020-12 tool called with: {_json(arguments)}"


# -- 2026-07-28: multi-round requests (input_required) --------------------------------------------------------
# Each fixture asks through `Context` as it would on a streamed 2025-era call; at 2026-07-28 the dispatcher turns
# an ask into an `input_required` result and re-runs the handler with the answers. Keys are the conformance suite's.

_NAME_FORM = _form({"name": {"type": "string"}}, ["name"])
_CONFIRM_FORM = _form({"ok": {"type": "boolean"}}, ["ok"])


def _accepted(answer: dict[str, Any], field: str) -> Any:
    content = answer.get("content")
    if answer.get("action") != "accept" or not isinstance(content, dict) or field not in content:
        raise ToolError(f"The user did not provide {field} (action={answer.get('action')})")
    return content[field]


async def _client_roots(ctx: Context) -> list[dict[str, Any]]:
    """The client's roots (`roots/list`)."""
    roots = (await ctx.list_roots(key="client_roots")).get("roots")
    return [root for root in roots if isinstance(root, dict)] if isinstance(roots, list) else []


@server.tool()
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Asks the user's name through elicitation, then greets them (SEP-2322 multi-round request)."""
    name = _accepted(await ctx.elicit("What is your name?", _NAME_FORM, key="user_name"), "name")
    return f"Hello, {name}!"


@server.tool()
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Asks the client's model a question through sampling, then reports the answer (SEP-2322)."""
    sampled = await ctx.create_message(
        _ask_user("What is the capital of France?"), max_tokens=100, key="capital_question"
    )
    return f"Model said: {_text_of(sampled)}"


@server.tool()
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Asks the client for its roots, then lists them (SEP-2322)."""
    roots = await _client_roots(ctx)
    return "Roots: " + ", ".join(f"{root.get('name')} ({root.get('uri')})" for root in roots)


@server.tool()
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Asks for a confirmation and carries requestState between rounds (SEP-2322)."""
    ok = _accepted(await ctx.elicit("Please confirm", _CONFIRM_FORM, key="confirm"), "ok")
    return f"state-ok: confirmed={ok}"


@server.tool()
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Asks for a name (elicitation), a greeting (sampling) and the client's roots (SEP-2322)."""
    # Asked together, so the client gets all three in one round.
    asked, sampled, roots = await asyncio.gather(
        ctx.elicit("What is your name?", _NAME_FORM, key="user_name"),
        ctx.create_message(_ask_user("Generate a greeting"), max_tokens=50, key="greeting"),
        _client_roots(ctx),
    )
    return f"{_text_of(sampled)}, {_accepted(asked, 'name')}! You have {len(roots)} root(s)."


@server.tool()
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Asks two questions in two rounds, each with its own requestState (SEP-2322)."""
    name = _accepted(await ctx.elicit("Step 1: What is your name?", _NAME_FORM, key="step1"), "name")
    color_form = _form({"color": {"type": "string"}}, ["color"])
    color = _accepted(await ctx.elicit("Step 2: What is your favorite color?", color_form, key="step2"), "color")
    return f"{name} likes {color}."


@server.tool()
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Asks for a confirmation; a tampered requestState on the retry must be refused (SEP-2322)."""
    ok = _accepted(await ctx.elicit("Please confirm", _CONFIRM_FORM, key="confirm"), "ok")
    return f"Confirmed: {ok}"


@server.tool()
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only through what the client declared: sampling if `sampling`, elicitation if `elicitation`."""
    parts = []
    if "sampling" in ctx.client_capabilities:
        sampled = await ctx.create_message(_ask_user("Say something"), max_tokens=50, key="sample")
        parts.append(f"sampled: {_text_of(sampled)}")
    if "elicitation" in ctx.client_capabilities:
        answer = await ctx.elicit("Please confirm", _CONFIRM_FORM, key="ask")
        parts.append(f"confirmed: {_accepted(answer, 'ok')}")
    return "; ".join(parts) or "The client declared neither sampling nor elicitation"


@server.tool()
def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability; without it the request fails with -32021."""
    ctx.require_capability("sampling")
    return "The client declared the sampling capability"


@server.tool()
async def test_streaming_elicitation(ctx: Context) -> str:
    """Asks for a confirmation; at 2026-07-28 that is an input_required result, never a request on the stream."""
    answer = await ctx.elicit("Please confirm", _CONFIRM_FORM, key="confirm")
    return f"Confirmed: {_accepted(answer, 'ok')}"


@server.tool()
def test_trigger_tool_change() -> str:
    """Would change the tool list and notify subscriptions/listen streams (not served yet, so not advertised)."""
    return "No listChanged capability is advertised, so there is no tools/list_changed to publish"


@server.tool()
def test_trigger_prompt_change() -> str:
    """Would change the prompt list and notify subscriptions/listen streams (not served yet, so not advertised)."""
    return "No listChanged capability is advertised, so there is no prompts/list_changed to publish"


@server.tool()
def test_x_mcp_header(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
    """Echoes a parameter the client also sends as the Mcp-Param-Region header (SEP-2243).

    Args:
        region: a region name, mirrored in the Mcp-Param-Region header.
    """
    return f"Region: {region}"


# -- tasks (2025-11-25 experimental tasks; the 2026-07-28 io.modelcontextprotocol/tasks extension) -------------


@server.tool()
def greet(name: str) -> str:
    """Greets by name; never runs as a task."""
    return f"Hello, {name}!"


@server.tool(task="optional")
async def slow_compute(seconds: float, label: str = "") -> str:
    """Answers after `seconds`; a task for clients that support them (cancellable while it waits)."""
    await asyncio.sleep(seconds)
    return f"Computed {label or 'result'} after {seconds}s"


@server.tool(task="required")
async def failing_job() -> str:
    """Runs only as a task and fails as a tool (isError) after about a second, so its task completes."""
    await asyncio.sleep(1)
    raise ToolError("The job failed")


@server.tool(task="optional")
async def confirm_delete(ctx: Context, path: str = "reports/old.csv") -> str:
    """Asks the user to confirm (one elicitation), then answers; as a task it waits in input_required."""
    answer = await ctx.elicit(f"Delete {path}?", _form({"confirm": {"type": "boolean"}}, ["confirm"]), key="confirm")
    return f"Deleted {path}" if answer.get("action") == "accept" else f"Kept {path}"


@server.tool(task="optional")
async def multi_input(ctx: Context) -> str:
    """Asks two questions at once, so a task waits on two keys."""
    first, second = await asyncio.gather(
        ctx.elicit("First name?", _form({"name": {"type": "string"}}, ["name"]), key="first"),
        ctx.elicit("Last name?", _form({"name": {"type": "string"}}, ["name"]), key="last"),
    )
    return f"Got {first.get('action')} and {second.get('action')}"


@server.tool(task="optional")
def protocol_error_job() -> str:
    """Fails with a JSON-RPC error, so its task fails."""
    raise InternalError("The job crashed", http_status=200)


# -- resources ------------------------------------------------------------------------------------------------


@server.resource("test://static-text", name="static-text", title="Static Text Resource", mime_type="text/plain")
def static_text() -> str:
    """A static text resource for testing."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", title="Static Binary Resource", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG image) for testing."""
    return PNG


@server.resource("test://watched-resource", name="watched-resource", title="Watched Resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


@server.resource("test://template/{id}/data", name="template", title="Resource Template", mime_type="application/json")
def template_data(id: str) -> str:
    """A resource template with parameter substitution.

    Args:
        id: the identifier substituted into the URI and the data.
    """
    return _json({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


# -- prompts --------------------------------------------------------------------------------------------------


@server.prompt(title="Simple Test Prompt")
def test_simple_prompt() -> Message:
    """A simple prompt without arguments."""
    return user("This is a simple prompt for testing.")


@server.prompt(title="Prompt With Arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> Message:
    """A prompt with required arguments.

    Args:
        arg1: First test argument.
        arg2: Second test argument.
    """
    return user(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")


@server.prompt(title="Prompt With Embedded Resource")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message]:  # noqa: N803 (the contract's name)
    """A prompt that includes an embedded resource.

    Args:
        resourceUri: URI of the resource to embed.
    """
    resource = TextResource(resourceUri, "Embedded resource content for testing.", "text/plain")
    return [user(EmbeddedResource(resource)), user("Please process the embedded resource above.")]


@server.prompt(title="Prompt With Image")
def test_prompt_with_image() -> list[Message]:
    """A prompt that includes image content."""
    return [user(Image(PNG, "image/png")), user("Please analyze the image above.")]


@server.prompt(title="Prompt With Input Required")
async def test_input_required_result_prompt(ctx: Context) -> Message:
    """Asks the user which context to use before rendering (SEP-2322 on prompts/get)."""
    answer = await ctx.elicit(
        "What context should the prompt use?", _form({"context": {"type": "string"}}, ["context"]), key="user_context"
    )
    content = answer.get("content") if answer.get("action") == "accept" else None
    context = content.get("context") if isinstance(content, dict) else None
    return user(f"Answer using this context: {context or 'none given'}")


_ARGUMENT_SUGGESTIONS = {"arg1": ["testValue1", "test-alpha", "test-beta"], "arg2": ["testValue2", "sample"]}


@server.completion(prompt="test_prompt_with_arguments")
def complete_prompt_arguments(argument: str, value: str, context_arguments: dict[str, str]) -> list[str]:
    """Suggestions for `test_prompt_with_arguments`, filtered by the typed prefix."""
    return [option for option in _ARGUMENT_SUGGESTIONS.get(argument, []) if option.startswith(value)]
