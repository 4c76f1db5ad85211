"""Stable game ids (issue 37 part 2): a game's ids are declared in its entry of
GAME_TYPES (``name``, stored in rows; ``key_code``, packed in reply keys), never
taken from the entry's place in the table.  Keys mailed before the change (when
the packed number was the entry's position) still read, verify and play."""

from __future__ import annotations

import dataclasses
import types
from email.utils import parseaddr
from pathlib import Path

import pytest

from pbmserv_terrace import gametypes
from pbmserv_terrace.gametypes import GAME_TYPES, GameTableError, GameType, game_table
from pbmserv_terrace.service.replykeys import decode_key, games_by_code, key_address, make_key, verify_key

from .harness import SERVER, Harness, Reply, answer, mine

SECRET_HEX = "0123456789abcdef" * 4
SECRET = bytes.fromhex(SECRET_HEX)

OLD_KEYS = {
    # made by make_key before issue 37 part 2 (the game packed as its position in
    # GAME_TYPES), for board 101, user 4, version/ply 0, key generation 0, under SECRET
    ("terrace", True): "qaaaaziaaacaaaes2hpktozt3ar4q7a",
    ("terrace6x6", True): "qeaaaziaaacaaaftejt5r6zakinlwqy",
    ("patience", True): "qiaaaziaaacaaabjmljnltj7byi6l3a",
    ("terrace", False): "aaaaaziaaacaaaalcenmz2jnp5qanba",
    ("terrace6x6", False): "aeaaaziaaacaaafive5fipihkywifjy",
    ("patience", False): "aiaaaziaaacaaaa634nfeapogwptfhy",
}
USER = 4
"""ann's user id in a fresh Harness (after its robots)"""
OLD_KEY_OTHER = "qeabbyiaabgqadawylpdxob347ou75y"
"""the old make_key(SECRET, "terrace6x6", 4321, 77, 12, 3, versioned=True)"""


def reordered() -> dict[str, GameType]:
    """GAME_TYPES backwards, with a new game inserted before all of them."""
    newcomer = dataclasses.replace(GAME_TYPES["patience"], name="klondike", title="Klondike", key_code=4)
    return game_table(newcomer, *reversed(GAME_TYPES.values()))


def test_each_game_declares_the_code_its_keys_already_carry():
    assert {name: g.key_code for name, g in GAME_TYPES.items()} == {"terrace": 0, "terrace6x6": 1, "patience": 2, "breakthrough": 3}
    assert games_by_code(GAME_TYPES) == {0: "terrace", 1: "terrace6x6", 2: "patience", 3: "breakthrough"}


@pytest.mark.parametrize(("game", "versioned"), sorted(OLD_KEYS))
def test_keys_made_by_the_old_code_read_and_verify_as_before(game, versioned):
    key = decode_key(OLD_KEYS[game, versioned])
    assert key is not None
    assert (key.game_type, key.board, key.user_id, key.ply, key.versioned) == (game, 101, USER, 0, versioned)
    assert verify_key(SECRET, key, 0) and not verify_key(SECRET, key, 1)
    # the new code makes the very same text
    assert make_key(SECRET, game, 101, USER, 0, 0, versioned=versioned) == OLD_KEYS[game, versioned]
    other = decode_key(OLD_KEY_OTHER)
    assert other is not None and (other.game_type, other.board, other.user_id, other.ply) == ("terrace6x6", 4321, 77, 12)
    assert verify_key(SECRET, other, 3)


def test_reordering_the_table_or_inserting_a_game_changes_no_key():
    table = reordered()
    assert next(iter(table)) == "klondike" and list(table).index("terrace") != 0  # positions all moved
    for (game, versioned), text in OLD_KEYS.items():
        before, after = decode_key(text), decode_key(text, table)
        assert after is not None and after == before and after.game_type == game
        assert verify_key(SECRET, after, 0)
        assert make_key(SECRET, game, 101, USER, 0, 0, versioned=versioned, games=table) == text
    fresh = make_key(SECRET, "klondike", 101, USER, 0, 0, versioned=True, games=table)
    assert decode_key(fresh) is None  # a code this server's table has no game for
    decoded = decode_key(fresh, table)
    assert decoded is not None and decoded.game_type == "klondike"


