"""What the console's browser tests share: Chromium (Debian's, headless) and the sign-in."""

from playwright.sync_api import expect


def signed_in(playwright, base, key):
    """A new page of the console at `base`, signed in with the operator `key`, its browser, and
    the list the Content Security Policy's violations on the page go to."""
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
    page = browser.new_page()
    violations = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.goto(f"{base}/console")
    page.get_by_test_id("key").fill(key)
    page.get_by_test_id("sign-in-button").click()
    expect(page.get_by_test_id("sessions")).to_be_visible()
    return browser, page, violations
