"""A minimal React app on @ai-sdk/react's useChat with DefaultChatTransport (tests/web, bundled by
the pinned esbuild) in Debian's Chromium (headless, through playwright) against a real batond on
another origin. This script is the app's server: it serves the bundle and, as the app's backend,
mints each page's user token with the operator key (the browser never sees the key). Scenarios:
text, a client tool answered with addToolOutput, an approval, a reload mid-way, stop, a file part,
a reload showing reasoning, a tool's kept data and the server metadata as the stream did;
every POST /chat is counted per scenario.

    python react_app.py <batond base URL> <operator key> <app port> <bundle> <artifacts dir>

Prints one JSON summary line.
"""

import http.server
import json
import re
import sys
import threading
import urllib.request
import uuid

from playwright.sync_api import expect, sync_playwright

BATON, KEY, PORT, BUNDLE, ARTIFACTS = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
expect.set_options(timeout=30_000)
AGENTS = ["chatter", "asker_only", "guarded", "napper_react", "looker", "forecaster_gated"]
INDEX = '<!doctype html><meta charset="utf-8"><title>React chat</title><div id="root"></div><script type="module" src="/app.js"></script>'


def mint():
    body = json.dumps({"userId": "react-user", "agents": AGENTS, "ttlSecs": 600}).encode()
    request = urllib.request.Request(
        f"{BATON}/tokens", data=body, method="POST",
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)["token"]


class App(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, body, kind):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.startswith("/app.js"):
            with open(BUNDLE, "rb") as file:
                return self.answer(file.read(), "text/javascript")
        return self.answer(INDEX, "text/html")

    def do_POST(self):
        # The app's backend route: a user token for the signed-in person.
        return self.answer(json.dumps({"token": mint()}), "application/json")


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), App)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    app = f"http://127.0.0.1:{PORT}"
    results = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True)

        def scenario(name, agent, run):
            page = browser.new_page()
            posts = []
            page.on("request", lambda r: posts.append(r.post_data) if r.method == "POST" and r.url == f"{BATON}/chat" else None)
            chat = uuid.uuid4().hex
            url = f"{app}/?baton={BATON}&agent={agent}&chat={chat}"
            page.goto(url)
            expect(page.get_by_test_id("status")).to_have_text("ready")
            extra = run(page, url, chat) or {}
            page.screenshot(path=f"{ARTIFACTS}/react-{name}.png")
            texts = page.get_by_test_id("text").all_text_contents()
            results[name] = {"posts": len(posts), "repeated": len(posts) != len(set(posts)),
                             "lastText": texts[-1] if texts else "", **extra}
            page.close()

        scenario("text", "chatter", lambda page, url, chat: ask(page, "hello", "first: hello"))
        scenario("client_tool", "asker_only", client_tool)
        scenario("approval", "guarded", approval)
        scenario("reload", "asker_only", reload)
        scenario("stop", "napper_react", stop)
        scenario("file", "looker", file_part)
        scenario("reload_features", "forecaster_gated", reload_features)
        browser.close()
    server.shutdown()
    print(json.dumps(results))


def ask(page, text, reply=None):
    page.get_by_test_id("input").fill(text)
    page.get_by_test_id("send").click()
    if reply:
        expect(page.get_by_test_id("text").last).to_have_text(reply)


def client_tool(page, url, chat):
    ask(page, "hi")
    page.get_by_test_id("answer").click()
    expect(page.get_by_test_id("text").last).to_have_text('Hello {"answer":"Ada"}')


def approval(page, url, chat):
    ask(page, "pay alice")
    page.get_by_test_id("approve").click()
    expect(page.get_by_test_id("text").last).to_have_text("Transfer: sent 10 to alice")


def reload(page, url, chat):
    ask(page, "hi")
    expect(page.get_by_test_id("answer")).to_be_visible()
    page.reload()
    expect(page.get_by_test_id("tool-ask_user")).to_have_attribute("data-state", "input-available")
    page.get_by_test_id("answer").click()
    expect(page.get_by_test_id("text").last).to_have_text('Hello {"answer":"Ada"}')


def stop(page, url, chat):
    ask(page, "take a nap")
    expect(page.get_by_test_id("tool-nap")).to_be_visible()
    expect(page.get_by_test_id("status")).to_have_text("streaming")
    page.get_by_test_id("stop").click()
    expect(page.get_by_test_id("status")).to_have_text("ready")
    # The server's answer to the stop, then what it says of the session.
    expect(page.get_by_test_id("stopped")).to_have_text("interrupted")
    status = page.evaluate(
        """async ([baton, chat]) => {
          const { token } = await (await fetch('/api/token', { method: 'POST' })).json();
          const answer = await fetch(`${baton}/chat/${chat}/snapshot`, { headers: { Authorization: `Bearer ${token}` } });
          return (await answer.json()).status;
        }""",
        [BATON, chat],
    )
    return {"serverStatus": status}


def shown(page):
    """What the last assistant message shows besides its tools: reasoning, data, metadata."""
    reply = page.get_by_test_id("message-assistant").last
    return {
        "reasoning": reply.get_by_test_id("reasoning").all_text_contents(),
        "data": reply.get_by_test_id("data").all_text_contents(),
        "meta": reply.get_by_test_id("meta").all_text_contents(),
    }


def reload_features(page, url, chat):
    # Reasoning, a kept data part of a call run once approved and the server metadata: a
    # reload mid-way (awaiting the approval) and after the end shows what the stream showed.
    ask(page, "weather?")
    expect(page.get_by_test_id("approve")).to_be_visible()
    expect(page.get_by_test_id("status")).to_have_text("ready")
    live_midway = shown(page)
    page.reload()
    expect(page.get_by_test_id("approve")).to_be_visible()
    reloaded_midway = shown(page)
    page.get_by_test_id("approve").click()
    expect(page.get_by_test_id("text").last).to_have_text("Snow.")
    expect(page.get_by_test_id("status")).to_have_text("ready")
    live_end = shown(page)
    page.reload()
    expect(page.get_by_test_id("text").last).to_have_text("Snow.")
    reloaded_end = shown(page)
    return {"midway": [live_midway, reloaded_midway], "end": [live_end, reloaded_end]}


def file_part(page, url, chat):
    # A file-only message: the model (`looker`) answers with the media types it was given.
    page.get_by_test_id("attach").click()
    expect(page.get_by_test_id("text").last).to_have_text(re.compile(r"^saw \[image/png\]"))
    expect(page.get_by_test_id("status")).to_have_text("ready")
    return {"files": page.get_by_test_id("file").all_text_contents()}


if __name__ == "__main__":
    main()
