"""Pictures of training and translation: curves and attention heatmaps.

matplotlib is optional (`pip install 'gnmt-tf[plot]'`); without it these
functions raise a `UsageError` that says so. Figures are drawn with
matplotlib's object API on the Agg canvas, never through `pyplot`, so
plotting needs no display and leaves the caller's matplotlib backend
alone. Files are written atomically (`gnmt_tf.io_utils.atomic_path`).

Example:
```python
from gnmt_tf.training.metrics_log import read_metrics

plot_training_curves(read_metrics("runs/en_de"), "curves.png")
```
"""

import collections
import pathlib

from gnmt_tf.errors import UsageError
from gnmt_tf.io_utils import atomic_path

# Panels of the training curves: (title, [(split, metric)], y scale).
CURVE_PANELS = (
    ("loss", [("train", "loss"), ("validation", "loss")], "linear"),
    ("validation BLEU", [("validation", "bleu")], "linear"),
    ("learning rate", [("train", "learning_rate")], "log"),
    ("target tokens/s", [("train", "target_tokens_per_s")], "linear"),
)


def new_figure(width, height):
    """A matplotlib `Figure` (Agg) of `width` x `height` inches.

    Raises:
      UsageError: matplotlib is not installed.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise UsageError("plotting needs matplotlib: pip install "
                         "'gnmt-tf[plot]' (or matplotlib)") from None
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def save_figure(figure, path, dpi=100):
    """Writes `figure` to `path`; the format is the path's suffix (.png,
    .pdf, .svg; png without one)."""
    path = pathlib.Path(path)
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format=path.suffix[1:].lower() or "png", dpi=dpi)
    return path


def plot_training_curves(rows, path, title=None):
    """Draws the curves of `metrics.csv` rows, one panel per quantity
    (those without data are left out).

    Args:
      rows: `gnmt_tf.training.metrics_log.MetricRow`s.
      path: str or Path of the picture.
      title: str or None.

    Raises:
      ValueError: no rows to draw.
      UsageError: matplotlib is not installed.
    """
    series = collections.defaultdict(list)
    for row in rows:
        series[row.split, row.metric].append((row.step, row.value))
    panels = [(name, [(key, series[key]) for key in keys if series.get(key)],
               scale) for name, keys, scale in CURVE_PANELS]
    panels = [panel for panel in panels if panel[1]]
    if not panels:
        raise ValueError("no training metrics to plot")
    columns = 2 if len(panels) > 1 else 1
    rows_of_panels = -(-len(panels) // columns)
    figure = new_figure(6 * columns, 3.5 * rows_of_panels)
    axes = figure.subplots(rows_of_panels, columns, squeeze=False).ravel()
    for ax, (name, curves, scale) in zip(axes, panels):
        for (split, _), points in curves:
            points.sort()
            steps, values = zip(*points)
            ax.plot(steps, values, marker="o" if len(points) < 30 else None,
                    markersize=3, label=split)
        ax.set_title(name)
        ax.set_xlabel("step")
        ax.set_yscale(scale)
        ax.grid(True, alpha=0.3)
        if len(curves) > 1:
            ax.legend()
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    if title:
        figure.suptitle(title)
    return save_figure(figure, path)


def plot_attention(attention_map, path, title=None):
    """Draws an `gnmt_tf.attention_maps.AttentionMap` as a heatmap: source
    tokens across, output tokens down.

    Raises:
      UsageError: matplotlib is not installed.
    """
    source, target = attention_map.source_tokens, attention_map.target_tokens
    figure = new_figure(max(4.0, 0.35 * len(source) + 2),
                        max(3.0, 0.35 * len(target) + 1.5))
    ax = figure.subplots()
    image = ax.imshow(attention_map.weights, cmap="viridis", vmin=0.0,
                      aspect="auto")
    # parse_math=False: a "$" in a subword is text, not a formula.
    ax.set_xticks(range(len(source)), source, rotation=90, parse_math=False)
    ax.set_yticks(range(len(target)), target, parse_math=False)
    ax.set_xlabel("source")
    ax.set_ylabel("output")
    figure.colorbar(image, ax=ax, fraction=0.05)
    if title:
        ax.set_title(title, fontsize=9, parse_math=False)
    return save_figure(figure, path)
