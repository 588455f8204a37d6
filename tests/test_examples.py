"""The servers the README shows run as it says (the README's code blocks are these files)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from examples.pipeline import server as inventory
from examples.quickstart import server as notes
from stratus import Settings
from tests.fixtures.clients import client_for
from tests.fixtures.wire import McpHttp

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).parent.parent


@pytest.mark.parametrize("name", ["quickstart", "pipeline"])
def test_the_readme_shows_the_example_files_verbatim(name: str) -> None:
    source = (ROOT / "examples" / f"{name}.py").read_text(encoding="utf-8")
    body = source.split('"""', 2)[2].replace("from __future__ import annotations\n\n", "").strip()
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.DOTALL)
    assert body in [block.strip() for block in blocks]


async def test_quickstart_divides_reads_notes_and_greets() -> None:
    async with client_for(notes) as http:
        mcp = McpHttp(http)
        quarter = {"name": "divide", "arguments": {"a": 1, "b": 4}}
        result = (await mcp.stateless("tools/call", quarter)).json()["result"]
        assert result["structuredContent"] == {"result": 0.25}
        by_zero = (await mcp.stateless("tools/call", {"name": "divide", "arguments": {"a": 1, "b": 0}})).json()[
            "result"
        ]
        assert by_zero["isError"] is True
        note = (await mcp.stateless("resources/read", {"uri": "notes://todo"})).json()["result"]["contents"][0]
        assert note["text"] == "Note todo"


async def test_the_pipeline_examples_scoped_tool_with_auth_off_names_the_setting_to_turn_it_on() -> None:
    """Locally, with authentication off, nobody could ever hold the scope: a final 403 that says what to set, not a
    401 challenge no client could answer."""
    async with client_for(inventory, Settings()) as http:
        response = await McpHttp(http).stateless("tools/call", {"name": "stock", "arguments": {"sku": "sku-1"}})
    assert response.status_code == 403
    assert "www-authenticate" not in response.headers
    assert "set STRATUS_AUTH_MODE" in response.json()["error"]["message"]
