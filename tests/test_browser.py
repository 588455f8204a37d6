"""A real browser: headless Chromium loads a page from one origin that drives Stratus on another through the
REST API and an EventSource that polls (notifications, a call's log and progress, an elicitation answered over REST,
the end of its session), and reports what it received back to the page's server. The polls suggest `retry:` 1 s
(STRATUS_POLL_RETRY_SECONDS) to keep the exchange short; they end at once (STRATUS_POLL_HOLD_SECONDS=0, as on
Lambda)."""

from __future__ import annotations

import pytest

from tests.fixtures.browser import REPORT_TIMEOUT_SECONDS, PageServer, check_report, headless_chromium
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.processes import stratus_process
from tests.fixtures.servers import uvicorn_serving

pytestmark = pytest.mark.uvicorn


def test_a_page_on_another_origin_uses_the_rest_api_receives_notifications_and_answers_questions() -> None:
    environment = {
        "STRATUS_SECRET_KEY": SECRET_KEY,
        "STRATUS_POLL_RETRY_SECONDS": "1",
        "STRATUS_POLL_HOLD_SECONDS": "0",
    }
    with stratus_process("tests.fixtures.apps:shared", environment) as stratus_url:
        pages = PageServer(stratus_url)
        with uvicorn_serving(pages) as page_url, headless_chromium(f"{page_url}/page.html"):
            report = pages.reports.get(timeout=REPORT_TIMEOUT_SECONDS)
    check_report(report)
