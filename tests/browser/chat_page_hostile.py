"""The demo chat page against a hostile server, in Debian's Chromium (headless, through
playwright): a server of this script's own serves the page's files from worker/static and answers
every POST /chat with a step whose client call is already answered, so the stock predicate asks
for another send after every response (a broken server once drew 336 POSTs in 0.8 s). The page
must stop re-sending after its cap, with back-off, and say so.

    python chat_page_hostile.py <static dir> <screenshot path>

Prints one JSON summary line: the POSTs of the one message sent, and those after the page halted.
"""

import http.server
import json
import sys
import threading

from playwright.sync_api import expect, sync_playwright

STATIC, SCREENSHOT = sys.argv[1], sys.argv[2]
expect.set_options(timeout=30_000)
FILES = {
    "/chat": ("chat.html", "text/html"),
    "/chat-assets/chat.js": ("chat.js", "text/javascript"),
    "/chat-assets/chat.css": ("chat.css", "text/css"),
}
posts = []
lock = threading.Lock()


def hostile_stream():
    chunks = [
        {"type": "start", "messageId": "a1"},
        {"type": "start-step"},
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "ask_user", "input": {}},
        {"type": "tool-output-available", "toolCallId": "c1", "output": "again"},
        {"type": "finish-step"},
        {"type": "finish"},
    ]
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


class Hostile(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path in FILES:
            name, kind = FILES[path]
            with open(f"{STATIC}/{name}", encoding="utf-8") as file:
                return self.answer(200, file.read(), kind)
        if path == "/sessions":
            return self.answer(200, json.dumps({"sessions": []}))
        return self.answer(404, json.dumps({"code": "session_not_found", "error": "no"}))

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        self.rfile.read(length)
        if self.path == "/chat":
            with lock:
                posts.append(self.path)
            return self.answer(200, hostile_stream(), "text/event-stream")
        return self.answer(404, json.dumps({"code": "not_found", "error": "no"}))


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        page = browser.new_page()
        page.goto(f"{base}/chat")
        page.get_by_test_id("input").fill("hi")
        page.get_by_test_id("send").click()
        status = page.get_by_test_id("status")
        expect(status).to_have_attribute("data-state", "halted")
        with lock:
            at_halt = len(posts)
        # Nothing more is sent once halted, however long the page stays open.
        page.wait_for_timeout(1500)
        page.screenshot(path=SCREENSHOT)
        sentence = status.text_content()
        browser.close()
    server.shutdown()
    print(json.dumps({"posts": at_halt, "after": len(posts) - at_halt, "sentence": sentence}))


if __name__ == "__main__":
    main()
