"""The archive's URL table: which handler answers which path.  It imports the handler
modules; they import only :mod:`.site`, never this or :mod:`.app`, so the graph has no
cycle and nothing is imported late.

Board numbers are per game type, so the type is part of a board's address;
``/boards/N`` redirects to the default type.
"""

from __future__ import annotations

from pathlib import Path

from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from . import feeds, ical, pages, play
from .tournaments import tournament_feed, tournament_list, tournament_page

STATIC_DIR = Path(__file__).resolve().parent / "static"


def routes() -> list[BaseRoute]:
    """A fresh route list (each app gets its own static files mount)."""
    return [
        Route("/", pages.home),
        Route("/help", pages.help_page),
        Route("/standings", pages.standings),
        Route("/standings/{game_type}", pages.standings_of_type),
        Route("/healthz", pages.healthz),
        Route("/boards/{number:int}", pages.board_redirect),
        Route("/boards/{number:int}.txt", pages.board_redirect),
        Route("/boards/{number:int}/feed.atom", pages.board_redirect),
        Route("/boards/{game_type}/{number:int}", pages.board),
        Route("/boards/{game_type}/{number:int}.txt", feeds.board_text),
        Route("/boards/{game_type}/{number:int}/feed.atom", feeds.board_feed),
        Route("/boards/{game_type}/{number:int}/picture.png", pages.board_picture),
        Route("/players/{userid}", pages.player),
        Route("/players/{userid}/feed.atom", feeds.player_feed),
        Route("/players/{userid}/deadlines.ics", ical.deadlines),
        Route("/tournaments", tournament_list),
        Route("/tournaments/{number:int}", tournament_page),
        Route("/tournaments/{number:int}/feed.atom", tournament_feed),
        # the play page (issue 39): every method reaches it, so a wrong one gets its no-referrer 405
        Route("/play/{key}", play.play, methods=["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]),
        Mount("/static", app=StaticFiles(directory=str(STATIC_DIR)), name="static"),
    ]
