"""The variant table agrees with the source's Options section (a copy in tests/data/patience)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pbmserv_terrace.games.patience import VARIANTS, get_variant

SOURCE = Path(__file__).parents[2] / "data" / "patience" / "pysolfc-terrace-patience.txt"
WORDS = {"Ten": 10, "Eleven": 11, "Thirteen": 13}


def options() -> dict[str, str]:
    """Each variant's paragraph of the Options section, by name."""
    text = " ".join(line.lstrip("- ").strip() for line in SOURCE.read_text().splitlines() if not line.startswith("#"))
    section = text.split("<title>Options</title>")[1].split("</sect2>")[0]
    paras = [re.sub(r"\s+", " ", p).strip() for p in re.findall(r"<para>(.*?)</para>", section)]
    return {paras[i]: paras[i + 1] for i in range(1, len(paras) - 1, 2)}


def test_the_source_lists_the_seven_variants() -> None:
    assert [get_variant(name).key for name in options()] == list(VARIANTS)


@pytest.mark.parametrize(("name", "rule"), list(options().items()))
def test_variant_parameters_match_the_source(name: str, rule: str) -> None:
    v = get_variant(name)
    m = re.match(r"Reserve of (\d+) cards, (\d+) Tableau piles", rule)
    assert m, rule
    assert (v.reserve, v.piles) == (int(m.group(1)), int(m.group(2)))
    assert v.choose_base == ("choice of four" in rule)
    assert v.by_suit == ("by suit" in rule) and v.by_suit != ("alternating colours" in rule)
    assert (v.stock_passes == 2) == ("can be turned once" in rule) and (v.stock_passes == 1) == ("cannot be turned" in rule)
    autofill = "waste" if "filled from the Waste" in rule else "reserve" if "filled from the Reserve" in rule else "none"
    assert v.autofill == autofill
