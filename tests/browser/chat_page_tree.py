"""Drives batond's demo chat page in Debian's Chromium (headless, through playwright) against the
`demo_tree` agent: the trip planner delegates to `demo_interviewer`, whose question reaches the
page as an answerable card naming the child that asks; the page is reloaded with the question
open, the person answers from the reloaded page, and the planner's plan arrives. Every POST
/chat is recorded: none may be sent twice.

    python chat_page_tree.py <base URL> <screenshot directory> [agent message answer expected name]

The optional arguments drive another tree the same way (a remote child's relayed question, for
one): the agent, the first message, the answer typed, the text the final answer contains, and
the screenshots' name (default `tree`).

Prints one JSON summary line.
"""

import json
import sys

from playwright.sync_api import expect, sync_playwright

BASE, ARTIFACTS = sys.argv[1], sys.argv[2]
AGENT, MESSAGE, ANSWER, EXPECTED, NAME = (sys.argv[3:8] if len(sys.argv) >= 8 else (
    "demo_tree", "Plan me a trip.", "Lisbon", "Trip plan: The user wants to visit Lisbon.", "tree"))
expect.set_options(timeout=30_000)


def main():
    posts = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        page = browser.new_page()
        page.on("request", lambda r: posts.append(r.post_data) if r.method == "POST" and r.url.endswith("/chat") else None)
        page.goto(f"{BASE}/chat?agent={AGENT}")
        expect(page.get_by_test_id("status")).to_have_text("Ask anything to start.")
        page.get_by_test_id("input").fill(MESSAGE)
        page.get_by_test_id("send").click()
        field = page.get_by_test_id("field-ask_user")
        expect(field).to_be_visible()
        expect(page.get_by_test_id("status")).to_have_attribute("data-state", "waiting")
        asker = page.get_by_test_id("asking-agent").first.text_content()
        page.screenshot(path=f"{ARTIFACTS}/chat-page-{NAME}-question.png")
        before_reload = len(posts)
        # A reload with the child's question open: the page rebuilds it from the snapshot.
        page.reload()
        field = page.get_by_test_id("field-ask_user")
        expect(field).to_be_visible()
        expect(field).to_have_value("")
        asker_after = page.get_by_test_id("asking-agent").first.text_content()
        field.fill(ANSWER)
        page.get_by_test_id("submit-ask_user").click()
        final = page.get_by_test_id("text").last
        expect(final).to_contain_text(EXPECTED)
        expect(page.get_by_test_id("status")).to_have_attribute("data-state", "ready")
        page.screenshot(path=f"{ARTIFACTS}/chat-page-{NAME}-done.png", full_page=True)
        browser.close()
    print(json.dumps({
        "postsBeforeReload": before_reload,
        "posts": len(posts),
        "repeated": len(posts) != len(set(posts)),
        "asker": asker,
        "askerAfterReload": asker_after,
    }))


if __name__ == "__main__":
    main()
