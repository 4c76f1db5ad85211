"""A frozen copy of robot3's engine as it was on 2026-11-28 (commit fe24eb5), before
issue 42: ``bench/robot.py --pairs 3-f3`` measures today's robot3 against it at
equal time per move.  Never edited; it reads only the rules (games/terrace).

The original docstring follows.

Robot opponents for Terrace (issue 17): a search engine on top of the rules.

Public API: :func:`choose_move` (a move for robot level 1, 2 or 3),
:func:`describe` (the robot's one-line comment), :func:`accepts_draw`,
:func:`position_key` (a position's key for a game ``history``), and
:class:`EngineResult`.  The engine imports only :mod:`pbmserv_terrace.games.terrace` and
the standard library.  Modules: ``board`` (make/unmake search board), ``zobrist``
(hash keys), ``evaluate`` (static evaluation), ``search`` (alpha-beta; why paranoid
for three and four armies is in its docstring), ``robot`` (levels and the API).
"""

from .robot import EngineResult, accepts_draw, choose_move, describe, position_key

__all__ = ["EngineResult", "accepts_draw", "choose_move", "describe", "position_key"]
