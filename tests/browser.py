"""Open an offline report in headless Debian chromium (playwright), network refused, at a laptop's 1366x768."""

from __future__ import annotations

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
VIEWPORT = {"width": 1366, "height": 768}


def first_screen(html: Path, screenshot: Path, *texts: str) -> dict:
    """Render ``html``; return the bounding box of each of ``texts`` (first match, None when absent),
    ``fetched`` (URLs the page asked for beyond files: each refused) and ``scroll_width`` (px).

    ``"Verdict"`` is matched exactly (the verdict's bold heading); other texts as substrings.
    """
    from playwright.sync_api import sync_playwright

    fetched: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=[
            "--no-sandbox", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"])
        try:
            page = browser.new_page(viewport=VIEWPORT)

            def refuse(route) -> None:
                if route.request.url.startswith("file:"):
                    route.continue_()
                else:
                    fetched.append(route.request.url)
                    route.abort()

            page.route("**/*", refuse)
            page.goto(html.resolve().as_uri())
            page.screenshot(path=str(screenshot))
            boxes = {t: page.get_by_text(t, exact=t == "Verdict").first.bounding_box(timeout=5000)
                     if page.get_by_text(t, exact=t == "Verdict").count() else None for t in texts}
            width = page.evaluate("document.documentElement.scrollWidth")
        finally:
            browser.close()
    return {**boxes, "fetched": fetched, "scroll_width": width}


def on_first_screen(box: dict | None) -> bool:
    """True when the box ends above the first screen's bottom edge."""
    return box is not None and box["y"] + box["height"] < VIEWPORT["height"]
