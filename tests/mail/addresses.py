"""Pieces that random address-like header values and SMTP arguments are made of,
for the differential tests of the address short cuts (issue 18)."""

from __future__ import annotations

from hypothesis import strategies as st

PIECES = ["a", "Zed", "0", "+tag", "-", ".", "..", "@", "<", ">", " ", "\t", ",", ";", ":", '"', "(c)", "[1.2.3.4]", "ä",
          "=?", "?=", "=", "\\", "SIZE=12", " BODY=8BITMIME"]  # fmt: skip


def values(most: int) -> st.SearchStrategy[str]:
    """Strings of up to ``most`` pieces."""
    return st.lists(st.sampled_from(PIECES), max_size=most).map("".join)
