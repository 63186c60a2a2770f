"""`gnmt-tf translate --plot-attention DIR`: heatmaps of the first lines.

For each of the first `count` non-blank input lines, the best translation
is forced through the model again (`gnmt_tf.attention_maps`) and its
attention drawn to `DIR/attention_<line>.png` (`gnmt_tf.plots`), with
`<line>` the 1-based input line number.
"""

import pathlib


class AttentionPlots:
    """Writes attention heatmaps as translations come in, up to `count`.

    Args:
      directory: str or Path; created if missing.
      count: int. Heatmaps to write at most.

    Raises:
      UsageError: matplotlib is not installed (checked at once).
      OSError: `directory` cannot be made.
    """

    def __init__(self, directory, count):
        from gnmt_tf.plots import new_figure

        new_figure(1, 1)  # fail before any translation without matplotlib
        self.directory = pathlib.Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.count = count
        self.written = []

    def add(self, translator, sentences, results, first, **task):
        """Draws the lines of a chunk (`first`: 0-based index of its first
        line) while fewer than `count` are written; `results` are the
        translator's n-best lists, best first."""
        from gnmt_tf.attention_maps import attention_maps
        from gnmt_tf.plots import plot_attention

        for index, (sentence, hypotheses) in enumerate(
                zip(sentences, results), first):
            if len(self.written) >= self.count:
                return
            if not sentence.strip():
                continue
            [attention] = attention_maps(translator, [sentence],
                                         [hypotheses[0].text], **task)
            line = index + 1
            self.written.append(plot_attention(
                attention, self.directory / f"attention_{line:05d}.png",
                title=f"line {line}: {sentence[:60]}"))
