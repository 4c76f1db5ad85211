"""PNG bytes of palette pictures that mostly repeat one another, band by band.

A move changes two or three rows of squares of a board picture; the other rows
are as they were in the game's last picture.  Deflating the ~410 kB of a 640 px
picture's rows was ~1.2 ms of the 1.5 ms a picture cost (issue 18), the same work
every time for the rows that did not change.  So the picture is cut into
horizontal bands (for a board: one per row of squares, and the margins), each
band is deflated on its own (the stream flushed fully at its end, so that no
band refers back into another) and the result is kept, keyed by the SHA-256 of
the band's bytes: a band met before costs a hash and a lookup.  A caller that
can say what is drawn in each band (:meth:`BandedPng.encode_keyed`: the board
pictures, whose bands are keyed by the marks and pieces that reach them) spares
the hash too, and draws only the bands that are new.  The bands'
pieces are one valid zlib stream (RFC 1950/1951: deflate blocks that end on a
byte boundary may follow one another; the last is an empty final block), whose
Adler-32 is combined from the bands' own.

Pillow writes everything else a PNG viewer needs as well; this module writes
only what a palette picture needs (``IHDR``, ``PLTE``, ``IDAT``, ``IEND``),
because Pillow cannot be handed deflated pieces.  Each scanline is filtered with
filter type 0 (None), as Pillow does for palette pictures.
"""

from __future__ import annotations

import hashlib
import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence

from PIL import Image

SIGNATURE = b"\x89PNG\r\n\x1a\n"
ZLIB_HEADER = b"\x78\x5e"
"""deflate, 32 kB window, "default" level (the level bits are informative only)"""
FINAL_BLOCK = b"\x03\x00"
"""an empty final deflate block with fixed codes: what ends the stream after the bands"""
ADLER_BASE = 65521


def adler32_combine(first: int, second: int, second_length: int) -> int:
    """The Adler-32 of two pieces of data one after the other, from each piece's
    own (zlib's ``adler32_combine``, which Python's ``zlib`` does not offer)."""
    rem = second_length % ADLER_BASE
    sum1 = first & 0xFFFF
    sum2 = (rem * sum1) % ADLER_BASE
    sum1 += (second & 0xFFFF) + ADLER_BASE - 1
    sum2 += ((first >> 16) & 0xFFFF) + ((second >> 16) & 0xFFFF) + ADLER_BASE - rem
    sum1 %= ADLER_BASE
    sum2 %= ADLER_BASE
    return sum1 | (sum2 << 16)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


