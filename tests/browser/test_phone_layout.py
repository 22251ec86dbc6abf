"""On a phone (390x844) every control of the web client is at least 44 px high: the page is
loaded (clients/web/ served to Chromium, tests/browser/webpage.py), frames put it in a Dadun
hand at a play decision (so Dadun's Hint / Clear / Pass / Play and the decision buttons are
drawn) with a room list, then every panel is shown, every <details> opened and every move
listed, and the bounding box of every button, select, input and summary is measured."""

from __future__ import annotations

import json
from typing import Any

from tests.browser.webpage import open_page

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
MIN_PX = 44

FEED = """async (frames) => {
  const {conn} = await import("/static/conn.js");
  for (const [kind, body] of frames) conn.hooks.frame(kind, body, {});
}"""

DEAL = ["3s", "3h", "4c", "5d", "6s", "7h", "8c", "9d", "Ts", "Jh", "Qc", "Kd", "As"]
FRAMES: list[list[Any]] = [
    ["login_ok", {"player": {"user_id": "1001", "nickname": "Wen"}, "heartbeat_seconds": 30}],
    ["room_list", {"items": [{"room_id": "5", "game": "XUEZHAN", "total_hands": 4,
                              "players": [{"user_id": "7", "seat": 1}]},
                             {"room_id": "6", "game": "DADUN", "total_hands": 8, "players": []}]}],
    ["room_joined", {"room": {"room_id": "9", "game": "DADUN", "total_hands": 4, "cur_hand": 1,
                              "status": "ROOM_PLAYING",
                              "players": [{"user_id": str(1001 + s), "seat": s, "nickname": f"p{s}",
                                           "online": True} for s in range(4)]},
                     "seat": 0}],
    ["game_event", {"game": "dadun", "kind": "deal", "seat": -1,
                    "json": json.dumps({"banker": 0, "cards_per_seat": 27})}],
    ["dd_assign", {"cards": DEAL}],
    ["prompt", {"game": "dadun", "seat": 0, "phase": "play", "seconds": 20,
                "observation_json": "{}",
                "actions": [{"kind": "play", "tiles": ["3s"], "ref": "t1.1"},
                            {"kind": "play", "tiles": ["4c"], "ref": "t1.1"},
                            {"kind": "pass", "ref": "t1.1"}]}],
]

MEASURE = """() => {
  for (const e of document.querySelectorAll("[hidden]")) e.hidden = false;
  for (const d of document.querySelectorAll("details")) d.open = true;
  document.getElementById("actions").classList.add("show-all");
  const out = [];
  for (const e of document.querySelectorAll("button, select, input, summary")) {
    const r = e.getBoundingClientRect();
    const style = getComputedStyle(e);
    if (style.display === "none" || style.visibility === "hidden" || r.width === 0) continue;
    out.push({id: e.id || "", text: (e.textContent || e.value || "").trim().slice(0, 24),
              tag: e.tagName.toLowerCase(), height: r.height});
  }
  return out;
}"""


async def measure(browser: Any, viewport: dict[str, int]) -> list[dict[str, Any]]:
    context, page, errors = await open_page(browser, viewport)
    try:
        await page.evaluate(FEED, FRAMES)
        await page.wait_for_selector("#dd-controls:not([hidden])")
        await page.wait_for_timeout(100)   # a coalesced render, if any, has run
        controls: list[dict[str, Any]] = await page.evaluate(MEASURE)
    finally:
        await context.close()
    assert errors == [], errors
    return controls


async def test_every_control_is_at_least_44_px_high_on_a_phone(browser: Any) -> None:
    controls = await measure(browser, PHONE)
    ids = {c["id"] for c in controls}
    assert {"dd-hint", "dd-clear", "dd-pass", "dd-play", "leave", "lang"} <= ids, ids
    assert sum(1 for c in controls if c["text"].startswith("Join")) >= 1, controls
    assert sum(1 for c in controls if "act" in c["tag"] or c["text"][:2] in ("1)", "2)")) >= 2
    small = [c for c in controls if c["height"] < MIN_PX - 0.01]
    print(f"{len(controls)} controls measured at 390x844; lowest "
          f"{min(c['height'] for c in controls):.1f} px")
    assert small == [], small


async def test_the_desktop_keeps_its_compact_controls(browser: Any) -> None:
    """The 44 px floor is the phone's: on a desktop Dadun's buttons keep their height (so
    the phone measure above is the media rule's doing, not a page that is tall anyway)."""
    controls = await measure(browser, DESKTOP)
    heights = {c["id"]: c["height"] for c in controls if c["id"].startswith("dd-")}
    assert set(heights) == {"dd-hint", "dd-clear", "dd-pass", "dd-play"}, heights
    assert all(h < MIN_PX for h in heights.values()), heights
