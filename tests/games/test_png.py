"""The banded PNG encoder (games/png.py): valid PNG files, exactly the picture,
the same bytes whether a band came from the cache or was deflated anew."""

from __future__ import annotations

import io
import random
import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from pbmserv_terrace.games.png import BandedPng, adler32_combine
from pbmserv_terrace.games.terrace import picture, start_position


@given(st.binary(max_size=3000), st.binary(max_size=3000))
def test_adler32_combine_is_the_adler32_of_the_data_together(a: bytes, b: bytes) -> None:
    assert adler32_combine(zlib.adler32(a), zlib.adler32(b), len(b)) == zlib.adler32(a + b)


def test_adler32_combine_with_long_data() -> None:
    a, b = bytes(range(256)) * 700, b"\xff" * 200_000
    assert adler32_combine(zlib.adler32(a), zlib.adler32(b), len(b)) == zlib.adler32(a + b)


def chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """(type, data) of each chunk, every CRC checked."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    out, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert crc == zlib.crc32(kind + body), kind
        out.append((kind, body))
        at += 12 + length
    return out


def noisy(width: int, height: int, seed: int) -> Image.Image:
    rng = random.Random(seed)
    im = Image.new("P", (width, height))
    im.putpalette([rng.randrange(256) for _ in range(3 * 40)])
    im.putdata([rng.randrange(40) if rng.random() < 0.3 else 0 for _ in range(width * height)])
    return im


@pytest.mark.parametrize("cuts", [(), (7, 20, 33), (0, 50, 99, 500)])
def test_a_picture_is_a_valid_png_of_exactly_its_pixels(cuts: tuple[int, ...]) -> None:
    im = noisy(37, 50, 1)
    data = BandedPng().encode(im, cuts)
    parts = chunks(data)
    assert [kind for kind, _ in parts] == [b"IHDR", b"PLTE", b"IDAT", b"IEND"]
    assert struct.unpack(">IIBBBBB", parts[0][1]) == (37, 50, 8, 3, 0, 0, 0)
    assert parts[1][1] == bytes(im.getpalette("RGB") or ())
    # zlib checks the Adler-32 the bands' own were combined into
    lines = zlib.decompress(parts[2][1])
    rows = im.tobytes()
    assert lines == b"".join(b"\x00" + rows[r * 37 : (r + 1) * 37] for r in range(50))
    back = Image.open(io.BytesIO(data))
    back.load()
    assert back.mode == "P" and back.size == im.size and back.tobytes() == im.tobytes()
    assert back.getpalette() == im.getpalette()


def test_a_band_met_before_gives_the_same_bytes_and_costs_no_deflate() -> None:
    first, second = noisy(64, 96, 2), noisy(64, 96, 2)
    second.paste(noisy(64, 32, 3), (0, 32))  # the middle band differs, the others repeat
    fresh = BandedPng().encode(second, [32, 64])
    warm = BandedPng()
    warm.encode(first, [32, 64])
    assert (warm.hits, warm.misses) == (0, 3)
    assert warm.encode(second, [32, 64]) == fresh
    assert (warm.hits, warm.misses) == (2, 4)


def test_the_cache_keeps_the_bands_it_was_told_to_keep() -> None:
    small = BandedPng(entries=3)
    pictures = [noisy(16, 16, seed) for seed in range(4)]  # two bands each, none shared
    for im in pictures:
        small.encode(im, [8])
    assert (small.hits, small.misses) == (0, 8)
    small.encode(pictures[3], [8])  # the newest two bands are kept
    assert (small.hits, small.misses) == (2, 8)
    small.encode(pictures[0], [8])  # the oldest are gone
    assert (small.hits, small.misses) == (2, 10)


def test_only_opaque_palette_pictures() -> None:
    with pytest.raises(ValueError, match="palette"):
        BandedPng().encode(Image.new("RGB", (4, 4)))
    clear = noisy(4, 4, 5)
    clear.info["transparency"] = 0
    with pytest.raises(ValueError, match="palette"):
        BandedPng().encode(clear)


def test_a_board_picture_decodes_to_what_was_drawn_band_by_band() -> None:
    """A board picture's bands are its rows of squares: a picture of the next
    position reuses the rows the move left alone, and decodes to the same pixels
    as the picture encoded from scratch."""
    pos = start_position()
    move = pos.legal_moves()[3]
    after = pos.play(move)
    fresh = BandedPng()
    before = fresh.encode(Image.open(io.BytesIO(picture.board_png(pos))).copy(), ())
    drawn = picture.board_png(after, move, threatened=picture.threatened_squares(after))
    back = Image.open(io.BytesIO(drawn))
    back.load()
    assert back.size == (2 * picture.WIDTH, 2 * picture.WIDTH) and before != drawn
    again = BandedPng().encode(back.copy(), [7, 300])  # other bands, nothing cached
    twice = Image.open(io.BytesIO(again))
    twice.load()
    assert twice.tobytes() == back.tobytes() and twice.getpalette() == back.getpalette()
    hits = picture.PNG.hits
    picture.board_png(after.play(after.legal_moves()[0]))
    assert picture.PNG.hits > hits  # rows the move did not touch came from the cache
