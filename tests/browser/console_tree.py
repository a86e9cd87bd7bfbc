"""Drives batond's operator console in Debian's Chromium (headless, through playwright): an
operator signs in and opens a tree's root; the tree outline shows each session under the one that
started it, one level deeper each (nested lists, indented).

    python console_tree.py <base URL> <operator key> <root session id> <screenshot path>

Prints one JSON summary line: the outline's rows in document order (depth, session id, how far
right its link starts) and whether each row sits inside its parent's.
"""

import json
import sys

from playwright.sync_api import expect, sync_playwright

from console_common import signed_in

BASE, KEY, ROOT, SCREENSHOT = sys.argv[1:5]
expect.set_options(timeout=30_000)


def main():
    with sync_playwright() as playwright:
        browser, page, violations = signed_in(playwright, BASE, KEY)
        page.goto(f"{BASE}/console#/session/{ROOT}")
        tree = page.get_by_test_id("tree")
        expect(tree.locator("li[data-depth='2']")).to_have_count(1)
        rows = []
        for item in tree.locator("li").all():
            link = item.locator(":scope > a")
            rows.append({
                "depth": int(item.get_attribute("data-depth")),
                "session": item.get_attribute("data-session"),
                "x": link.bounding_box()["x"],
                "parent": item.evaluate(
                    "(li) => li.parentElement.closest('li')?.getAttribute('data-session') ?? null"),
            })
        page.screenshot(path=SCREENSHOT, full_page=True)
        browser.close()
    print(json.dumps({"rows": rows, "cspViolations": violations}))


main()
