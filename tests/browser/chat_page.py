"""Drives batond's demo chat page in Debian's Chromium (headless, through playwright; no browser
is downloaded): a person asks the demo_hitl agent, answers its client tool in the form its render
hint asks for, reloads the page with the approval open, types the next message (held while the
approval is open), approves, and sees the final answer; the held message then starts a second
turn, which shows a fresh form. A client tool the page cannot render is settled with an error. Every POST /chat is recorded: none may be sent twice.

    python chat_page.py <base URL> <screenshot path>

Each stage is also kept beside the screenshot (`chat-page-<stage>.png`). Prints one JSON summary
line.
"""

import json
import sys

from playwright.sync_api import expect, sync_playwright

BASE, SCREENSHOT = sys.argv[1], sys.argv[2]
# A loaded machine (a build beside the tests) can take seconds per step; the default 5 s of
# expect() made the test fail there while nothing was wrong.
expect.set_options(timeout=30_000)
FINAL = "You said {}, 40 + 2 = 42, and the postcard: sent to Ada."


def main():
    posts = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        page = browser.new_page()
        page.on("request", lambda request: record(posts, request))
        page.goto(f"{BASE}/chat?agent=demo_hitl")
        expect(page.get_by_test_id("status")).to_have_text("Ask anything to start.")
        stage(page, "empty")
        ask(page, "Ask me something while you add 40 and 2.")
        field = page.get_by_test_id("field-ask_user")
        expect(field).to_be_visible()
        expect(page.get_by_test_id("status")).to_have_attribute("data-state", "waiting")
        stage(page, "question")
        answer_form(page, "blue")
        approve = page.get_by_test_id("approve-send_postcard")
        expect(approve).to_be_visible()
        stage(page, "approval")
        # A reload mid-way: the page rebuilds the chat from the snapshot, approval still open.
        page.reload()
        expect(page.get_by_test_id("approve-send_postcard")).to_be_visible()
        # The next message waits while the approval is open, and goes once it is answered.
        ask(page, "Once more, please.")
        expect(page.get_by_test_id("held")).to_have_count(1)
        page.get_by_test_id("approve-send_postcard").click()
        expect(page.get_by_test_id("message-assistant").first).to_contain_text(FINAL.format("blue"))
        # The next turn asks again: a fresh, empty form, never the earlier answer.
        expect(page.get_by_test_id("field-ask_user")).to_be_visible()
        held_sent = len(posts)
        answer_form(page, "green")
        page.get_by_test_id("approve-send_postcard").click()
        expect(page.get_by_test_id("text").last).to_have_text(FINAL.format("green"))
        expect(page.get_by_test_id("status")).to_have_attribute("data-state", "ready")
        page.screenshot(path=SCREENSHOT, full_page=True)
        main_posts = len(posts)
        # A client tool without a render hint: the page settles it with an error at once.
        other = browser.new_page()
        other.on("request", lambda request: record(posts, request))
        other.goto(f"{BASE}/chat?agent=asker_only")
        ask(other, "hi")
        expect(other.get_by_test_id("text").last).to_have_text("Hello error client_tool_error")
        browser.close()
    print(
        json.dumps(
            {
                "posts": main_posts,
                "heldSent": held_sent,
                "otherPagePosts": len(posts) - main_posts,
                "repeated": len(posts) != len(set(posts)),
            }
        )
    )


def stage(page, name):
    page.screenshot(path=SCREENSHOT.replace(".png", f"-{name}.png"))


def record(posts, request):
    if request.method == "POST" and request.url.endswith("/chat"):
        posts.append(request.post_data)


def ask(page, text):
    page.get_by_test_id("input").fill(text)
    page.get_by_test_id("send").click()


def answer_form(page, text):
    field = page.get_by_test_id("field-ask_user")
    expect(field).to_be_visible()
    expect(field).to_have_value("")
    field.fill(text)
    page.get_by_test_id("submit-ask_user").click()


if __name__ == "__main__":
    main()
