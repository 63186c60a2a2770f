"""`metrics.csv`: the numbers of a training run, kept in its model directory.

One row per number, so new metrics need no new columns::

    step,split,metric,value
    100,train,loss,4.1034
    100,train,learning_rate,0.0005
    100,train,target_tokens_per_s,5321.4
    500,validation,loss,3.2012
    500,validation,bleu,12.31

Every append rewrites the file through `gnmt_tf.io_utils.write_text_atomic`,
so a kill never leaves half a row. A resumed run first drops the rows after
the step it resumes from (`MetricsLog.truncate_after`): those steps are
trained again and logged anew. `gnmt-tf plot` draws the curves from it.

Example:
```python
log = MetricsLog("runs/en_de/metrics.csv")
log.append(500, "validation", {"loss": 3.2})
[row.value for row in read_metrics("runs/en_de") if row.metric == "loss"]
```
"""

import csv
import dataclasses
import io
import pathlib

from gnmt_tf.io_utils import write_text_atomic

METRICS_FILE = "metrics.csv"
FIELDS = ("step", "split", "metric", "value")


@dataclasses.dataclass(frozen=True)
class MetricRow:
    """One number: `metric` ("loss", "bleu", ...) of `split` ("train" or
    "validation") at optimizer step `step`."""

    step: int
    split: str
    metric: str
    value: float


def metrics_path(path) -> pathlib.Path:
    """`path` itself if it is a file name, else `path/metrics.csv`."""
    path = pathlib.Path(path)
    return path if path.suffix == ".csv" else path / METRICS_FILE


def read_metrics(path) -> list:
    """The `MetricRow`s of a model directory (or a metrics file), in file
    order; `[]` when there is no file yet.

    Raises:
      ValueError: the file is not a metrics file (names the bad line).
    """
    path = metrics_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None:
        return []
    if tuple(reader.fieldnames) != FIELDS:
        raise ValueError(f"{path}: expected the columns {','.join(FIELDS)}, "
                         f"got {','.join(reader.fieldnames)}")
    rows = []
    for line, row in enumerate(reader, 2):
        try:
            rows.append(MetricRow(int(row["step"]), row["split"],
                                  row["metric"], float(row["value"])))
        except (TypeError, ValueError):
            raise ValueError(f"{path}, line {line}: not a step,split,metric,"
                             f"value row: {row}") from None
    return rows


class MetricsLog:
    """Appends rows to a metrics file, atomically (see the module doc).

    Args:
      path: str or Path. The file (a model directory's `metrics.csv`).
    """

    def __init__(self, path):
        self.path = metrics_path(path)
        self.rows = read_metrics(self.path)

    def truncate_after(self, step):
        """Drops the rows after `step` (the step a resumed run starts at)."""
        kept = [row for row in self.rows if row.step <= step]
        if len(kept) != len(self.rows):
            self.rows = kept
            self._write()

    def append(self, step, split, values):
        """Adds one row per `{metric: value}` item at `step`."""
        self.rows.extend(MetricRow(int(step), split, name, float(value))
                         for name, value in values.items())
        self._write()

    def _write(self):
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(FIELDS)
        for row in self.rows:
            writer.writerow([row.step, row.split, row.metric,
                             repr(row.value)])
        write_text_atomic(self.path, out.getvalue())
