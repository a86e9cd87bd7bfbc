"""What the console's browser tests share: Chromium (Debian's, headless) and the sign-in."""

from playwright.sync_api import expect


def signed_in(playwright, base, key):
    """A new page of the console at `base`, signed in with the operator `key`, and its browser."""
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
    page = browser.new_page()
    page.goto(f"{base}/console")
    page.get_by_test_id("key").fill(key)
    page.get_by_test_id("sign-in-button").click()
    expect(page.get_by_test_id("sessions")).to_be_visible()
    return browser, page
