"""The operator console's write actions on a real stack (nats-server, records on SQLite,
table, lobby with its console): only the admin token may write (the read token gets 403), an
operator fills a room with robots and dismisses it mid-hand, mutes a player's chat on every
lobby and lifts it, kicks him, and every action is in the audit log, newest first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from paiju.v1 import common_pb2, lobby_msgs_pb2
from services.common.config import load_config
from services.common.natsd import EmbeddedNats
from tests.service.test_lobby_console import (
    TOKEN,
    Stack,
    console_stack,
    create_room,
)
from tests.support.lobbyworld import code_of
from tests.support.waiting import eventually

ADMIN = "console-admin-token-9876543210"
E = common_pb2


def admin_stack(server: EmbeddedNats, db: Path) -> Any:
    """The console's stack with an admin token, robots off for players."""
    return console_stack(server, db, {"PAIJU_TABLE__ROBOTS_ALLOWED": "false"},
                         console_admin_token=ADMIN)


async def post(stack: Stack, path: str, body: Any, token: str = ADMIN) -> tuple[int, Any]:
    async with stack.http.post(stack.url(path), json=body,
                               headers={"Authorization": f"Bearer {token}"}) as response:
        return response.status, await response.json()


async def test_operators_add_robots_dismiss_mute_kick_and_it_is_audited(
        fresh_nats: EmbeddedNats, tmp_path: Path) -> None:
    async with admin_stack(fresh_nats, tmp_path / "records.db") as stack:
        owner = await stack.player(501, "owner")
        room_id = await create_room(owner, E.XUEZHAN, 1)
        # the read token reads, it never writes; the admin token does both
        status, body = await post(stack, f"/api/rooms/{room_id}/robots",
                                  {"operator": "alice"}, token=TOKEN)
        assert status == 403 and body["error"] == "forbidden"
        assert (await post(stack, f"/api/rooms/{room_id}/robots", {"count": 0}))[0] == 400
        assert (await post(stack, f"/api/rooms/{room_id}/robots",
                           {"operator": "alice", "count": 10}))[0] == 400
        assert (await post(stack, "/api/rooms/87654321/robots",
                           {"operator": "alice"}))[0] == 404
        # robots are off for players on this table, an operator may still seat them
        assert code_of(await owner.request(lobby_msgs_pb2.AddRobots())) == E.ERR_DISABLED
        status, body = await post(stack, f"/api/rooms/{room_id}/robots",
                                  {"operator": "alice", "count": 0})
        assert status == 200 and body["ok"] and body["audit_id"] > 0, body

        async def seated() -> Any:
            _, room, _ = await stack.get(f"/api/rooms/{room_id}")
            return room and len(room["seats"]) == 4
        await eventually(seated, seconds=15)
        assert code_of(await owner.request(lobby_msgs_pb2.AskReady(is_ready=True))) == E.OK
        await owner.until(lambda f: f.HasField("prompt"), 15)
        status, body = await post(stack, f"/api/rooms/{room_id}/dismiss",
                                  {"operator": "alice", "reason": "stuck  room"})
        assert status == 200, body
        notice = await owner.until(lambda f: f.HasField("notice_dismiss"), 15)
        assert notice.notice_dismiss.reason == lobby_msgs_pb2.NoticeDismiss.OPERATOR
        assert "stuck room" in notice.notice_dismiss.doc
        status, body = await post(stack, f"/api/rooms/{room_id}/dismiss", {"operator": "alice"})
        assert status == 404
        # a mute reaches the chat of every lobby (this one through NATS as well)
        talker = await stack.player(502, "talker")
        await create_room(talker, E.DADUN, 1)
        status, body = await post(stack, "/api/users/502/mute",
                                  {"operator": "bob", "minutes": 5})
        assert status == 200 and body["until"] > 0
        refused = await talker.request(lobby_msgs_pb2.Chat(content="hello"))
        assert code_of(refused) == E.ERR_MUTED and "muted" in refused.ret.message
        assert (await post(stack, "/api/users/502/mute", {"operator": "bob", "minutes": 0}))[0] \
            == 200
        assert code_of(await talker.request(lobby_msgs_pb2.Chat(content="hello"))) == E.OK
        # a kick ends the user's session wherever it is
        status, body = await post(stack, "/api/users/502/kick",
                                  {"operator": "bob", "reason": "spam"})
        assert status == 200 and body["session_here"], body
        kicked = await talker.until(lambda f: f.HasField("kick_out"), 10)
        assert kicked.kick_out.user_id == 502
        # the audit log: every action, newest first, readable with either token
        status, audit, _ = await stack.get("/api/audit")
        assert status == 200, audit
        actions = [(e["action"], e["operator"], e["target"], e["target_id"], e["result"])
                   for e in audit["entries"]]
        assert actions == [
            ("kick_user", "bob", "user", "502", "ok"), ("mute_user", "bob", "user", "502", "ok"),
            ("mute_user", "bob", "user", "502", "ok"),
            ("dismiss_room", "alice", "room", str(room_id), "ok"),
            ("add_robots", "alice", "room", str(room_id), "ok")], actions
        assert audit["entries"][3]["detail"] == {"reason": "stuck room"}
        assert all(e["at"].endswith("Z") and e["source"] for e in audit["entries"])
        status, rooms, _ = await stack.get(f"/api/audit?target=room&id={room_id}", token=ADMIN)
        assert status == 200 and len(rooms["entries"]) == 2
        assert (await stack.get("/api/audit?limit=0"))[0] == 400


