"""Running mails side by side without changing what they mean (pbmserv_terrace.app.ordering)
and which mails may run side by side (Service.conflict_keys)."""

from __future__ import annotations

import asyncio
import random

from pbmserv_terrace.app.ordering import KeyedRunner
from pbmserv_terrace.inbound import InboundMail
from pbmserv_terrace.service import Service


def mail(subject: str, sender: str = "ann@x.test", body: str = "") -> InboundMail:
    return InboundMail(sender=sender, subject=subject, body=body, message_id="<1@x>")


def test_conflict_keys_of_board_commands_and_barriers():
    keys = Service.conflict_keys(mail("terrace move 0101 Ann pw d2-e3"))
    assert keys == frozenset({"from:ann@x.test", "board:terrace:101", "user:ann"})
    assert Service.conflict_keys(mail("Re: terrace6x6 chat 7 bob pw", sender="Bob@X.test")) == frozenset(
        {"from:bob@x.test", "board:terrace6x6:7", "user:bob"}
    )
    # anything that may touch more than its board runs alone
    for subject in ("terrace challenge ann pw-ann bob", "signup ann pw", "terrace show 101", "terrace move ann pw 101 d2-e3"):
        assert Service.conflict_keys(mail(subject)) is None, subject
    assert Service.conflict_keys(mail("multiple", body="terrace move 101 ann pw d2-e3\nsignup x y\n")) is None
    # nothing readable (plain words get the short help): only the sender
    assert Service.conflict_keys(mail("hello there")) == frozenset({"from:ann@x.test"})


def test_same_key_in_order_disjoint_keys_at_once_barriers_alone():
    async def run() -> tuple[list[tuple[str, int, str]], int]:
        runner = KeyedRunner(limit=4)
        log: list[tuple[str, int, str]] = []
        running: set[int] = set()
        peak = 0
        rng = random.Random(7)
        plan: list[tuple[int, frozenset[str] | None]] = []
        for i in range(60):
            if i % 13 == 12:
                plan.append((i, None))
            else:
                plan.append((i, frozenset({f"board:{rng.randrange(5)}", f"user:{rng.randrange(7)}"})))
        active_keys: dict[str, int] = {}

        def job(i: int, keys: frozenset[str] | None):
            async def go() -> int:
                nonlocal peak
                # nobody that shares a key (or a barrier) runs beside this one
                assert keys is not None or not running, (i, running)
                assert all(active_keys.get(k) is None for k in keys or ()), (i, active_keys)
                assert None not in {plan[j][1] for j in running}
                running.add(i)
                for k in keys or ():
                    active_keys[k] = i
                peak = max(peak, len(running))
                log.append(("start", i, ""))
                await asyncio.sleep(rng.uniform(0, 0.003))
                running.discard(i)
                for k in keys or ():
                    active_keys.pop(k, None)
                log.append(("end", i, ""))
                return i

            return go

        tasks = [runner.submit(keys, job(i, keys)) for i, keys in plan]
        assert [await t for t in tasks] == list(range(60))
        await runner.wait_idle()
        assert runner.in_flight == 0
        return log, peak

    log, peak = asyncio.run(run())
    starts = [i for kind, i, _ in log if kind == "start"]
    plan_keys = {}
    rng = random.Random(7)
    for i in range(60):
        plan_keys[i] = None if i % 13 == 12 else frozenset({f"board:{rng.randrange(5)}", f"user:{rng.randrange(7)}"})
    # mails sharing a key start in submission order; a barrier starts after all before it
    for a in range(60):
        for b in range(a + 1, 60):
            ka, kb = plan_keys[a], plan_keys[b]
            if ka is None or kb is None or ka & kb:
                assert starts.index(a) < starts.index(b), (a, b)
    assert 1 < peak <= 4  # some ran side by side, never more than the limit


def test_before_runs_outside_the_limit_and_errors_do_not_block_later_mails():
    async def run() -> list[str]:
        runner = KeyedRunner(limit=1)
        seen: list[str] = []
        gate = asyncio.Event()

        async def waiting() -> None:
            seen.append("before-1")
            await gate.wait()

        async def fail() -> str:
            raise RuntimeError("boom")

        async def ok(name: str) -> str:
            seen.append(name)
            return name

        t1 = runner.submit({"a"}, lambda: ok("one"), before=waiting)
        t2 = runner.submit({"b"}, lambda: ok("two"))
        t3 = runner.submit({"c"}, fail)
        t4 = runner.submit({"c"}, lambda: ok("four"))
        assert await t2 == "two"  # not held up by t1 waiting in `before`
        results = await asyncio.gather(t3, t4, return_exceptions=True)
        assert isinstance(results[0], RuntimeError) and results[1] == "four"  # a failed job releases its keys
        gate.set()
        assert await t1 == "one"
        return seen

    assert asyncio.run(run()) == ["before-1", "two", "four", "one"]


def test_a_job_behind_an_earlier_one_says_so_at_once() -> None:
    """``blocked`` (serve's group commit then stops waiting for that mail) is called
    when the job has earlier jobs to wait for, and only then."""

    async def run() -> list[str]:
        runner = KeyedRunner(limit=4)
        gate = asyncio.Event()
        said: list[str] = []

        async def slow() -> str:
            await gate.wait()
            return "slow"

        async def quick() -> str:
            return "quick"

        first = runner.submit({"board:1"}, slow, blocked=lambda: said.append("first"))
        other = runner.submit({"board:2"}, quick, blocked=lambda: said.append("other"))
        behind = runner.submit({"board:1", "user:x"}, quick, blocked=lambda: said.append("behind"))
        barrier = runner.submit(None, quick, blocked=lambda: said.append("barrier"))
        assert said == ["behind", "barrier"]
        gate.set()
        assert await asyncio.gather(first, other, behind, barrier) == ["slow", "quick", "quick", "quick"]
        return said

    assert asyncio.run(run()) == ["behind", "barrier"]
