"""Translations with their scores, subwords and a `[T, S]` alignment.

What a document pipeline needs of a model besides the text (to put markup
and placeholders back, to estimate quality): `search_with_alignment` is the
graph body shared by the in-process path (`alignment_search_fn`) and the
SavedModel's ``translate_with_alignment`` signature (`gnmt_tf.export.savedmodel`),
so both give the same numbers.

The search is `Translator.search` (best hypothesis only); then one
teacher-forced pass of the model over its own output gives the alignment:

- a model with an `align(features)` method (an
  `gnmt_tf.alignment.aligned_model.AlignedTranslationModel`) gives its
  `ConvAlignmentHead` probabilities;
- any other model its cross-attention (`call(..., return_attention=True)`),
  averaged over layers and heads when it has several.

Outputs (`B` sentences, `S` source subwords, `T` output subwords; rows past
a sentence's lengths are padding):

- ``translations`` string `[B]`;
- ``scores`` float32 `[B]`: the output's log-probability divided by its
  length in subwords, the end token included (no length or coverage
  penalty: comparable across searches);
- ``source_pieces`` string `[B, S]`, ``source_lengths`` int32 `[B]`: the
  subwords the model read (no `<2xx>` prefix token, no end token);
- ``target_pieces`` string `[B, T]`, ``target_lengths`` int32 `[B]`: the
  subwords it wrote (no end token);
- ``alignment`` float32 `[B, T, S]`: row = output subword, column = source
  subword (the end token's row and column, and a prefix token's column,
  left out).
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import tensorflow as tf

OUTPUTS = ("translations", "scores", "source_pieces", "source_lengths",
           "target_pieces", "target_lengths", "alignment")


def _piece_table(translator):
    """The vocabulary as a string constant `[V]` (id -> piece), made once."""
    table = getattr(translator, "_piece_strings", None)
    if table is None:
        subwords = translator.subwords
        table = subwords.id_pieces(range(subwords.vocabulary_size))
        translator._piece_strings = table
    return tf.constant(table, tf.string)


def teacher_forced_alignment(model, features):
    """`[B, T, S]` alignment of a teacher-forced pass over `features`
    (``source_ids``, ``target_in_ids`` and the task inputs): the alignment
    head's probabilities if the model has one, else its cross-attention
    averaged over channels (layers x heads)."""
    align = model.align
    if align is not None:
        _, _, probabilities = align(features)
        return tf.cast(probabilities, tf.float32)
    _, attention = model(features, training=False, return_attention=True)
    attention = tf.cast(attention, tf.float32)
    if attention.shape.rank == 4:  # [B, L*H, T, S]
        attention = tf.reduce_mean(attention, axis=1)
    return attention


def search_with_alignment(translator, sentences, options, **task):
    """Graph body: strings `[B]` and the task as ids -> the dict of
    `OUTPUTS` (see the module docstring), best hypothesis only.

    Args:
      translator: a `gnmt_tf.translator.Translator`.
      sentences: string `[B]`.
      options: `SearchOptions` (`num_hypotheses` is taken as 1).
      **task: int32 task ids by name, as `Translator.search` takes them.
    """
    model = translator.model
    result = translator.search(sentences, options, **task)
    ids = result["ids"][:, 0]                                        # [B, T']
    lengths = result["lengths"][:, 0]                                # [B]
    last = tf.gather(ids, tf.maximum(lengths - 1, 0), batch_dims=1)
    ended = tf.logical_and(lengths > 0, tf.equal(last, translator.eos_id))
    target_lengths = lengths - tf.cast(ended, tf.int32)
    width = tf.shape(ids)[1]
    target_mask = tf.sequence_mask(target_lengths, width)
    target_ids = tf.where(target_mask, ids, tf.zeros_like(ids))      # [B, T']
    batch = tf.shape(ids)[0]
    bos = tf.fill([batch, 1], tf.constant(translator.bos_id, ids.dtype))
    target_in = tf.concat([bos, target_ids], axis=1)                 # [B, T'+1]

    source_ids, source_lengths = translator.tokenize(sentences, task)
    features = {"source_ids": tf.cast(source_ids, tf.int32),
                "target_in_ids": tf.cast(target_in, tf.int32), **task}
    alignment = teacher_forced_alignment(model, features)  # [B, T'+1, S+1]
    prefix = 0 if model.source_prefix is None else 1
    source_piece_ids = source_ids[:, prefix:]
    pieces = _piece_table(translator)
    scores = result["log_probs"][:, 0] / tf.cast(tf.maximum(lengths, 1),
                                                 tf.float32)
    return {
        "translations": result["translations"][:, 0],
        "scores": tf.cast(scores, tf.float32),
        "source_pieces": tf.gather(pieces, source_piece_ids),
        "source_lengths": source_lengths - prefix - 1,
        "target_pieces": tf.gather(pieces, target_ids),
        "target_lengths": target_lengths,
        "alignment": alignment[:, :width, prefix:],
    }


def alignment_search_fn(translator, options):
    """The `tf.function` `(sentences [B], *task ids) -> dict of OUTPUTS`
    for `options` (with one hypothesis), cached with the translator's own
    (so `Translator.reset_tokenizer` drops it too)."""
    import dataclasses

    options = dataclasses.replace(options, num_hypotheses=1)
    cache = translator._functions
    key = ("search_with_alignment", options)
    if key not in cache:
        names = [t.name for t in translator.task_inputs]
        cache[key] = tf.function(
            lambda sentences, *task: search_with_alignment(
                translator, sentences, options, **dict(zip(names, task))),
            input_signature=[tf.TensorSpec([None], tf.string),
                             *translator.task_specs()],
            autograph=False)
    return cache[key]
