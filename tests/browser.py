"""Open an offline report in headless Debian chromium (playwright), network refused, at a laptop's 1366x768."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
VIEWPORT = {"width": 1366, "height": 768}


@contextlib.contextmanager
def offline_page(fetched: list[str]) -> Iterator:
    """A chromium page at a laptop's viewport whose requests beyond files are refused (and listed in ``fetched``)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"],
        )
        try:
            page = browser.new_page(viewport=VIEWPORT)

            def refuse(route) -> None:
                if route.request.url.startswith("file:"):
                    route.continue_()
                else:
                    fetched.append(route.request.url)
                    route.abort()

            page.route("**/*", refuse)
            yield page
        finally:
            browser.close()


def first_screen(html: Path, screenshot: Path, *texts: str) -> dict:
    """Render ``html``; return the bounding box of each of ``texts`` (first match, None when absent),
    ``fetched`` (URLs the page asked for beyond files: each refused) and ``scroll_width`` (px).

    ``"Verdict"`` is matched exactly (the verdict's bold heading); other texts as substrings.
    """
    fetched: list[str] = []
    with offline_page(fetched) as page:
        page.goto(html.resolve().as_uri())
        page.screenshot(path=str(screenshot))
        boxes = {
            t: page.get_by_text(t, exact=t == "Verdict").first.bounding_box(timeout=5000)
            if page.get_by_text(t, exact=t == "Verdict").count()
            else None
            for t in texts
        }
        width = page.evaluate("document.documentElement.scrollWidth")
    return {**boxes, "fetched": fetched, "scroll_width": width}


def on_first_screen(box: dict | None) -> bool:
    """True when the box ends above the first screen's bottom edge."""
    return box is not None and box["y"] + box["height"] < VIEWPORT["height"]


#: What script injected into a page leaves: an element with an ``on...`` handler, a ``javascript:``
#: link target, an ``<img>`` pointing at a file that is not there, a ``<script>`` that calls ``alert``.
_INJECTED_JS = """() => {
  const all = [...document.querySelectorAll('*')];
  const handlers = all.filter(e => [...e.attributes].some(a => a.name.toLowerCase().startsWith('on')));
  const links = all.filter(e => ['href', 'src', 'action', 'formaction', 'xlink:href'].some(
      n => (e.getAttribute(n) || '').trim().toLowerCase().startsWith('javascript:')));
  const scripts = [...document.querySelectorAll('script')].filter(s => /alert\\s*\\(/.test(s.textContent));
  const images = [...document.querySelectorAll('img')].filter(i => i.getAttribute('src') === 'x');
  return [...new Set([...handlers, ...links, ...scripts, ...images])].map(e => e.outerHTML.slice(0, 200));
}"""


def script_probe(html: Path, *texts: str) -> dict:
    """Open ``html`` (network refused) and report what script injected into it would do.

    Returns:
        ``dialogs`` (messages of every alert/confirm/prompt that fired, each dismissed),
        ``injected`` (outerHTML, cut at 200 characters, of each element that injected markup
        leaves: an ``on...`` attribute, a ``javascript:`` target, a ``<script>`` calling
        ``alert``, an ``<img src=x>``), ``shown`` (for each of ``texts``: how many times the page's
        visible text holds it literally) and ``fetched`` (URLs beyond files it asked for, refused).
    """
    fetched: list[str] = []
    dialogs: list[str] = []

    def dialog(d) -> None:
        dialogs.append(d.message)
        d.dismiss()

    with offline_page(fetched) as page:
        page.on("dialog", dialog)
        page.goto(html.resolve().as_uri(), wait_until="load")
        page.wait_for_timeout(1000)  # an <img src=x onerror=...> fires once its load fails
        injected = page.evaluate(_INJECTED_JS)
        body = page.inner_text("body")
    return {"dialogs": dialogs, "injected": injected, "shown": {t: body.count(t) for t in texts}, "fetched": fetched}
