"""The browser's party field and refusals (clients/web/match.js): the Friends field as
AskMatch.party (ids as text: int64, guest ids exceed 2^53), and the codes an AskMatch is
refused with as clear lines in English and Chinese. Runs the module in node, skipped where
node is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.node import NODE, run_node

WEB = Path(__file__).resolve().parents[3] / "clients" / "web"


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_friends_field_and_the_refusals() -> None:
    match, i18n = (WEB / "match.js").as_uri(), (WEB / "i18n.js").as_uri()
    got = run_node(f"""
globalThis.document = {{getElementById: () => null}};
const {{parseParty, refusedText, partyText}} = await import("{match}");
const {{setLang}} = await import("{i18n}");
const offline = {{code: 1063, message: "player 1002 is not online: a party's players must be logged in"}};
const busy = {{code: 1064, message: "player 1003 sits in a room"}};
const lines = () => [refusedText(offline), refusedText(busy), refusedText({{code: 1062}}),
                     refusedText({{code: 1099, message: "odd"}}), partyText(["1002", "1003"]),
                     partyText([])];
const en = lines();
setLang("zh");
const zh = lines();
console.log(JSON.stringify({{
  empty: parseParty("", "1001"), one: parseParty(" 1002 ", "1001"),
  two: parseParty("1002, 1003", "1001"), spaces: parseParty("1002 1003", "1001"),
  zhComma: parseParty("1002，1003", "1001"),
  guest: parseParty("8000000000000000123", "1001"),
  three: parseParty("1002,1003,1004", "1001"), twice: parseParty("1002,1002", "1001"),
  self: parseParty("1001", "1001"), name: parseParty("alice", "1001"),
  zero: parseParty("0", "1001"), negative: parseParty("-5", "1001"),
  en, zh,
}}));
""")
    assert got["empty"] == [] and got["one"] == ["1002"]
    assert got["two"] == got["spaces"] == got["zhComma"] == ["1002", "1003"]
    assert got["guest"] == ["8000000000000000123"]            # kept as text, not a float
    for bad in ("three", "twice", "self", "name", "zero", "negative"):
        assert got[bad] is None, bad
    assert got["en"] == [
        "friend 1002 is not online: friends must be logged in to be matched together",
        "friend 1003 is busy: waiting for another match or sitting in a room",
        "your coins do not cover this stake",
        "match request refused: odd",
        " with 1002, 1003 (they ask too, naming you)", ""]
    assert got["zh"] == [
        "好友 1002 不在线：好友必须登录后才能一起匹配",
        "好友 1003 正忙：正在等待其他匹配或已在房间中",
        "你的金币不足以支付这个底分",
        "匹配请求被拒绝: odd",
        " 与 1002, 1003 一起（他们也要发起匹配并填写你）", ""]
