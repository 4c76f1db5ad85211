"""Regenerate the golden board pictures in tests/data/pictures/ (and the examples).

Run from the repository root after a deliberate change to the picture:

    .venv/bin/python -m tests.games.terrace.make_golden

then look at the PNGs before committing them: the golden test compares future
renders with these files, so they must show what we want.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # also works as `python tests/games/terrace/make_golden.py`
    sys.path.insert(0, str(ROOT))

from pbmserv_terrace.games.terrace.picture import board_png  # noqa: E402
from tests.games.terrace.cases import golden_cases  # noqa: E402

PICTURES = ROOT / "tests" / "data" / "pictures"


def main() -> None:
    PICTURES.mkdir(parents=True, exist_ok=True)
    for name, case in golden_cases().items():
        data = board_png(case.pos, case.last_move, captured=case.captured, threatened=case.threatened)
        (PICTURES / f"{name}.png").write_bytes(data)
        print(f"{name}.png  {len(data)} bytes")


if __name__ == "__main__":
    main()
