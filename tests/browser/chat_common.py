"""What the chat page's browser tests share: Chromium (Debian's, headless), a page that records
its Content Security Policy violations, and the composer."""


def new_page(playwright):
    """Debian's Chromium, a new page of it, and the list its CSP violations go to."""
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
    page = browser.new_page()
    violations = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    return browser, page, violations


def ask(page, text):
    """Types `text` into the composer and sends it."""
    page.get_by_test_id("input").fill(text)
    page.get_by_test_id("send").click()
