"""A real browser: headless Chromium loads a page from one origin that drives Stratus on another through the
REST API and an EventSource (a resource update, a call's log and progress messages, an elicitation it answers over
REST, and the closing event when it ends the session), and reports what it received back to the page's server."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from stratus.transport.asgi import Receive, Scope, Send, read_body, send_response
from tests.fixtures.processes import stratus_process
from tests.fixtures.servers import uvicorn_serving

pytestmark = pytest.mark.uvicorn

REPORT_TIMEOUT_SECONDS = 30.0
PAGE = """<!doctype html>
<script>
const base = "%(stratus)s";
const json = {"content-type": "application/json"};
const seen = [];
const report = (body) => fetch("/report", {method: "POST", body: JSON.stringify(body)});
const call = (sessionId, method, params) =>
  fetch(base + "/mcp", {method: "POST", headers: json, body: JSON.stringify({sessionId, method, params})});
(async () => {
  const opened = {method: "POST", headers: json, body: JSON.stringify({capabilities: {elicitation: {}}})};
  const {sessionId} = await (await fetch(base + "/session", opened)).json();
  await call(sessionId, "resources/subscribe", {uri: "note://board"});
  const events = new EventSource(base + "/events/" + sessionId);
  let asking = null;
  let answer = null;
  events.onmessage = async (event) => {
    const data = JSON.parse(event.data);
    seen.push(data);
    if (data.type === "connected") {
      await call(sessionId, "tools/call", {name: "touch", arguments: {uri: "note://board"}});
    } else if (data.type === "notification" && data.data.method === "notifications/resources/updated") {
      await call(sessionId, "tools/call", {name: "count_to_three", arguments: {}, _meta: {progressToken: "bar"}});
      asking = call(sessionId, "tools/call", {name: "ask_user", arguments: {}}).then((response) => response.json());
    } else if (data.type === "request") {
      const reply = {id: data.data.id, result: {action: "accept", content: {name: "Browser"}}};
      const answered = {method: "POST", headers: json, body: JSON.stringify(reply)};
      await fetch(base + "/session/" + sessionId + "/responses", answered);
      answer = await asking;
      await fetch(base + "/session/" + sessionId, {method: "DELETE"});
    } else if (data.type === "closed") {
      events.close();
      await report({sessionId, seen, answer});
    }
  };
  events.onerror = () => report({error: "EventSource failed", seen});
})().catch((error) => report({error: String(error)}));
</script>
"""


class PageServer:
    """Serves the page and takes its report (on its own origin)."""

    def __init__(self, stratus_url: str) -> None:
        self.page = (PAGE % {"stratus": stratus_url}).encode()
        self.reports: queue.Queue[Any] = queue.Queue()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == "/report" and scope["method"] == "POST":
            self.reports.put(json.loads(await read_body(receive)))
            await send_response(send, 204, b"", {})
            return
        await send_response(send, 200, self.page, {"content-type": "text/html; charset=utf-8"})


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: .ci/run installs it")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return found


@contextmanager
def headless_chromium(url: str) -> Iterator[None]:
    """Chromium on `url` in its own process group, ended by its PID when the block ends."""
    with tempfile.TemporaryDirectory() as profile:
        command = [
            chromium_path(),
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            f"--user-data-dir={profile}",
            url,
        ]
        browser = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            yield
        finally:
            os.killpg(browser.pid, signal.SIGTERM)
            try:
                browser.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(browser.pid, signal.SIGKILL)
                browser.wait(timeout=10)


def test_a_page_on_another_origin_uses_the_rest_api_receives_notifications_and_answers_questions() -> None:
    with stratus_process("tests.fixtures.apps:shared", {"STRATUS_SECRET_KEY": "k"}) as stratus_url:
        pages = PageServer(stratus_url)
        with uvicorn_serving(pages) as page_url, headless_chromium(f"{page_url}/page.html"):
            report = pages.reports.get(timeout=REPORT_TIMEOUT_SECONDS)
    assert "error" not in report, report
    session_id = report["sessionId"]
    seen = report["seen"]
    request = seen[6]
    assert request["type"] == "request" and request["data"]["method"] == "elicitation/create"
    assert seen == [
        {"type": "connected", "sessionId": session_id},
        {
            "type": "notification",
            "data": {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "note://board"}},
        },
        {
            "type": "notification",
            "data": {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "logger": "count_to_three", "data": "counting"},
            },
        },
        *(
            {
                "type": "notification",
                "data": {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": "bar", "progress": step, "total": 3, "message": f"step {step}"},
                },
            }
            for step in (1, 2, 3)
        ),
        request,
        {"type": "closed", "sessionId": session_id},
    ]
    assert report["answer"] == {
        "sessionId": session_id,
        "result": {"content": [{"type": "text", "text": "hello Browser (accept)"}]},
    }
