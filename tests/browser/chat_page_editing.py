"""The demo chat page's editing features in Debian's Chromium (headless, through playwright; no
browser is downloaded): a chat's title in the list (its first message), regenerate, edit of a
later message and of the first, a chat deleted, an attached image kept across a reload, and the
person's own answer shown on its card as sent. A screenshot of each stage is kept in the artifacts directory.

    python chat_page_editing.py <base URL> <artifacts dir>

Prints one JSON summary line.
"""

import base64
import json
import sys

from playwright.sync_api import expect, sync_playwright

from chat_common import ask, new_page

BASE, ARTIFACTS = sys.argv[1], sys.argv[2]
expect.set_options(timeout=30_000)
# A 1x1 PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def main():
    with sync_playwright() as playwright:
        browser, page, violations = new_page(playwright)
        page.goto(f"{BASE}/chat?agent=chatter")
        ask(page, "hello there")
        expect(last_reply(page)).to_contain_text("first: hello there")
        chat = page.evaluate("location.hash.slice(1)")
        title = page.get_by_test_id(f"chat-{chat}").get_by_test_id("chat-title")
        expect(title).to_have_text("hello there")

        # Regenerate: the answer is asked for again; still one answer.
        page.get_by_test_id("regenerate").click()
        expect(page.get_by_test_id("status")).to_have_attribute("data-state", "ready")
        expect(last_reply(page)).to_contain_text("first: hello there")
        after_regenerate = page.get_by_test_id("message-assistant").count()

        # Edit the second message: it and its answer are replaced.
        ask(page, "more")
        expect(last_reply(page)).to_contain_text("second: more")
        page.get_by_test_id("message-user").nth(1).get_by_test_id("edit").click()
        expect(page.get_by_test_id("editing")).to_be_visible()
        page.get_by_test_id("input").fill("instead")
        page.get_by_test_id("send").click()
        expect(last_reply(page)).to_contain_text("second: instead")
        expect(page.get_by_test_id("editing")).to_be_hidden()
        users = page.get_by_test_id("message-user").get_by_test_id("text").all_inner_texts()
        shot(page, "edited")
        page.reload()
        expect(last_reply(page)).to_contain_text("second: instead")
        users_reloaded = page.get_by_test_id("message-user").get_by_test_id("text").all_inner_texts()

        # Edit the first message: the chat restarts from it, and its title follows.
        page.get_by_test_id("message-user").first.get_by_test_id("edit").click()
        page.get_by_test_id("input").fill("hi again")
        page.get_by_test_id("send").click()
        expect(last_reply(page)).to_contain_text("first: hi again")
        expect(title).to_have_text("hi again")
        first_edited = page.get_by_test_id("message-user").get_by_test_id("text").all_inner_texts()
        replies_after_first_edit = page.get_by_test_id("message-assistant").count()
        shot(page, "first-edited")

        # Delete the chat, confirmed: it leaves the list, the page opens a new chat, and the
        # server has nothing of it any more.
        page.once("dialog", lambda dialog: dialog.accept())
        page.get_by_test_id(f"chat-{chat}").hover()
        page.get_by_test_id(f"delete-{chat}").click()
        expect(page.get_by_test_id(f"chat-{chat}")).to_have_count(0)
        expect(page.get_by_test_id("message-user")).to_have_count(0)
        reopened = page.evaluate("location.hash.slice(1)")
        deleted_snapshot = page.evaluate(
            "async (id) => (await fetch(`/chat/${id}/snapshot`)).status", chat
        )
        shot(page, "deleted")

        # An attachment: an image sent with a message, shown, and kept across a reload.
        page.get_by_test_id("new-chat").click()
        page.goto(f"{BASE}/chat?agent=chatter")
        page.get_by_test_id("files").set_input_files(
            files=[{"name": "pixel.png", "mimeType": "image/png", "buffer": PIXEL}]
        )
        expect(page.get_by_test_id("attached")).to_have_count(1)
        ask(page, "look")
        expect(last_reply(page)).to_contain_text("first: look")
        expect(page.get_by_test_id("attached")).to_have_count(0)
        live_attachments = page.get_by_test_id("message-user").get_by_test_id("attachment").count()
        page.reload()
        expect(last_reply(page)).to_contain_text("first: look")
        reloaded_attachments = page.get_by_test_id("message-user").get_by_test_id("attachment").count()
        shot(page, "attachment")

        # The person's answer on its card, as sent.
        page.get_by_test_id("new-chat").click()
        page.goto(f"{BASE}/chat?agent=demo_hitl")
        ask(page, "hi")
        field = page.get_by_test_id("field-ask_user")
        expect(field).to_be_visible()
        field.fill("Ada")
        page.get_by_test_id("submit-ask_user").click()
        sent = page.get_by_test_id("tool-ask_user").get_by_test_id("answer-as-sent")
        expect(sent).to_have_text("You answered: Ada")
        shot(page, "answer-as-sent")
        browser.close()
    print(json.dumps({
        "afterRegenerate": after_regenerate,
        "users": users,
        "usersReloaded": users_reloaded,
        "firstEdited": first_edited,
        "repliesAfterFirstEdit": replies_after_first_edit,
        "reopenedAnother": reopened != chat,
        "deletedSnapshot": deleted_snapshot,
        "liveAttachments": live_attachments,
        "reloadedAttachments": reloaded_attachments,
        "cspViolations": violations,
    }))


def last_reply(page):
    return page.get_by_test_id("message-assistant").last


def shot(page, name):
    page.screenshot(path=f"{ARTIFACTS}/chat-page-{name}.png")


main()
