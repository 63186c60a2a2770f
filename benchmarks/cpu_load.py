"""How much CPU other processes took while a benchmark ran.

Speed figures are comparable only when nothing else runs: on two cores, a
second busy process can slow one engine much more than another (two
engines' thread pools share a busy core differently), so a ratio between
them moves with the machine's load. `OtherLoad` measures that load over an
interval: the machine's busy CPU time (``/proc/stat``) less this
process's own, its waited-for children included (`os.times`), as a share
of the interval's capacity (wall time x the CPUs /proc/stat counts). Time
the hypervisor gave to other guests (steal) is reported on its own.

Linux only (elsewhere the shares are None). Written here because it is two
reads of the standard library; psutil offers the same but is not a
dependency of the project.
"""

import os
import time

# /proc/stat's cpu line: user nice system idle iowait irq softirq steal ...
BUSY_FIELDS = (0, 1, 2, 5, 6)
STEAL_FIELD = 7
# A share above this means the figures were taken on a busy machine.
BUSY_WARNING = 0.05


def _proc_stat_seconds():
    """`(busy, steal, cpus)`: CPU seconds of the whole machine since boot
    and the number of CPUs they are summed over, or None where
    ``/proc/stat`` cannot be read."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    values = [int(v) for v in lines[0].split()[1:]]
    busy = sum(values[i] for i in BUSY_FIELDS)
    steal = values[STEAL_FIELD] if len(values) > STEAL_FIELD else 0
    cpus = sum(1 for line in lines[1:] if line.startswith("cpu"))
    return busy / ticks, steal / ticks, max(cpus, 1)


def _own_seconds():
    """CPU seconds of this process and its waited-for children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class OtherLoad:
    """A context manager: on exit, `other_share` and `steal_share` hold the
    CPU share other processes and other guests took during the block
    (0.0 = idle machine; None where unknown)."""

    def __init__(self):
        self.other_share = None
        self.steal_share = None

    def __enter__(self):
        self._start = (time.monotonic(), _own_seconds(), _proc_stat_seconds())
        return self

    def __exit__(self, *exc):
        wall0, own0, stat0 = self._start
        stat1 = _proc_stat_seconds()
        if stat0 is None or stat1 is None:
            return False
        capacity = (time.monotonic() - wall0) * stat1[2]
        if capacity <= 0:
            return False
        other = (stat1[0] - stat0[0]) - (_own_seconds() - own0)
        self.other_share = round(max(other, 0.0) / capacity, 3)
        self.steal_share = round((stat1[1] - stat0[1]) / capacity, 3)
        return False

    def busy(self):
        """Whether other processes or guests took more than
        `BUSY_WARNING` of the CPU."""
        return any(share is not None and share > BUSY_WARNING
                   for share in (self.other_share, self.steal_share))
