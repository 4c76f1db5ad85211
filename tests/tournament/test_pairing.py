"""The pure pairings and tables (issue 41), against hand-computed ones."""

from __future__ import annotations

import itertools
import random

import pytest

from pbmserv_terrace.tournament import (
    Pairing,
    Result,
    berger_table,
    bracket_order,
    crosstable,
    knockout_pairings,
    knockout_winners,
    round_robin_pairings,
    rounds_needed,
    standings,
    swiss_pairings,
)

# FIDE Handbook C.05 Annex 1, the Berger table for 5-6 players
FIDE_6 = [
    [(1, 6), (2, 5), (3, 4)],
    [(6, 4), (5, 3), (1, 2)],
    [(2, 6), (3, 1), (4, 5)],
    [(6, 5), (1, 4), (2, 3)],
    [(3, 6), (4, 2), (5, 1)],
]
# and for 3-4
FIDE_4 = [[(1, 4), (2, 3)], [(4, 3), (1, 2)], [(2, 4), (3, 1)]]


def test_berger_tables_are_fides():
    assert berger_table(6) == FIDE_6
    assert berger_table(4) == FIDE_4
    # an odd number: the one who would meet the last number rests
    assert berger_table(5) == [[(w, None if b == 6 else b) if 6 not in (w, b) else (w if b == 6 else b, None)
                                for w, b in rnd] for rnd in FIDE_6]  # fmt: skip


@pytest.mark.parametrize("n", range(2, 15))
def test_a_round_robin_meets_everyone_once_with_balanced_colours(n):
    players = [10 * i for i in range(1, n + 1)]
    rounds = rounds_needed("roundrobin", n)
    met = [frozenset((p.white, p.black)) for r in range(1, rounds + 1) for p in round_robin_pairings(players, r)
           if p.black is not None]  # fmt: skip
    assert sorted(met, key=sorted) == sorted({frozenset(c) for c in itertools.combinations(players, 2)}, key=sorted)
    whites = {p: 0 for p in players}
    for r in range(1, rounds + 1):
        for p in round_robin_pairings(players, r):
            if p.black is not None:
                whites[p.white] += 1
    games = n - 1
    assert all(abs(2 * w - games) <= 2 for w in whites.values()), whites


def test_a_double_round_robin_swaps_the_colours():
    players = [1, 2, 3, 4]
    first = [round_robin_pairings(players, r, double=True) for r in (1, 2, 3)]
    second = [round_robin_pairings(players, r, double=True) for r in (4, 5, 6)]
    assert second == [[Pairing(p.black, p.white) for p in rnd] for rnd in first]  # type: ignore[arg-type]
    assert rounds_needed("double", 4) == 6 and rounds_needed("roundrobin", 5) == 5


def test_swiss_round_one_is_top_half_against_bottom_half_colours_alternating():
    assert swiss_pairings(list(range(1, 9)), []) == [Pairing(1, 5), Pairing(6, 2), Pairing(3, 7), Pairing(8, 4)]


def test_swiss_hand_computed_eight_players():
    """Round 1 as above; the first seat wins every game.  Round 2 by hand: group 1
    (1 3 6 8 by seed) splits 1 3 | 6 8: 1-6, 3-8; group 0 (2 4 5 7): 2-5, 4-7.  Colours:
    1 and 3 had white, 6 and 8 had white too (6-2, 8-4): equal wishes, the higher
    rank gets its own (black): 6-1, 8-3; 2 and 4 had black, 5 and 7 black: 2-5, 4-7."""
    r1 = swiss_pairings(list(range(1, 9)), [])
    results = [Result(1, p.white, p.black, 1.0) for p in r1]
    r2 = swiss_pairings(list(range(1, 9)), results)
    assert r2 == [Pairing(6, 1), Pairing(8, 3), Pairing(2, 5), Pairing(4, 7)]
    # round 3 after the first seat wins again: 6 (2), 8 (2), 1, 3, 2, 4 (1), 5, 7 (0)
    results += [Result(2, p.white, p.black, 1.0) for p in r2]
    r3 = swiss_pairings(list(range(1, 9)), results)
    # 6-8 (colours: 6 W,W → black; 8 W,W → black: equal, 6 ranks higher and gets black → 8-6)
    # group 1 (1 2 3 4): 1-3? 1 met 5 and 6; S1 1 2, S2 3 4: 1-3, 2-4; 1: W,B wants... level, black last → white;
    # 3: W,B → white too: equal, higher (1) gets white: 1-3; 2: B,W → black; 4: B,W → black: higher (2) → 4-2
    # group 0: 5-7; 5: B,B → white; 7: B,B → white: 5 higher → 5-7
    assert r3 == [Pairing(8, 6), Pairing(1, 3), Pairing(4, 2), Pairing(5, 7)]


