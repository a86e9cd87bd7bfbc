"""Drives batond's operator console in Debian's Chromium (headless, through playwright; no browser
is downloaded): an operator signs in with a key, pages through the sessions, finds the waiting call in the inbox
(with its agent, age and deadline), answers it through the form its output schema makes, and
watches the session finish on its page (its conversation, checkpoints, an abort that asks first).

    python console_page.py <base URL> <operator key> <session id> <screenshot path>

Prints one JSON summary line.
"""

import json
import sys

from playwright.sync_api import expect, sync_playwright

from console_common import signed_in

BASE, KEY, SESSION, SCREENSHOT = sys.argv[1:5]
expect.set_options(timeout=30_000)


def main():
    with sync_playwright() as playwright:
        browser, page, violations = signed_in(playwright, BASE, KEY)
        expect(page.get_by_test_id("session-row")).to_have_count(2)
        # Paging: a page of one row has a next page, which holds the other session.
        page.goto(f"{BASE}/console#/sessions?limit=1")
        expect(page.get_by_test_id("session-row")).to_have_count(1)
        first_row = page.get_by_test_id("session-row").inner_text()
        page.get_by_test_id("next-page").click()
        expect(page.get_by_test_id("first-page")).to_be_visible()
        expect(page.get_by_test_id("session-row")).to_have_count(1)
        paged = page.get_by_test_id("session-row").inner_text() != first_row

        page.get_by_test_id("nav-inbox").click()
        call = page.get_by_test_id("call-call_1_1")
        expect(call).to_be_visible()
        expect(call).to_contain_text(SESSION)
        expect(page.get_by_test_id("agent-call_1_1")).to_have_text("asker_only")
        age = page.get_by_test_id("age-call_1_1").inner_text()
        deadline = call.locator("time").inner_text()
        # The answer is a form built from the tool's output schema, empty (no raw JSON box).
        raw_box = page.get_by_test_id("result-call_1_1").count()
        page.get_by_test_id("field-call_1_1-answer").fill("Ann")
        page.get_by_test_id("answer-call_1_1").click()
        expect(page.get_by_text("Nobody is waiting on a person.")).to_be_visible()
        page.goto(f"{BASE}/console#/session/{SESSION}")
        expect(page.get_by_test_id("status")).to_have_attribute("data-state", "completed")
        expect(page.get_by_test_id("conversation")).to_contain_text("Ann")
        expect(page.get_by_test_id("tree")).to_contain_text(SESSION)
        checkpoints = page.get_by_test_id("timeline").locator("li").count()
        # Abort asks first; Cancel leaves the session as it was.
        page.get_by_test_id("abort").click()
        expect(page.get_by_test_id("abort-confirm")).to_be_visible()
        page.get_by_role("button", name="Cancel").click()
        expect(page.get_by_test_id("abort")).to_be_visible()
        expect(page.get_by_test_id("status")).to_have_attribute("data-state", "completed")
        page.get_by_text("Live stream").click()
        expect(page.get_by_test_id("stream")).to_contain_text("completed")
        page.screenshot(path=SCREENSHOT, full_page=True)
        temporal_link = page.get_by_test_id("temporal-link").get_attribute("href")
        # Delete asks first, then the session is gone: the list shows, and the session does not.
        page.get_by_test_id("delete").click()
        page.get_by_test_id("delete-confirm").click()
        expect(page.get_by_test_id("filter-agent")).to_be_visible()
        deleted = page.evaluate(
            "async ([id, key]) => (await fetch(`/status?sessionId=${id}`,"
            " { headers: { Authorization: `Bearer ${key}` } })).status",
            [SESSION, KEY],
        )
        summary = {
            "temporalLink": temporal_link,
            "keyInUrl": KEY in page.url,
            "keyStored": page.evaluate("sessionStorage.getItem('batonOperatorKey')") == KEY,
            "cspViolations": violations,
            "paged": paged,
            "age": age,
            "deadline": deadline,
            "rawBox": raw_box,
            "checkpoints": checkpoints,
            "deletedStatus": deleted,
        }
        browser.close()
    print(json.dumps(summary))


main()
