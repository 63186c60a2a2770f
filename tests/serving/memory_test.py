import os
import threading

import numpy as np
import pytest

from serving.memory import can_release_memory
from serving.memory import release_free_memory


def _rss_mb():
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    pytest.skip("no /proc/self/status")


@pytest.mark.skipif(not can_release_memory(), reason="needs glibc")
def test_freed_memory_goes_back_to_the_os():
    kept = []

    def allocate():  # 256 MB in a thread's arena, its top block kept alive
        blocks = [np.ones(8192) for _ in range(4096)]
        kept.append(blocks[-1])

    thread = threading.Thread(target=allocate)
    thread.start()
    thread.join()
    freed = _rss_mb()
    assert release_free_memory()
    assert freed - _rss_mb() > 150, "the 256 MB freed stayed in the RSS"
    assert kept[0].sum() == 8192
