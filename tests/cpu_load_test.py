"""benchmarks/cpu_load.py: the CPU share other processes take during a
benchmark's round."""

import os
import subprocess
import sys
import time

import pytest

from benchmark_scripts import load_benchmark

cpu_load = load_benchmark("cpu_load")

linux_only = pytest.mark.skipif(not os.path.exists("/proc/stat"),
                                reason="reads /proc/stat")


def _fake_counters(monkeypatch, wall, own, stat):
    """Makes the clock, own CPU time and /proc/stat return these
    sequences (start, end)."""
    for name, values in (("monotonic", wall), ("own", own),
                         ("stat", stat)):
        values = list(values)
        if name == "monotonic":
            monkeypatch.setattr(cpu_load.time, "monotonic",
                                lambda v=values: v.pop(0))
        elif name == "own":
            monkeypatch.setattr(cpu_load, "_own_seconds",
                                lambda v=values: v.pop(0))
        else:
            monkeypatch.setattr(cpu_load, "_proc_stat_seconds",
                                lambda v=values: v.pop(0))


def test_other_share_is_the_busy_time_not_ours(monkeypatch):
    # 2 s on 2 cores: 4 CPU seconds; the machine was busy 3.0, we used
    # 1.0 of them, 0.4 was stolen by other guests.
    _fake_counters(monkeypatch, wall=[10.0, 12.0], own=[5.0, 6.0],
                   stat=[(100.0, 1.0, 2), (103.0, 1.4, 2)])
    with cpu_load.OtherLoad() as load:
        pass
    assert load.other_share == 0.5
    assert load.steal_share == 0.1
    assert load.busy()


def test_an_idle_machine_is_not_busy(monkeypatch):
    _fake_counters(monkeypatch, wall=[0.0, 10.0], own=[0.0, 19.5],
                   stat=[(0.0, 0.0, 2), (19.7, 0.0, 2)])
    with cpu_load.OtherLoad() as load:
        pass
    assert load.other_share == pytest.approx(0.01)
    assert load.steal_share == 0.0
    assert not load.busy()


def test_unknown_without_proc_stat(monkeypatch):
    monkeypatch.setattr(cpu_load, "_proc_stat_seconds", lambda: None)
    with cpu_load.OtherLoad() as load:
        pass
    assert (load.other_share, load.steal_share) == (None, None)
    assert not load.busy()


@linux_only
def test_a_busy_process_beside_us_is_seen():
    # A process this one does not wait for spins one core for the whole
    # interval: at least about half of two cores' capacity goes to others
    # (more if the machine is busier still; never less).
    spinner = subprocess.Popen([sys.executable, "-c",
                                "import time\nend = time.time() + 30\n"
                                "while time.time() < end: pass"])
    try:
        time.sleep(0.3)  # the interpreter has started spinning
        with cpu_load.OtherLoad() as load:
            time.sleep(1.0)
    finally:
        spinner.kill()
        spinner.wait()
    cpus = cpu_load._proc_stat_seconds()[2]
    assert load.other_share >= 0.8 / cpus
    if 0.8 / cpus > cpu_load.BUSY_WARNING:
        assert load.busy()