def test_duplicate_ids_in_a_table_are_refused():
    terrace = GAME_TYPES["terrace"]
    with pytest.raises(GameTableError, match="both have key_code 0"):
        game_table(terrace, dataclasses.replace(terrace, name="chess"))
    with pytest.raises(GameTableError, match="two games called 'terrace'"):
        game_table(terrace, dataclasses.replace(terrace, key_code=9))
    with pytest.raises(GameTableError, match="key_code 128"):
        game_table(dataclasses.replace(terrace, key_code=128))
    with pytest.raises(GameTableError, match="1–16 characters"):
        game_table(dataclasses.replace(terrace, name="x" * 17))
    with pytest.raises(TypeError, match="key_code"):
        GameType("chess", "Chess", "board", terrace.rules)  # type: ignore[call-arg]  # no code, no entry


def test_a_table_with_a_duplicate_code_fails_at_import():
    """The module itself, with patience given terrace6x6's code: importing it raises."""
    path = Path(gametypes.__file__)
    source = path.read_text()
    assert source.count("key_code=2)") == 1
    module = types.ModuleType("pbmserv_terrace.gametypes.duplicate_copy")
    module.__package__ = "pbmserv_terrace.gametypes"
    with pytest.raises(ValueError, match="patience and terrace6x6 both have key_code 1") as refused:
        exec(compile(source.replace("key_code=2)", "key_code=1)"), str(path), "exec"), module.__dict__)
    assert type(refused.value).__name__ == "GameTableError"  # (the copy's own class)


def test_keys_mailed_before_the_change_still_play():
    """Board 101 of each game, ann (user 4) to move at version 0, the reply-key
    secret the one the old keys were made under: a reply to each old key plays."""
    h = Harness()
    try:

        async def set_secret() -> None:
            from pbmserv_terrace.store import UnitOfWork

            async with UnitOfWork(h.db) as uow:
                await uow.secrets.put("reply_keys", SECRET_HEX)
                await uow.commit()

        async def as_before_one_series() -> None:
            # each game had its own board 101 before boards shared one series
            # (migration 0009): the next board is 101 again, of another game
            from sqlalchemy import text

            from pbmserv_terrace.store import UnitOfWork

            async with UnitOfWork(h.db) as uow:
                await uow.session.execute(text("UPDATE board_counters SET next_number = 101 WHERE game_type = '*'"))
                await uow.commit()

        h.loop.run_until_complete(set_secret())
        h.signup("ann", "ben")
        for game, move in (("terrace", "d2-e3"), ("terrace6x6", None)):
            h.loop.run_until_complete(as_before_one_series())
            ann0 = mine(h.send("ann", f"{game} challenge ann pw-ann ben"), "ann")
            # the new code mails ann (user 4) the very key the old code made
            assert parseaddr(ann0.headers["reply-to"])[1] == key_address(SERVER, OLD_KEYS[game, True])
            move = move or ann0.body.rsplit("(e.g. ", 1)[1].split(")")[0]
            legacy = Reply(
                ann0.to, ann0.subject, ann0.body, {**ann0.headers, "reply-to": key_address(SERVER, OLD_KEYS[game, True])}
            )
            played = mine(answer(h, legacy, move), "ben").body
            assert played.split("ann played ", 1)[1].split("\n", 1)[0].endswith(move), (game, played[:200])
        h.loop.run_until_complete(as_before_one_series())
        first = h.send("ann", "patience new ann pw-ann -terrace --deal=4")[0]
        legacy = Reply(
            first.to, first.subject, first.body, {**first.headers, "reply-to": key_address(SERVER, OLD_KEYS["patience", True])}
        )
        [played] = answer(h, legacy, "base 1 flip")
        assert "ann played base 1 flip" in played.body
    finally:
        h.close()
