"""A hint through the real ``serve`` (issue 36): the request's mail is answered by
nothing but the hint, which the robots' worker pool computes after the request
has committed, in a transaction of its own."""

from __future__ import annotations

import re
from pathlib import Path

from .test_sender_process import Serve, replies, wait_for


def test_a_hint_comes_from_the_worker_pool_as_one_mail(tmp_path: Path) -> None:
    serve = Serve(tmp_path)
    try:
        serve.mail("ann@home.test", "signup ann pw-ann")
        wait_for(lambda: len(replies(tmp_path, "ann@home.test")) == 1, "ann's welcome")
        serve.mail("ann@home.test", "patience new ann pw-ann -terrace --deal=4")
        wait_for(lambda: len(replies(tmp_path, "ann@home.test")) == 2, "the new deal")
        serve.mail("ann@home.test", "patience hint 101 ann pw-ann")
        wait_for(lambda: any(s.endswith(" hint") for s in replies(tmp_path, "ann@home.test")), "the hint")
        serve.mail("ann@home.test", "patience show 101")  # after the hint: all that came before it is in
        wait_for(lambda: len(replies(tmp_path, "ann@home.test")) == 4, "the table")
    finally:
        assert serve.stop() == 0
    subjects = replies(tmp_path, "ann@home.test")  # welcome, new deal, hint, table
    assert [s for s in subjects if "Patience Board 101" in s] == ["New Patience Board 101 ann", "Patience Board 101 ann",
                                                                "Patience Board 101 ann hint"]  # fmt: skip
    log = serve.log.read_text()
    asked = re.search(r"command=patience hint result=ok(: [^ ]*)? replies=0", log)
    assert asked is not None, log  # the request's own transaction answers nothing
    assert "command=patience hint answer result=ok" in log, log
    assert "Traceback" not in log, log
