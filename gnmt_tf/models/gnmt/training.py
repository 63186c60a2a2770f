"""Training a GNMT model directory on a Multi30k-layout corpus (the GNMT
family's trainer; the training loop itself is `gnmt_tf.training.trainer`)."""

import dataclasses
import pathlib

import tf_keras as keras

from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.data import corpus
from gnmt_tf.data.datasets import make_dataset
from gnmt_tf.training import init_from as init_lib
from gnmt_tf.training import workers
from gnmt_tf.training import trainer
from gnmt_tf.training.validation_bleu import BleuSample


def train_gnmt(model_dir, data_dir, src_lang, tgt_lang, model_config,
               train_config, vocab=None, strategy="default", log_every=100,
               init_from=None, data_config=None):
    """Trains (or resumes) a GNMT in `model_dir` on `<data_dir>/train.*`,
    or, with `data_config`, on the shards `gnmt-tf data prepare` made.

    On first use the config is written to `model_dir/config.json`; a resumed
    run reads the architecture from there, so a restart cannot silently change
    it. Validation loss on `val.*` is reported once per checkpoint interval
    and the BLEU of its first `train_config.bleu_lines` sentences every
    `train_config.bleu_every` steps (see `fit`).
    The run holds the directory's lock, and a run that fails before its
    first checkpoint leaves no half-made directory (`claim_model_dir`).
    With `strategy="multi_worker_mirrored"` only the chief does that and
    writes the directory; the other workers read its vocabulary and config
    (`gnmt_tf.training.workers`).
    `init_from` (a GNMT model directory or shipped name) starts a new run
    from that model's weights, architecture and vocabulary
    (`gnmt_tf.training.init_from`); a run that resumes ignores it.
    `data_config` (a data configuration or its prepared directory, all of
    whose corpora are `src_lang`-`tgt_lang`) streams the shards
    (`gnmt_tf.data.shard_dataset`, each worker its own shard files) with
    the vocabulary trained on a bounded sample of them; there is no
    validation set then.
    """
    if train_config.precision != "float32":
        # The hand-written LSTM cells keep float32 state; only the
        # Transformer's layers follow a mixed-precision policy.
        raise ValueError(f"precision={train_config.precision} is for "
                         "Transformer models; GNMT trains in float32")
    # First: MultiWorkerMirroredStrategy sets up collective ops, which must
    # happen before any other TensorFlow op of the process.
    strategy = trainer.make_strategy(strategy)
    chief = workers.is_chief(strategy)
    if data_config is not None:
        data_dir, src, tgt = _shards(data_config, src_lang, tgt_lang), None, None
    else:
        data_dir = corpus.resolve_data_dir(data_dir)
        src, tgt = corpus.read_parallel(data_dir, "train", src_lang, tgt_lang)
    with workers.claim_for_training(model_dir, chief):
        return _train_gnmt(model_dir, data_dir, src, tgt, src_lang, tgt_lang,
                           model_config, train_config, vocab, strategy,
                           log_every, chief, init_from)


def _shards(data_config, src_lang, tgt_lang):
    """The prepared directory of `data_config`, checked to hold only
    `src_lang`-`tgt_lang` corpora (a GNMT translates one direction)."""
    from gnmt_tf.data import prepare as prepare_lib

    prepared = prepare_lib.prepared_dir_of(data_config).resolve()
    manifest = prepare_lib.read_manifest(prepared)
    others = sorted({f"{c['src_lang']}-{c['tgt_lang']}"
                     for c in manifest["corpora"]}
                    - {f"{src_lang}-{tgt_lang}"})
    if others:
        raise ValueError(f"{prepared}: corpora in {', '.join(others)}; a GNMT "
                         f"translates one direction ({src_lang}-{tgt_lang}: "
                         "--src-lang/--tgt-lang)")
    return prepared


def _train_gnmt(model_dir, data_dir, src, tgt, src_lang, tgt_lang,
                model_config, train_config, vocab, strategy, log_every, chief,
                init_from):
    from gnmt_tf.config import GNMTConfig, from_dict
    from gnmt_tf.models.gnmt.model import GNMT

    if not chief:  # until the chief has written spm.model and config.json
        workers.barrier(strategy)
    config_path = pathlib.Path(model_dir) / model_dir_lib.CONFIG_FILE
    extra = {"src_lang": src_lang, "tgt_lang": tgt_lang}
    if config_path.exists():
        saved = model_dir_lib.read_config(model_dir)
        model_config = from_dict(GNMTConfig, saved["model"])
        if init_lib.INIT_KEY in saved:
            extra[init_lib.INIT_KEY] = saved[init_lib.INIT_KEY]
    elif init_from is not None:
        source_config, vocab, extra[init_lib.INIT_KEY] = init_lib.read_source(
            init_from, "gnmt")
        model_config = from_dict(GNMTConfig, source_config)
    if src is None:
        extra["data"] = str(data_dir)
    sentences = (src + tgt if src is not None
                 else _sampled_sentences(data_dir, train_config.seed))
    subwords = trainer.prepare_vocabulary(model_dir, sentences,
                                          model_config.vocabulary_size, vocab,
                                          write=chief)
    model_config = dataclasses.replace(
        model_config, vocabulary_size=subwords.vocabulary_size)
    if chief:
        model_dir_lib.write_config(model_dir, "gnmt", model_config,
                                   train_config, extra)
        workers.barrier(strategy)

    # Seed before the datasets: their shuffles mix the global seed with
    # their own, so a seed left by earlier code would change the order.
    keras.utils.set_random_seed(train_config.seed)
    validation = bleu_sample = None
    if src is None:
        from gnmt_tf.data.shard_dataset import shard_dataset

        dataset = shard_dataset(
            data_dir, subwords, train_config.max_tokens,
            train_config.max_length, shuffle_buffer=train_config.shuffle_buffer,
            seed=train_config.seed, worker=workers.data_position(strategy),
            **train_config.bucketing())
    else:
        dataset = make_dataset(subwords.encode(src), subwords.encode(tgt),
                               train_config.max_tokens, train_config.max_length,
                               shuffle_buffer=train_config.shuffle_buffer,
                               seed=train_config.seed,
                               **train_config.bucketing())
    try:
        if src is None:  # no validation set among the shards
            raise FileNotFoundError(data_dir)
        val_src, val_tgt = corpus.read_parallel(data_dir, "val", src_lang, tgt_lang)
        validation = make_dataset(subwords.encode(val_src), subwords.encode(val_tgt),
                                  train_config.max_tokens, train_config.max_length,
                                  shuffle=False, repeat=False,
                                  **train_config.bucketing())
        bleu_sample = BleuSample.from_pairs(val_src, val_tgt,
                                            train_config.bleu_lines)
    except FileNotFoundError:
        pass
    with strategy.scope():
        model = GNMT(model_config)
        trainer.compile_model(model, train_config, model_config.pad_id)
        return trainer.fit(model, train_config, dataset, model_dir,
                           validation, log_every=log_every,
                           bleu_sample=bleu_sample, subwords=subwords,
                           init_weights=trainer.init_weights_of(extra))


def _sampled_sentences(prepared_dir, seed):
    """Lazily, a bounded random sample of the shards' sentences for the
    vocabulary (read only when one is trained)."""
    from gnmt_tf.data.shard_sample import sample_sentences

    yield from sample_sentences(prepared_dir, seed=seed)
