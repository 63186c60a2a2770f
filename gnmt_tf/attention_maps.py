"""Attention of a translation: where the decoder looked for each output token.

`attention_maps` runs a forced (teacher-forced) decoding pass of the model
over a chosen output, typically the translation the search returned: the
decoder is fed each target subword in turn, as in training, and the
attention its `step` returns (`Seq2SeqModel.step`: GNMT's additive
attention; the task-space Transformer's last-layer cross-attention, mean
over heads) is kept for each position. `gnmt_tf.plots.plot_attention` draws
the result as a heatmap.

The translation is re-encoded into subwords for the forced pass; for the
search's own output this gives the ids it chose (SentencePiece decoding
and encoding round-trip on normalised text).

Example:
```python
translator = Translator.from_model_dir("runs/en_de")
[translation] = translator.translate(["A dog runs."])
[att] = attention_maps(translator, ["A dog runs."], [translation])
att.weights.shape  # [len(att.target_tokens), len(att.source_tokens)]
```
"""

import dataclasses
from typing import List

import numpy as np
import tensorflow as tf

END_TOKEN = "</s>"


@dataclasses.dataclass(frozen=True)
class AttentionMap:
    """Attention weights of one sentence pair.

    Attributes:
      source_tokens: list of str. The source as the encoder saw it: its
        prefix (e.g. `<2fr>`), subwords and `</s>`.
      target_tokens: list of str. The output subwords and `</s>`.
      weights: float32 array `[T, S]`; row `t` is the attention while
        predicting `target_tokens[t]`.
    """

    source_tokens: List[str]
    target_tokens: List[str]
    weights: np.ndarray


def attention_maps(translator, sources, translations, **task):
    """Forced-decodes each `translations[i]` for `sources[i]`.

    Args:
      translator: `gnmt_tf.translator.Translator`.
      sources: list of str.
      translations: list of str, one per source.
      **task: the model's task arguments (e.g. `src_lang`, `tgt_lang`).

    Returns:
      list of `AttentionMap`, one per pair.

    Raises:
      ValueError: a bad task argument, or lists of different lengths.
    """
    if len(sources) != len(translations):
        raise ValueError(f"{len(sources)} sources but {len(translations)} "
                         "translations")
    ids = translator.task_ids(**task)
    task_tensors = {t.name: tf.constant([ids[t.name]], tf.int32)
                    for t in translator.task_inputs}
    return [_attention_map(translator, source, translation, task_tensors)
            for source, translation in zip(sources, translations)]


def _attention_map(translator, source, translation, task):
    model, subwords = translator.model, translator.subwords
    source_ids, source_lengths = translator.tokenize(tf.constant([source]),
                                                     task)
    length = int(source_lengths[0])
    target = subwords.encode([translation])[0] + [translator.eos_id]
    if model.max_target_length:  # a fixed-size cache holds this many
        target = target[:model.max_target_length]
    state = model.initial_state(model.encode(source_ids, **task), len(target))
    previous, rows = translator.bos_id, []
    for token in target:
        _, attention, state = model.step(tf.constant([previous], tf.int32),
                                         state)
        rows.append(attention[0, :length].numpy())  # [S]
        previous = token
    return AttentionMap(
        source_tokens=subwords.id_pieces(source_ids[0, :length].numpy()),
        target_tokens=subwords.id_pieces(target),
        weights=np.stack(rows).astype(np.float32))
