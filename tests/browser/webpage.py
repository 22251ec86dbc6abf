"""The web client (clients/web/) served to Chromium without a stack: Playwright answers every
request to ORIGIN from the directory itself, so a test can load the page and import its
modules. ORIGIN is a loopback address, which Chromium counts as a secure context (WebCrypto's
``crypto.subtle`` exists there); no request leaves the browser."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any

WEB = Path(__file__).resolve().parents[2] / "clients" / "web"
ORIGIN = "http://127.0.0.1:9"


async def serve_web(page: Any) -> None:
    """Route ORIGIN (and ORIGIN/static/) to clients/web/; 404 for anything else."""

    async def answer(route: Any) -> None:
        path = route.request.url[len(ORIGIN):].split("?", 1)[0].lstrip("/") or "index.html"
        path = path.removeprefix("static/")   # the lobby serves the modules under /static/
        file = (WEB / path).resolve()
        if file.parent != WEB or not file.is_file():
            await route.fulfill(status=404, body="not found")
            return
        kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        if file.suffix == ".js":
            kind = "text/javascript"
        await route.fulfill(status=200, body=file.read_bytes(), content_type=kind)

    await page.route(f"{ORIGIN}/**", answer)


async def open_page(browser: Any, viewport: dict[str, int]) -> tuple[Any, Any, list[str]]:
    """A new context and page on the served client; the list collects console errors and
    uncaught page errors."""
    context = await browser.new_context(viewport=viewport, locale="en-US")
    page = await context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}")
            if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    await serve_web(page)
    await page.goto(f"{ORIGIN}/")
    await page.wait_for_selector("#login-panel")
    return context, page, errors