@pytest.mark.parametrize("admin", ["", TOKEN])
def test_the_admin_token_is_checked(admin: str) -> None:
    from services.common.config import ConfigError, require_console_token
    cfg = load_config("test", environ={"PAIJU_LOBBY__CONSOLE_PORT": "0",
                                       "PAIJU_LOBBY__CONSOLE_TOKEN": TOKEN,
                                       "PAIJU_LOBBY__CONSOLE_ADMIN_TOKEN": admin})
    if admin:
        with pytest.raises(ConfigError, match="console_admin_token"):
            require_console_token(cfg)
    else:
        require_console_token(cfg)
    prod = load_config("prod", environ={
        "PAIJU_LOBBY__CONSOLE_PORT": "8090", "PAIJU_LOBBY__CONSOLE_TOKEN": TOKEN,
        "PAIJU_LOBBY__CONSOLE_ADMIN_TOKEN": "dev-console-admin-token"})
    with pytest.raises(ConfigError, match="dev token"):
        require_console_token(prod)


async def test_an_operator_fills_and_dismisses_a_room_from_the_console_page(
        fresh_nats: EmbeddedNats, tmp_path: Path) -> None:
    """The console page itself (clients/web/console.js in node, with its real fetch): the
    read token shows the room, the admin token and a name fill it with robots and dismiss
    it, and the audit log on the page shows both."""
    import asyncio
    import shutil

    from tests.service.test_lobby_console import HARNESS, WEB_ROOT, Page

    node = shutil.which("node")
    if node is None:
        pytest.skip("needs node to run clients/web/console.js")
    async with admin_stack(fresh_nats, tmp_path / "records.db") as stack:
        owner = await stack.player(601, "owner")
        room_id = await create_room(owner, E.CHANGSHA, 2)
        harness = tmp_path / "harness.js"
        harness.write_text(HARNESS)
        proc = await asyncio.create_subprocess_exec(
            node, str(harness), str(stack.console.port), str(WEB_ROOT),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        page = Page(proc)
        try:
            await page.do("set", id="token", value=TOKEN)
            await page.do("submit", id="token-form")
            await page.wait("rooms", rows=1)
            await page.do("press", id="rooms", row=room_id, label="Open")
            await page.wait("room-seats", rows=1, contains="owner")
            await page.do("click", id="room-robots")     # no admin token yet: refused
            await page.wait("error", contains="admin token", hidden=False)
            await page.do("set", id="admin-token", value=ADMIN)
            await page.do("set", id="operator-name", value="alice")
            await page.do("click", id="room-robots")
            await page.wait("room-seats", rows=4, contains="robot")
            await page.wait("audit", rows=1, contains="alice")
            await page.do("click", id="room-dismiss")
            audit = await page.wait("audit", rows=2, contains="dismiss")
            assert str(room_id) in audit["text"] and "robots" in audit["text"]

            async def gone() -> bool:
                rooms = (await stack.ok("/api/rooms"))["rooms"]
                return all(r["room_id"] != room_id for r in rooms)
            await eventually(gone, seconds=15)
        finally:
            await page.close()
