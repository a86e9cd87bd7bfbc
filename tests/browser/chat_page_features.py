"""The demo chat page's features in Debian's Chromium (headless, through playwright; no browser
is downloaded): markdown rendered safely (no raw HTML), the stop button stopping the run on the
server, a new chat, the signed-in user's chat list reopening an earlier chat, and a model's
reasoning folded above its answer; a reload (mid-way and after the end) showing the reasoning, a
tool's data card and the message's metadata as the stream did. A screenshot of
each stage is kept in the artifacts directory.

    python chat_page_features.py <base URL> <artifacts dir>

Prints one JSON summary line.
"""

import json
import sys

from playwright.sync_api import expect, sync_playwright

from chat_common import ask, new_page

BASE, ARTIFACTS = sys.argv[1], sys.argv[2]
expect.set_options(timeout=30_000)
HOSTILE = "**bold** and `code` <img src=x onerror=\"window.owned=1\"> [site](https://example.org)"


def main():
    with sync_playwright() as playwright:
        browser, page, violations = new_page(playwright)
        # Markdown: the echo comes back rendered, the HTML in it shown as text.
        page.goto(f"{BASE}/chat?agent=chatter")
        ask(page, HOSTILE)
        reply = page.get_by_test_id("message-assistant").last
        expect(reply.locator("strong")).to_have_text("bold")
        expect(reply.locator("code")).to_have_text("code")
        expect(reply.locator("a")).to_have_attribute("href", "https://example.org")
        expect(reply).to_contain_text('<img src=x onerror="window.owned=1">')
        images = page.locator("#log img").count()
        owned = page.evaluate("window.owned === 1")
        expect(page.get_by_test_id("status")).to_have_attribute("data-state", "ready")
        first_chat = page.evaluate("location.hash.slice(1)")
        shot(page, "markdown")

        # Stop: the run is interrupted on the server, and the page says so.
        page.get_by_test_id("new-chat").click()
        expect(page.get_by_test_id("message-assistant")).to_have_count(0)
        page.goto(f"{BASE}/chat?agent=napper_page")
        ask(page, "take a nap")
        expect(page.get_by_test_id("tool-nap")).to_be_visible()
        stop = page.get_by_test_id("stop")
        expect(stop).to_be_visible()
        shot(page, "running")
        stop.click()
        expect(page.get_by_test_id("status")).to_have_attribute("data-state", "stopped")
        expect(page.get_by_test_id("status")).to_have_text("Stopped. Send a message to go on.")
        expect(stop).to_be_hidden()
        stopped_chat = page.evaluate("location.hash.slice(1)")
        server = page.evaluate(
            "async (id) => (await (await fetch(`/chat/${id}/snapshot`)).json()).status", stopped_chat
        )
        shot(page, "stopped")

        # The chat list: both chats are the demo user's; the first one reopens from it.
        entry = page.get_by_test_id(f"chat-{first_chat}")
        expect(entry).to_be_visible()
        expect(page.get_by_test_id(f"chat-{stopped_chat}")).to_be_visible()
        shot(page, "list")
        entry.click()
        expect(page.get_by_test_id("message-assistant").last.locator("strong")).to_have_text("bold")
        reopened = page.evaluate("location.hash.slice(1)")
        shot(page, "reopened")

        # Reasoning: folded away above the answer, as text.
        page.get_by_test_id("new-chat").click()
        page.goto(f"{BASE}/chat?agent=thinker")
        ask(page, "what is 6 x 7?")
        reply = page.get_by_test_id("message-assistant").last
        expect(reply).to_contain_text("It is 42.")
        reasoning = reply.get_by_test_id("reasoning")
        expect(reasoning).to_have_count(1)
        folded = reasoning.evaluate("node => !node.open")
        reasoning.locator("summary").click()
        expect(reasoning).to_contain_text("Six times seven is forty-two.")
        shot(page, "reasoning")

        # A reload shows what the stream showed: mid-way (waiting for an approval) and after the
        # end, the folded reasoning, the tool's data card and the message's metadata line.
        page.get_by_test_id("new-chat").click()
        page.goto(f"{BASE}/chat?agent=forecaster_gated")
        ask(page, "weather?")
        expect(page.get_by_test_id("approve-forecast")).to_be_visible()
        live_midway = seen(page)
        page.reload()
        expect(page.get_by_test_id("approve-forecast")).to_be_visible()
        reloaded_midway = seen(page)
        shot(page, "reload-midway")
        page.get_by_test_id("approve-forecast").click()
        reply = page.get_by_test_id("message-assistant").last
        expect(reply).to_contain_text("Snow.")
        expect(reply.get_by_test_id("data-weather")).to_contain_text("Oslo")
        expect(reply.get_by_test_id("meta")).to_contain_text("tokens")
        live_end = seen(page)
        shot(page, "data-live")
        page.reload()
        reply = page.get_by_test_id("message-assistant").last
        expect(reply).to_contain_text("Snow.")
        expect(reply.get_by_test_id("meta")).to_contain_text("tokens")
        reloaded_end = seen(page)
        reply.get_by_test_id("reasoning").last.locator("summary").click()
        reply.get_by_test_id("data-weather").locator("summary").click()
        shot(page, "reload-end")
        browser.close()
    print(json.dumps({
        "images": images, "owned": owned, "serverAfterStop": server,
        "reopened": reopened == first_chat, "cspViolations": violations,
        "reasoningFolded": folded,
        "midway": {"live": live_midway, "reloaded": reloaded_midway},
        "end": {"live": live_end, "reloaded": reloaded_end},
    }))


def seen(page):
    """What the last assistant message shows: its reasoning, data cards and metadata line."""
    reply = page.get_by_test_id("message-assistant").last
    return {
        "reasoning": reply.get_by_test_id("reasoning").all_text_contents(),
        "data": [card.get_attribute("data-testid") for card in reply.locator(".card.data").all()],
        "fields": reply.locator(".card.data .fields").all_text_contents(),
        "meta": reply.get_by_test_id("meta").count(),
        "metaTokens": "tokens" in "".join(reply.get_by_test_id("meta").all_text_contents()),
    }


def shot(page, name):
    page.screenshot(path=f"{ARTIFACTS}/chat-page-{name}.png")


if __name__ == "__main__":
    main()
