"""The sender's own words of a mail: what is left after the quoting that mail
clients add to a reply (COMMANDS.md §1).  Pure: standard library only.

Replies to board mails carry a copy of the board.  Whether that copy is quoted with
``>`` (Thunderbird, Gmail, Apple Mail, K-9), pasted unquoted under a header block
(Outlook), or flattened from HTML (any client when only HTML is sent), none of it may
be read as the player's command or shown to the others as their comment.  Text
*after* a ``>`` quote is kept: bottom-posting clients put the reply there.

The rules, line by line:

* ``>`` lines are dropped wherever they stand (nested quotes too).
* An attribution ("On … wrote:", "Am … schrieb …:", "Le … a écrit :", and a few
  other languages; Gmail wraps it over two or three lines) is dropped.  When a
  ``>`` quote follows it, reading goes on after the quote; when unquoted text
  follows (HTML turned into text, some mobile clients), that text is the original
  mail and everything from the attribution on is cut.
* An original-message separator ("-----Original Message-----" and its
  translations, forwarded-message markers) and an Outlook header block ("From: …"
  followed by "Sent:"/"To:"/"Subject:" lines, possibly after a line of
  underscores) cut everything from there on.
* A signature marker (``-- ``) and a mobile footer ("Sent from my iPhone", "Get
  Outlook for Android", "Von meinem iPhone gesendet", …) cut everything from there on.
"""

from __future__ import annotations

import re

_STRONG_ATTRIBUTION = re.compile(
    r"^\s*(?:"
    r"on\s.{0,300}\bwrote\s*:"  # English
    r"|am\s.{0,300}\bschrieb\b.{0,300}:"  # German
    r"|le\s.{0,300}\ba\s+écrit\s*:"  # French (often a no-break space before the colon)
    r"|op\s.{0,300}\bschreef\b.{0,300}:"  # Dutch
    r"|el\s.{0,300}\bescribió\s*:"  # Spanish
    r"|il\s.{0,300}\bha\s+scritto\s*:"  # Italian
    r"|em\s.{0,300}\bescreveu\s*:"  # Portuguese
    r"|den\s.{0,300}\bskrev\b.{0,300}:"  # Danish, Norwegian, Swedish
    r")\s*$",
    re.IGNORECASE,
)
"""Attribution lines that are never the player's own words."""

_WEAK_ATTRIBUTION = re.compile(
    r"^\s*(?:\S.{0,200}\b(?:wrote|schrieb|a\s+écrit|writes)|(?:quoting|zitat\s+von|citation\s+de)\s.{0,200})\s*:\s*$",
    re.IGNORECASE,
)
"""``Name <addr> wrote:`` without a date: dropped only when a ``>`` quote follows,
since a player may well write "Here is what I wrote:" and go on."""

_ATTRIBUTION_START = re.compile(r"^\s*(?:on|am|le|op|el|il|em|den)\s", re.IGNORECASE)
"""How a wrapped attribution's first line begins."""

_SEPARATOR = re.compile(
    r"^\s*(?:-{2,}\s*(?:original\s+message|ursprüngliche\s+nachricht|original-nachricht|message\s+d'origine"
    r"|message\s+original|mensaje\s+original|oorspronkelijk\s+bericht|messaggio\s+originale"
    r"|forwarded\s+message|weitergeleitete\s+nachricht|message\s+transféré)\s*-{2,}"
    r"|begin\s+forwarded\s+message\s*:|anfang\s+der\s+weitergeleiteten\s+nachricht\s*:"
    r"|début\s+du\s+message\s+réexpédié\s*:)\s*$",
    re.IGNORECASE,
)

_UNDERSCORES = re.compile(r"^\s*_{8,}\s*$")
_HEADER_FROM = re.compile(r"^\s*\*?(?:from|von|de|van|da|från|fra)\s*:\*?\s*\S", re.IGNORECASE)
_HEADER_OTHER = re.compile(
    r"^\s*\*?(?:sent|date|to|cc|subject|gesendet|datum|an|betreff|envoyé|à|objet|verzonden|aan|onderwerp"
    r"|enviado|fecha|para|asunto|inviato|oggetto|skickat|till|ämne)\s*:",
    re.IGNORECASE,
)

