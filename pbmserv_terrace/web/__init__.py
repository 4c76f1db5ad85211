"""The read-only web archive of the server (issue 19): boards, players, standings,
help and Atom feeds, served by uvicorn; ``serve`` runs it in a process of its own
beside the mail loop (:mod:`.process`, issue 36), ``pbmserv-terrace web`` alone.

    app = create_app(db, server_name="PBM Server", public_url="https://example.test")
    await serve_web(app, "127.0.0.1", 8080, stop=stop_event)
"""

from .app import create_app, listen_socket, serve_web

__all__ = ["create_app", "listen_socket", "serve_web"]
