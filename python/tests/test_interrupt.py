"""A long check releases the GIL (other Python threads run) and stops cleanly on Ctrl-C:
KeyboardInterrupt comes out of numfid.check within a poll interval of the signal, and the
module works normally afterwards."""

import _thread
import os
import signal
import threading
import time

import numpy as np
import pytest

import numfid

N = 1024  # a 1024^3 bf16 matmul: tens of seconds of exact accumulation, far beyond the test's wait


@pytest.fixture(scope="module")
def big():
    # Magnitudes spread over 2^-40..2^40: the terms of a dot product span far more than fp64's
    # 53 bits, so the exact oracle's certified fp64 GEMM cannot prove any element and every one
    # goes through the long accumulator (tolerances/reference_fast.cpp) -- the check stays long
    # however fast the machine, which these tests need.
    rng = np.random.default_rng(7)

    def spread(shape):
        return rng.standard_normal(shape) * np.exp2(rng.integers(-40, 41, size=shape).astype(np.float64))

    a = numfid.convert(spread((N, N)), "bf16")
    b = numfid.convert(spread((N, N)), "bf16")
    return a, b, numfid.convert(a.astype(np.float64) @ b, "bf16")


def run_interrupted(big, interrupt):
    a, b, c = big
    timer = threading.Timer(0.5, interrupt)
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            numfid.check_matmul(a, b, c, "--in bf16 --acc fp32 --out bf16")
    finally:
        timer.cancel()
    return time.monotonic() - start


def test_interrupt_main_stops_a_long_check(big):
    elapsed = run_interrupted(big, _thread.interrupt_main)
    assert elapsed < 5, f"the check went on for {elapsed:.1f} s after the interrupt"


def test_sigint_stops_a_long_check(big):
    elapsed = run_interrupted(big, lambda: os.kill(os.getpid(), signal.SIGINT))
    assert elapsed < 5, f"the check went on for {elapsed:.1f} s after SIGINT"
    # The module is usable afterwards: a small check gives its normal verdict.
    a, b = big[0][:8, :16], big[1][:16, :4]
    c = numfid.emulate("matmul", "--in bf16 --plan sequential --out bf16", a=a, b=b)
    assert numfid.check_matmul(a, b, c, "--in bf16 --acc fp32 --out bf16").verdict == "consistent"


def test_the_gil_is_released_during_a_check(big):
    # A counter thread ticks about once per millisecond while it holds the GIL for a moment each
    # time; were the GIL held through the check, it could not tick at all until the check ended.
    # Judged against the check's own duration (not a fixed wait that a faster machine or a faster
    # oracle could outrun): at least 5 % of its free rate.
    a, b, c = big
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.01)  # the counter is running
    before = len(ticks)
    start = time.monotonic()
    try:
        numfid.check_matmul(a[:256], b, c[:256], "--in bf16 --acc fp32 --out bf16")
    finally:
        elapsed = time.monotonic() - start
        during = len(ticks) - before
        stop.set()
        t.join()
    assert elapsed > 0.05, f"the check took {elapsed:.3f} s: too short to tell"
    want = max(10, 0.05 * elapsed / 0.001)
    assert during >= want, f"another Python thread ran only {during} times during a {elapsed:.2f} s check (want {want:.0f})"


def test_checks_run_in_worker_threads(big):
    # From a thread other than the main one (where Python runs no signal handlers) the poll
    # finds nothing to do; concurrent checks give the single-threaded results.
    a, b = big[0][:32, :256], big[1][:256, :16]
    c = numfid.emulate("matmul", "--in bf16 --plan sequential --out bf16", a=a, b=b)
    want = numfid.check_matmul(a, b, c, "--in bf16 --acc fp32 --out bf16").to_json()
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        numfid.check_matmul(a, b, c, "--in bf16 --acc fp32 --out bf16").to_json())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [want] * 4