_FOOTER = re.compile(
    r"^\s*(?:sent\s+(?:from|with|via)\s+(?:my\s+)?\S.{0,50}"
    r"|get\s+outlook\s+for\s+\S.{0,30}"
    r"|von\s+meinem\s+\S.{0,50}\bgesendet.{0,30}|gesendet\s+von\s+(?:meinem\s+)?\S.{0,50}"
    r"|envoyé\s+(?:de|depuis)\s+(?:mon\s+)?\S.{0,50}|obtenir\s+outlook\s+pour\s+\S.{0,30}"
    r"|verzonden\s+(?:vanaf|met)\s+(?:mijn\s+)?\S.{0,50}|verstuurd\s+vanaf\s+(?:mijn\s+)?\S.{0,50}"
    r"|enviado\s+desde\s+(?:mi\s+)?\S.{0,50}|inviato\s+da\s+\S.{0,50})\s*$",
    re.IGNORECASE,
)
"""Footers that mobile and webmail clients add under the reply."""

_FOOTER_DEVICE = re.compile(
    r"iphone|ipad|android|samsung|galaxy|pixel|mobile|phone|handy|outlook|mail|blackberry|huawei|xiaomi|proton"
    r"|tuta|yahoo|smartphone|tablet|ios\b",
    re.IGNORECASE,
)
"""A footer must name a device or mail program: "Sent from my desk at work" is prose."""


def _is_quote(line: str) -> bool:
    return line.lstrip().startswith(">")


def _is_signature(line: str) -> bool:
    return line.rstrip() == "--"


def _is_footer(line: str) -> bool:
    return bool(_FOOTER.match(line)) and bool(_FOOTER_DEVICE.search(line))


def _attribution_length(lines: list[str], i: int) -> int:
    """How many lines (1 to 3) an attribution starting at ``lines[i]`` spans; 0 if none.

    Attributions that only a following quote makes certain are counted here too;
    the caller decides by what follows."""
    if _STRONG_ATTRIBUTION.match(lines[i]) or _WEAK_ATTRIBUTION.match(lines[i]):
        return 1
    if not _ATTRIBUTION_START.match(lines[i]):
        return 0
    joined = lines[i].strip()
    for extra in (1, 2):
        if i + extra >= len(lines) or not lines[i + extra].strip() or _is_quote(lines[i + extra]):
            return 0
        joined += " " + lines[i + extra].strip()
        if _STRONG_ATTRIBUTION.match(joined):
            return 1 + extra
    return 0


def _is_strong(lines: list[str], i: int, span: int) -> bool:
    return bool(_STRONG_ATTRIBUTION.match(" ".join(line.strip() for line in lines[i : i + span])))


def _next_content(lines: list[str], i: int) -> int:
    """Index of the first non-blank line at or after ``i`` (``len(lines)`` if none)."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i


def _starts_header_block(lines: list[str], i: int) -> bool:
    """``lines[i]`` is "From: …" and at least two of the next five lines are other
    header fields ("Sent:", "To:", "Subject:", …): the unquoted original that
    Outlook and others put under a top-posted reply."""
    if i >= len(lines) or not _HEADER_FROM.match(lines[i]):
        return False
    following = [line for line in lines[i + 1 : i + 12] if line.strip()][:5]  # HTML turned to text may space them
    return sum(1 for line in following if _HEADER_OTHER.match(line)) >= 2


def own_text(body: str) -> str:
    """The sender's own words in ``body``: quotes, attributions, the original mail
    that top-posting clients append, signatures and mobile footers removed; text
    after a quote kept (bottom-posted replies); runs of blank lines collapsed to one;
    stripped.  See the module docstring for the exact rules."""
    lines = body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _is_signature(line) or _is_footer(line) or _SEPARATOR.match(line):
            break
        if _is_quote(line):
            i += 1
            continue
        if _UNDERSCORES.match(line) and _starts_header_block(lines, _next_content(lines, i + 1)):
            break
        if _starts_header_block(lines, i):
            break
        span = _attribution_length(lines, i)
        if span:
            after = _next_content(lines, i + span)
            if after < len(lines) and _is_quote(lines[after]):
                i = after  # drop the attribution; the quote is skipped line by line
                continue
            if _is_strong(lines, i, span):
                break  # an unquoted original follows (or nothing does)
        out.append(line.rstrip())
        i += 1
    text = "\n".join(out).strip("\n")
    return re.sub(r"\n(?:[ \t]*\n){2,}", "\n\n", text).strip()
