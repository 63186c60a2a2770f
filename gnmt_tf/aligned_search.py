"""Translations with their scores, subwords and a `[T, S]` alignment.

What a document pipeline needs of a model besides the text (to put markup
and placeholders back, to estimate quality): `search_with_alignment` is the
graph body shared by the in-process path (`alignment_search_fn`) and the
SavedModel's ``translate_with_alignment`` signature (`gnmt_tf.export.savedmodel`),
so both give the same numbers.

The search is `Translator.search` (best hypothesis only), or the host
search over the model's TFLite export (`align_translations` takes its
output and scores it in the teacher-forced pass); then one teacher-forced
pass of the model over its own output gives the alignment:

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


def teacher_forced_pass(model, features):
    """`(logits [B, T, V], alignment [B, T, S])` of a teacher-forced pass
    over `features` (``source_ids``, ``target_in_ids`` and the task
    inputs): the alignment head's probabilities if the model has one, else
    its cross-attention averaged over channels (layers x heads)."""
    align = model.align
    if align is not None:
        logits, _, probabilities = align(features)
        return logits, tf.cast(probabilities, tf.float32)
    logits, attention = model(features, training=False,
                              return_attention=True)
    attention = tf.cast(attention, tf.float32)
    if attention.shape.rank == 4:  # [B, L*H, T, S]
        attention = tf.reduce_mean(attention, axis=1)
    return logits, attention


def search_with_alignment(translator, sentences, options, **task):
    """Graph body: strings `[B]` and the task as ids -> the dict of
    `OUTPUTS` (see the module docstring), best hypothesis only.

    Args:
      translator: a `gnmt_tf.translator.Translator`.
      sentences: string `[B]`.
      options: `SearchOptions` (`num_hypotheses` is taken as 1).
      **task: int32 task ids by name, as `Translator.search` takes them.
    """
    result = translator.search(sentences, options, **task)
    ids = result["ids"][:, 0]                                        # [B, T']
    lengths = result["lengths"][:, 0]                                # [B]
    last = tf.gather(ids, tf.maximum(lengths - 1, 0), batch_dims=1)
    ended = tf.logical_and(lengths > 0, tf.equal(last, translator.eos_id))
    target_lengths = lengths - tf.cast(ended, tf.int32)
    scores = result["log_probs"][:, 0] / tf.cast(tf.maximum(lengths, 1),
                                                 tf.float32)
    outputs, _ = _aligned_outputs(translator,
                                  translator.tokenize(sentences, task), ids,
                                  target_lengths, task)
    return dict(outputs, translations=result["translations"][:, 0],
                scores=tf.cast(scores, tf.float32))


def align_translations(translator, sentences, target_ids, target_lengths,
                       options, **task):
    """Graph body: `OUTPUTS` for translations found elsewhere (the host
    search over the model's TFLite export): `target_ids [B, T]` (no end
    token, 0-padded) and `target_lengths [B]`. A translation shorter than
    the search's output limit (`Translator.max_lengths`) ended with the end
    token; its log-probability, from the teacher-forced pass, counts it,
    as the search's does."""
    source = translator.tokenize(sentences, task)
    ended = target_lengths < translator.max_lengths(source[1], options)
    outputs, logits = _aligned_outputs(translator, source, target_ids,
                                       target_lengths, task)
    lengths = target_lengths + tf.cast(ended, tf.int32)
    # Each position's label: the target, then the end token where it ended.
    width = tf.shape(target_ids)[1]
    labels = tf.concat([target_ids, tf.zeros_like(target_ids[:, :1])], 1)
    labels = tf.where(tf.range(width + 1)[tf.newaxis] == target_lengths[
        :, tf.newaxis], translator.eos_id, labels)
    log_probs = tf.gather(tf.nn.log_softmax(tf.cast(logits, tf.float32)),
                          labels, batch_dims=2)                  # [B, T+1]
    log_probs = tf.reduce_sum(tf.where(
        tf.sequence_mask(lengths, width + 1), log_probs, 0.0), axis=1)
    scores = log_probs / tf.cast(tf.maximum(lengths, 1), tf.float32)
    translations = translator.detokenize(target_ids[:, tf.newaxis],
                                         target_lengths[:, tf.newaxis])
    return dict(outputs, translations=translations[:, 0], scores=scores)


def _aligned_outputs(translator, source, target_ids, target_lengths, task):
    """`(OUTPUTS but translations and scores, logits [B, T+1, V])` of
    one teacher-forced pass over `target_ids [B, T]` (the first
    `target_lengths` of each row, no end token); `source` is
    `translator.tokenize`'s `(source_ids, source_lengths)`."""
    model = translator.model
    width = tf.shape(target_ids)[1]
    target_mask = tf.sequence_mask(target_lengths, width)
    target_ids = tf.where(target_mask, target_ids,
                          tf.zeros_like(target_ids))                 # [B, T']
    batch = tf.shape(target_ids)[0]
    bos = tf.fill([batch, 1], tf.constant(translator.bos_id,
                                          target_ids.dtype))
    target_in = tf.concat([bos, target_ids], axis=1)                 # [B, T'+1]

    source_ids, source_lengths = source
    features = {"source_ids": tf.cast(source_ids, tf.int32),
                "target_in_ids": tf.cast(target_in, tf.int32), **task}
    logits, alignment = teacher_forced_pass(model, features)
    prefix = 0 if model.source_prefix is None else 1
    source_piece_ids = source_ids[:, prefix:]
    pieces = _piece_table(translator)
    return {
        "source_pieces": tf.gather(pieces, source_piece_ids),
        "source_lengths": source_lengths - prefix - 1,
        "target_pieces": tf.gather(pieces, target_ids),
        "target_lengths": target_lengths,
        "alignment": alignment[:, :width, prefix:],
    }, logits


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


def align_translations_fn(translator, options):
    """The `tf.function` `(sentences [B], target_ids [B, T], target_lengths
    [B], *task ids) -> dict of OUTPUTS` of `align_translations`, cached
    as `alignment_search_fn`."""
    cache = translator._functions
    key = ("align_translations", options)
    if key not in cache:
        names = [t.name for t in translator.task_inputs]
        cache[key] = tf.function(
            lambda sentences, target_ids, target_lengths, *task:
            align_translations(translator, sentences, target_ids,
                               target_lengths, options,
                               **dict(zip(names, task))),
            input_signature=[tf.TensorSpec([None], tf.string),
                             tf.TensorSpec([None, None], tf.int32),
                             tf.TensorSpec([None], tf.int32),
                             *translator.task_specs()],
            autograph=False)
    return cache[key]