def test_swiss_repeats_no_game_while_one_can_be_avoided_and_gives_byes_once():
    rng = random.Random(7)
    for n in (5, 7, 8, 9, 12):
        players = list(range(1, n + 1))
        results: list[Result] = []
        for r in range(1, n - (1 if n % 2 == 0 else 0)):  # as many rounds as a round robin has
            pairs = swiss_pairings(players, results)
            met = {frozenset((x.white, x.black)) for x in results if x.black is not None}
            assert not [p for p in pairs if p.black is not None and frozenset((p.white, p.black)) in met], (n, r)
            byes = [p.white for p in pairs if p.black is None]
            assert len(byes) == n % 2
            assert not set(byes) & {x.white for x in results if x.black is None}, "a second bye"
            assert sorted(x for p in pairs for x in (p.white, p.black) if x is not None) == players
            results += [Result(r, p.white, p.black, 1.0 if p.black is None else rng.choice((0.0, 0.5, 1.0))) for p in pairs]


def test_swiss_bye_goes_to_the_lowest_ranked_without_one():
    pairs = swiss_pairings([1, 2, 3, 4, 5], [])
    assert pairs[-1] == Pairing(5, None)
    results = [Result(1, p.white, p.black, 1.0 if p.black is None else 0.0) for p in pairs]
    # 5 has 1 point (the bye); the lowest-ranked without one is the worst seed on 0 who lost: 1, 2, 3, 4 order
    second = swiss_pairings([1, 2, 3, 4, 5], results)
    assert second[-1].black is None and second[-1].white != 5


def test_knockout_bracket_byes_and_tie_break():
    assert bracket_order(8) == [1, 8, 4, 5, 2, 7, 3, 6]
    assert bracket_order(4) == [1, 4, 2, 3]
    players = [11, 12, 13, 14, 15, 16]  # six: seeds 1 and 2 get byes
    r1 = knockout_pairings(players, [], 1)
    assert r1 == [Pairing(11, None), Pairing(14, 15), Pairing(15, 14), Pairing(12, None), Pairing(13, 16), Pairing(16, 13)]
    results = [Result(1, p.white, p.black, None if p.black is None else s)
               for p, s in zip(r1, [None, 1.0, 1.0, None, 1.0, 0.0], strict=True)]  # fmt: skip
    # 14-15: each won with white, 1-1 → the higher seed (14); 13-16: 13 won both
    assert knockout_winners(players, results) == [11, 14, 12, 13]
    assert knockout_pairings(players, results, 2) == [Pairing(11, 14), Pairing(14, 11), Pairing(12, 13), Pairing(13, 12)]
    assert knockout_pairings(players, results, 2, withdrawn=[14]) == [Pairing(11, None), Pairing(12, 13), Pairing(13, 12)]
    assert rounds_needed("knockout", 6) == 3 and rounds_needed("knockout", 8) == 3


def test_tie_breaks_by_hand():
    """Four players, a round robin: 1 beats 2 and 3, draws 4; 2 beats 3 and 4; 3 beats 4.
    Points: 1 2.5, 2 2, 3 1, 4 0.5.  Sonneborn-Berger: 1: 2 + 1 + 0.25 = 3.25; 2: 1 + 0.5
    = 1.5; 3: 0.5; 4: half of 2.5 = 1.25.  Buchholz: 1: 2+1+0.5 = 3.5; 2: 2.5+1+0.5 = 4;
    3: 2.5+2+0.5 = 5; 4: 2.5+2+1 = 5.5."""
    results = [Result(1, 1, 2, 1.0), Result(2, 3, 1, 0.0), Result(3, 1, 4, 0.5), Result(1, 3, 2, 0.0),
               Result(2, 2, 4, 1.0), Result(3, 4, 3, 0.0)]  # fmt: skip
    table = standings([1, 2, 3, 4], results, "roundrobin")
    assert [(s.player, s.points, s.sonneborn_berger, s.buchholz) for s in table] == [
        (1, 2.5, 3.25, 3.5), (2, 2.0, 1.5, 4.0), (3, 1.0, 0.5, 5.0), (4, 0.5, 1.25, 5.5)]  # fmt: skip
    assert [(s.wins, s.draws, s.losses) for s in table] == [(2, 1, 0), (2, 0, 1), (1, 0, 2), (0, 1, 2)]
    # level on points: Swiss orders by Buchholz first, the round robin by Sonneborn-Berger
    level = [Result(1, 1, 2, 1.0), Result(1, 3, 4, 1.0), Result(2, 1, 3, 0.0), Result(2, 2, 4, 1.0)]
    # points 1: 1, 2: 1, 3: 2, 4: 0; SB: 1: 1*1=1 (beat 2), 2: 0 (beat 4); Buchholz: 1: 1+2=3, 2: 1+0=1
    assert [s.player for s in standings([1, 2, 3, 4], level, "swiss")] == [3, 1, 2, 4]
    assert crosstable([1, 2], [Result(1, 1, 2, 0.5), Result(2, 2, 1, 1.0)]) == {1: {2: [0.5, 0.0]}, 2: {1: [0.5, 1.0]}}


def test_two_hundred_players_pair_fast_without_repeats():
    players = list(range(1, 201))
    results: list[Result] = []
    rng = random.Random(3)
    for r in range(1, 8):
        pairs = swiss_pairings(players, results)
        met = {frozenset((x.white, x.black)) for x in results}
        assert not [p for p in pairs if frozenset((p.white, p.black)) in met]
        results += [Result(r, p.white, p.black, rng.choice((0.0, 0.5, 1.0))) for p in pairs]
