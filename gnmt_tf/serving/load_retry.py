"""When to try loading a model version again after a failed load.

TF Serving's rule is to serve a version once it is complete. Exporters should
write a version elsewhere and rename it into place, but a slow copy (a network
copy writing `saved_model.pb` first and `variables/` seconds later) shows the
server a version folder that fails to load for a while. So a failed version is
retried with exponential back-off (`initial_s`, doubling, at most `max_s`),
and at once when its files have changed since the last attempt and then stayed
the same for one poll (the copy has finished). With `max_attempts`, it gives
up after that many failures in a row, until its files change.

    retry = LoadRetry(initial_s=1.0, max_s=60.0)
    fingerprint = folder_fingerprint(path)
    if retry.should_try(fingerprint, time.monotonic()):
        retry.started(fingerprint)
        ...  # on failure: delay = retry.failed(time.monotonic())
"""

import os
from typing import Optional, Tuple


def folder_fingerprint(path: str) -> Tuple:
    """`(relative path, size, mtime_ns)` of everything under `path`, sorted;
    `()` if `path` is missing. Changes whenever a file is added, removed,
    grown or rewritten."""
    entries = []
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            full = os.path.join(root, name)
            try:
                stat = os.stat(full)
            except OSError:  # removed while we looked
                continue
            entries.append((os.path.relpath(full, path), stat.st_size,
                            stat.st_mtime_ns))
    return tuple(sorted(entries))


class LoadRetry:
    """Back-off and change detection for one version's load attempts.

    Args:
      initial_s: float. Delay after the first failure.
      max_s: float. Longest delay between attempts.
      max_attempts: int or None. Failures in a row (files unchanged) before
        giving up; None retries for as long as the version is wanted.
    """

    def __init__(self, initial_s: float = 1.0, max_s: float = 60.0,
                 max_attempts: Optional[int] = None):
        self.initial_s = initial_s
        self.max_s = max_s
        self.max_attempts = max_attempts
        self.attempts = 0        # in all
        self.failures = 0        # in a row since the files last changed
        self.next_try = 0.0      # time.monotonic() of the next due attempt
        self.gave_up = False
        self._tried = None       # fingerprint at the last attempt
        self._seen = None        # fingerprint at the last poll

    def should_try(self, fingerprint, now: float) -> bool:
        """Whether to attempt a load now; call once per poll."""
        settled = fingerprint == self._seen
        self._seen = fingerprint
        if self.attempts == 0:
            return True
        if fingerprint != self._tried and settled:
            self.failures, self.gave_up = 0, False  # new files: fresh budget
            return True
        return not self.gave_up and now >= self.next_try

    def started(self, fingerprint):
        """An attempt starts on files with this fingerprint."""
        self.attempts += 1
        self._tried = fingerprint

    def failed(self, now: float) -> Optional[float]:
        """The attempt failed: seconds until the next one (None: given up)."""
        self.failures += 1
        if self.max_attempts is not None and self.failures >= self.max_attempts:
            self.gave_up = True
            return None
        delay = min(self.max_s, self.initial_s * 2 ** (self.failures - 1))
        self.next_try = now + delay
        return delay
