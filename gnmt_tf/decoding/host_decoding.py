"""The host-side decoders for a `Translator`: exact (dfs), bucket, sepbeam
and lexically constrained search, one sentence at a time.

Each sentence is tokenised, encoded and given an output limit exactly as
the in-graph search does (`Translator.tokenize`, `Translator.max_lengths`),
then searched by a loop on the host over the model's step function
(`gnmt_tf.decoding.host_steps`), and detokenised. These searches keep
Python data structures a graph cannot hold (a DFS stack, length buckets of
priority queues, per-hypothesis constraint matches, a wall-clock budget),
so they run from a model directory, not inside a SavedModel.

Scores: dfs and bucket rank by the plain log-probability (their pruning is
admissible only for it); sepbeam and constrained search by the GNMT score.
"""

import tensorflow as tf

from gnmt_tf.decoding.bucket_search import bucket_search
from gnmt_tf.decoding.constrained_search import constrained_search
from gnmt_tf.decoding.exact_search import exact_search
from gnmt_tf.decoding.sepbeam_search import sepbeam_search


def _encoded(translator, sentence, **task):
    """`(source_ids [1, S], source_lengths [1], task ids)` of `sentence`."""
    ids = {name: tf.constant([value])
           for name, value in translator.task_ids(**task).items()}
    source_ids, source_lengths = translator.tokenize(tf.constant([sentence]),
                                                     ids)
    return source_ids, source_lengths, ids


def _text(translator, ids):
    words = [i for i in (ids or ()) if i != translator.eos_id]
    return translator.subwords.decode([words])[0]


def _term_ids(translator, terms):
    """Glossary terms -> subword id sequences (blank terms dropped)."""
    terms = [t.strip() for t in terms if t.strip()]
    return [list(ids) for ids in translator.subwords.encode(terms)]


def _check(translator, options, constraints, members):
    if constraints is not None:
        if options.decoder not in ("beam", "greedy"):
            raise ValueError("constraints need the beam (or greedy) "
                             f"decoder, not {options.decoder}")
        if options.coverage_penalty != 0:
            raise ValueError("constrained search has no coverage penalty: "
                             "use coverage_penalty 0")
    if members and options.decoder != "sepbeam":
        raise ValueError("more models are combined by the sepbeam decoder "
                         f"only, not {options.decoder}")
    for member in members:
        if (member.subwords.vocabulary_size != translator.subwords.vocabulary_size
                or (member.bos_id, member.eos_id) != (translator.bos_id,
                                                      translator.eos_id)):
            raise ValueError("sepbeam models must share the target "
                             "vocabulary (same spm.model)")


def translate_nbest(translator, sentences, options, constraints=None,
                    members=(), member_weights=None, **task):
    """`Translator.translate_nbest` for the host-side decoders.

    Args:
      translator: a `gnmt_tf.translator.Translator`; `sentences` already
        checked (`Translator.check_inputs`).
      options: `SearchOptions`.
      constraints: None, or one list of target terms (str) per sentence.
      members: more `Translator`s for sepbeam; member_weights: weights of
        all the models, `translator` first (None: equal).
      **task: the task arguments, shared by every model.

    Returns:
      One list of `(text, score)` pairs per sentence, best first (blank
      inputs: one `("", 0.0)`); `Translator` makes them `Hypothesis`es
      (this module does not import `gnmt_tf.translator`, which imports it).

    Raises:
      ValueError: an option the decoder cannot honour, or constraints not
        one list per sentence.
    """
    if constraints is not None:
        constraints = list(constraints)
        if len(constraints) != len(sentences):
            raise ValueError(f"got {len(constraints)} constraint lists for "
                             f"{len(sentences)} sentences")
    _check(translator, options, constraints, members)
    model = translator.model
    results = []
    for i, sentence in enumerate(sentences):
        if not sentence.strip():
            results.append([("", 0.0)])
            continue
        terms = (_term_ids(translator, constraints[i])
                 if constraints is not None else [])
        if not terms and options.decoder in ("beam", "greedy"):
            # No terms for this sentence: the in-graph search.
            results.append([(h.text, h.score) for h in
                            translator.translate_nbest([sentence], options,
                                                       **task)[0]])
            continue
        source_ids, source_lengths, ids = _encoded(translator, sentence,
                                                   **task)
        max_length = max(int(translator.max_lengths(source_lengths,
                                                    options)[0]), 1)
        if terms:  # room for the terms, within the model's own limit
            max_length = max(max_length, sum(map(len, terms)) + 1)
            if model.max_target_length:
                max_length = min(max_length, model.max_target_length)
        state = model.initial_state(model.encode(source_ids, **ids),
                                    max_length)
        bos, eos = translator.bos_id, translator.eos_id
        if terms:
            beam = 1 if options.decoder == "greedy" else options.beam_size
            hyps = constrained_search(
                model.step, state, bos, eos, max_length, terms,
                beam_size=beam, length_penalty=options.length_penalty,
                num_hypotheses=options.num_hypotheses)
            pairs = [(h.ids, h.score) for h in hyps]
        elif options.decoder in ("dfs", "bucket"):
            search = exact_search if options.decoder == "dfs" else bucket_search
            found = search(model.step, state, bos, eos, max_length,
                           max_expansions=options.max_expansions,
                           max_seconds=options.max_seconds)
            pairs = [(found.ids, found.score)]
        elif options.decoder == "sepbeam":
            steps, states = [model.step], [state]
            for member in members:
                member_ids, _, member_task = _encoded(member, sentence,
                                                      **task)
                steps.append(member.model.step)
                states.append(member.model.initial_state(
                    member.model.encode(member_ids, **member_task),
                    max_length))
            pairs = sepbeam_search(
                steps, states, bos, eos, max_length,
                beam_size=options.beam_size, weights=member_weights,
                length_penalty=options.length_penalty,
                coverage_penalty=options.coverage_penalty,
                source_length=int(source_lengths[0]),
                num_hypotheses=options.num_hypotheses,
                beam_width=options.beam_width)
        results.append([(_text(translator, ids_), float(score))
                        for ids_, score in pairs] or [("", float("-inf"))])
    return results

