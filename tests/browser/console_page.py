"""Drives batond's operator console in Debian's Chromium (headless, through playwright; no browser
is downloaded): an operator signs in with a key, finds the waiting call in the inbox, answers it,
and watches the session finish on its page.

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
        expect(page.get_by_test_id("session-row")).to_have_count(1)
        page.get_by_test_id("nav-inbox").click()
        call = page.get_by_test_id("call-call_1_1")
        expect(call).to_be_visible()
        expect(call).to_contain_text(SESSION)
        page.get_by_test_id("result-call_1_1").fill('{"answer": "Ann"}')
        page.get_by_test_id("answer-call_1_1").click()
        expect(page.get_by_text("Nobody is waiting on a person.")).to_be_visible()
        page.goto(f"{BASE}/console#/session/{SESSION}")
        expect(page.get_by_test_id("status")).to_have_attribute("data-state", "completed")
        expect(page.get_by_test_id("stream")).to_contain_text("completed")
        expect(page.get_by_test_id("tree")).to_contain_text(SESSION)
        page.screenshot(path=SCREENSHOT, full_page=True)
        summary = {
            "temporalLink": page.get_by_test_id("temporal-link").get_attribute("href"),
            "keyInUrl": KEY in page.url,
            "keyStored": page.evaluate("sessionStorage.getItem('batonOperatorKey')") == KEY,
            "cspViolations": violations,
        }
        browser.close()
    print(json.dumps(summary))


main()
