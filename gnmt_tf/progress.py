"""Progress bars (tqdm) on stderr, shown only when stderr is a terminal.

Piped or redirected, as in scripts, CI and tests, stderr gets no bar at
all, only the commands' own lines.

Example:
```python
for line in progress(lines, desc="translate", unit=" sentences"):
    ...
```
"""

import sys


def progress(iterable=None, **kwargs):
    """A `tqdm.tqdm` on stderr; disabled (a plain pass-through) when
    stderr is not a terminal. `kwargs` go to tqdm (`desc`, `total`,
    `unit`, ...)."""
    from tqdm import tqdm

    kwargs.setdefault("file", sys.stderr)
    kwargs.setdefault("dynamic_ncols", True)
    # disable=None: tqdm turns itself off where `file` is not a TTY.
    return tqdm(iterable, disable=None, **kwargs)
