"""Stopping a document's translation once nobody waits for it.

A `Cancellation` is shared by whoever serves the request (the gateway
cancels it when the client disconnects) and `pipeline.Pipeline`, which
checks it between calls to the model: work stops within one batch of the
client going away or the deadline passing.

    cancellation = Cancellation(timeout_s=60)
    pipeline.translate_document(doc, "auto", "de", cancellation=cancellation)
    # elsewhere, when the client disconnects:
    cancellation.cancel()
"""

import time
from typing import Optional


class Cancelled(RuntimeError):
    """The request was cancelled (its client went away)."""


class DeadlineExceeded(Cancelled):
    """The request ran past its deadline."""


class Cancellation:
    """A request's deadline and whether it is still wanted.

    Args:
      timeout_s: float or None. The request's time budget from now (None:
        no deadline).
    """

    def __init__(self, timeout_s: Optional[float] = None):
        if timeout_s is not None and not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        self.timeout_s = timeout_s
        self.deadline = (None if timeout_s is None
                         else time.monotonic() + timeout_s)
        self._reason: Optional[str] = None

    def cancel(self, reason: str = "the client went away") -> None:
        """Marks the request abandoned; the next `check` raises."""
        if self._reason is None:
            self._reason = reason

    @property
    def cancelled(self) -> bool:
        return self._reason is not None

    def time_left(self) -> Optional[float]:
        """Seconds to the deadline (0 once passed), or None."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def check(self) -> None:
        """Raises `Cancelled` or `DeadlineExceeded` when the work should
        stop."""
        if self._reason is not None:
            raise Cancelled(self._reason)
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise DeadlineExceeded(
                f"the request took longer than its {self.timeout_s:g} s "
                "deadline")