class BandedPng:
    """Encodes palette (``P``) pictures as PNG, keeping the deflated bands of the
    last ``entries`` distinct bands it met (least recently used ones go first).
    Safe to use from several threads."""

    def __init__(self, *, entries: int = 4096, level: int = 3) -> None:
        self.entries, self.level = entries, level
        self._bands: OrderedDict[Hashable, tuple[bytes, int, int]] = OrderedDict()
        """SHA-256 of a band, or (KEYED, what is drawn in it) → (its deflated bytes,
        its Adler-32, its length)"""
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def encode(self, im: Image.Image, cuts: Sequence[int] = ()) -> bytes:
        """``im`` as PNG bytes.  ``cuts``: the rows where bands begin (0 and the
        height may be left out); none: bands of 64 rows."""
        if im.mode != "P" or "transparency" in im.info:
            raise ValueError(f"an opaque palette picture is encoded here, not mode {im.mode} {sorted(im.info)}")
        palette = bytes(im.getpalette("RGB") or ())
        if not palette:
            raise ValueError("a palette picture without a palette")
        width, height = im.size
        rows = bands_of(cuts, height) if cuts else bands_of(range(64, height, 64), height)
        raw, stride = _scanlines(im)
        made = []
        for top, bottom in rows:
            band = raw[top * stride : bottom * stride]
            made.append(self._band(hashlib.sha256(band).digest(), band))
        return _png(width, height, palette, made)

    def encode_keyed(
        self,
        size: tuple[int, int],
        palette: bytes,
        bands: Sequence[tuple[int, int, Hashable]],
        draw: Callable[[list[int]], tuple[Image.Image, int]],
    ) -> bytes:
        """A palette picture given as bands (top row, bottom row, a key that says
        what is drawn in the band: equal keys, equal rows) that cover its height in
        order.  A band whose key was met before costs a lookup: nothing is drawn or
        hashed for it.  ``draw`` is called only if some band is new, with their
        indices, and gives a part of the picture (``palette``, the picture's width)
        and the picture's row its top row is: it must cover those bands and their
        rows be right (the part may be the whole, and rows of other bands in it may
        be left undrawn)."""
        width, height = size
        made: list[tuple[bytes, int, int] | None] = []
        with self._lock:
            for _, _, key in bands:
                known = self._bands.get((KEYED, key))
                if known is not None:
                    self._bands.move_to_end((KEYED, key))
                    self.hits += 1
                made.append(known)
        missing = [i for i, m in enumerate(made) if m is None]
        if missing:
            im, first = draw(missing)
            covered = first <= bands[missing[0]][0] and bands[missing[-1]][1] <= first + im.height <= height
            if im.mode != "P" or im.width != width or not covered:
                raise ValueError(f"drawn {im.mode} {im.size} from row {first}: not the new bands of a palette picture of {size}")
            raw, stride = _scanlines(im)
            for i in missing:
                top, bottom, key = bands[i]
                made[i] = self._band((KEYED, key), raw[(top - first) * stride : (bottom - first) * stride])
        return _png(width, height, palette, [m for m in made if m is not None])

    def _band(self, key: Hashable, band: memoryview) -> tuple[bytes, int, int]:
        """The band deflated, from the cache under ``key`` or deflated and kept."""
        with self._lock:
            known = self._bands.get(key)
            if known is not None:
                self._bands.move_to_end(key)
                self.hits += 1
                return known
        squeeze = zlib.compressobj(self.level, zlib.DEFLATED, -15)
        made = (squeeze.compress(band) + squeeze.flush(zlib.Z_FULL_FLUSH), zlib.adler32(band), len(band))
        with self._lock:
            self.misses += 1
            self._bands[key] = made
            while len(self._bands) > self.entries:
                self._bands.popitem(last=False)
        return made


KEYED = "keyed"
"""marks the cache keys of :meth:`BandedPng.encode_keyed` (the others are SHA-256 digests)"""


def bands_of(cuts: Iterable[int], height: int) -> list[tuple[int, int]]:
    """The (top, bottom) rows of the bands that begin at 0 and at each cut."""
    rows = sorted({0, *(c for c in cuts if 0 < c < height)})
    return list(zip(rows, [*rows[1:], height], strict=True))


def _scanlines(im: Image.Image) -> tuple[memoryview, int]:
    """The picture's scanlines, each its filter byte (0: None) and the row, and
    their length: the picture pasted one column to the right of a column of index
    0 gives exactly that."""
    width, height = im.size
    lined = Image.new("P", (width + 1, height), 0)
    lined.paste(im, (1, 0))
    return memoryview(lined.tobytes()), width + 1


def _png(width: int, height: int, palette: bytes, bands: Sequence[tuple[bytes, int, int]]) -> bytes:
    """The PNG file of these deflated bands (deflated bytes, Adler-32, length), top to bottom."""
    pieces = [ZLIB_HEADER]
    adler = 1  # (the Adler-32 of nothing)
    for deflated, band_adler, length in bands:
        pieces.append(deflated)
        adler = adler32_combine(adler, band_adler, length)
    pieces += [FINAL_BLOCK, struct.pack(">I", adler)]
    header = struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)
    return b"".join(
        [
            SIGNATURE,
            _chunk(b"IHDR", header),
            _chunk(b"PLTE", palette),
            _chunk(b"IDAT", b"".join(pieces)),
            _chunk(b"IEND", b""),
        ]
    )
