"""Training the task-space Transformer on many directions at once.

`train_task_space` is `gnmt_tf.models.gnmt.training.train_gnmt` for the
task-space model: one shared SentencePiece vocabulary over all languages
(with the `<2xx>` target-language tokens as unsplittable pieces), batches
that mix directions, `model.fit` through `gnmt_tf.training.trainer.fit`
(checkpoints every N steps, resume, wall-time budget), and a model directory
that `gnmt_tf.model_dir.load_model` and `gnmt_tf.translator.Translator` open:

    MODEL_DIR/config.json   model_type "task_space_transformer", "model"
                            (TransformerConfig), "train" (TrainConfig) and
                            "task_space" (directions, tags, target-language
                            token)
    MODEL_DIR/spm.model     the shared vocabulary
    MODEL_DIR/checkpoints/  tf.train.Checkpoint files

Baseline for comparisons (Johnson et al. 2017, "Google's Multilingual NMT
System"): `model_config.use_task_space=False` with
`target_language_token=True`, i.e. a plain Transformer told the target
language only by a `<2xx>` token prepended to the source.
"""

import dataclasses
import pathlib
import sys
import typing

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

from gnmt_tf import model_dir as model_dir_lib
from gnmt_tf.checks import check_number
from gnmt_tf.data import corpus
from gnmt_tf.data import prepare as prepare_lib
from gnmt_tf.training import init_from as init_lib
from gnmt_tf.data import multiway as data_lib
from gnmt_tf.models.task_space import registry
from gnmt_tf.models.task_space.config import TransformerConfig
# One preset: the model and the training settings together.
from gnmt_tf.models.task_space.presets import TRAIN_PRESETS

@dataclasses.dataclass(frozen=True)
class TaskSpaceOptions:
    """What to train on, beyond the model and optimiser settings.

    All fields can be set with `--set key=value` (routed by
    `gnmt_tf.config.split_overrides`).

    Attributes:
        directions: direction spec (`all`, `en-de,en-fr`,
            `all-except:fr-cs,cs-fr`; see `gnmt_tf.data.multiway`), or None:
            the saved one when resuming, else `all`.
        tags: comma-separated scene tags of every Multi30k example.
        target_language_token: prepend `<2tgt>` to every source (the
            Johnson et al. baseline; combine with `use_task_space=false`).
        validation_lines: lines of `val` per direction for the validation
            loss reported at each checkpoint (0 = no validation).
        max_lines: use only the first lines of each training file (None =
            all); for quick experiments.
        data: a directory of shards prepared by `gnmt-tf data prepare`
            to train on instead of Multi30k (`--data-config`); the
            directions and tags then come from its corpora, and there is
            no validation set.
    """

    directions: typing.Optional[str] = None
    tags: str = "caption"
    target_language_token: bool = False
    validation_lines: int = 100
    max_lines: typing.Optional[int] = None
    data: typing.Optional[str] = None

    def __post_init__(self):
        check_number("validation_lines", self.validation_lines, integer=True,
                     minimum=0)
        check_number("max_lines", self.max_lines, integer=True, minimum=1,
                     optional=True)


def get_preset(name):
    """`(TransformerConfig, TrainConfig)` of the preset `name`.

    Raises:
        ValueError: an unknown name (naming the known ones).
    """
    if name not in TRAIN_PRESETS:
        raise ValueError(f"unknown preset {name!r}; known task-space presets: "
                         f"{', '.join(sorted(TRAIN_PRESETS))}")
    return TransformerConfig.from_preset(name), TRAIN_PRESETS[name]


def read_task_space_config(model_dir, model_types=registry.MODEL_TYPES):
    """`(TransformerConfig, TaskSpaceOptions)` saved in a model directory.

    Args:
        model_dir: str or Path.
        model_types: the model types accepted (default: float and QAT).

    Raises:
        FileNotFoundError: not a model directory.
        ValueError: not a task-space model directory (of `model_types`).
    """
    payload = model_dir_lib.read_config(model_dir)
    if payload.get("model_type") not in model_types:
        raise ValueError(f"{model_dir} holds a {payload.get('model_type')!r} "
                         f"model, not a {' or '.join(map(repr, model_types))} "
                         "one")
    options = TaskSpaceOptions(**payload.get("task_space", {}))
    return TransformerConfig.from_dict(payload["model"]), options


def train_task_space(model_dir, data_dir, directions=None, model_config=None,
                     train_config=None, options=None, vocab=None,
                     strategy="default", log_every=100, init_from=None,
                     data_config=None):
    """Trains (or resumes) a task-space Transformer on Multi30k directions.

    On first use the vocabulary is trained (or `vocab` copied) into
    `model_dir/spm.model`, `config.vocabulary_size` set to its size, and
    the configs written to `model_dir/config.json`; a resumed run reads the
    architecture and task options from there, so a restart cannot silently
    change them.

    Args:
        model_dir: str or Path; created if missing, resumed if present.
        data_dir: Multi30k directory (`train.<lang>[.gz]`, `val.*`).
        directions: direction spec or list; overrides `options.directions`.
        model_config: `TransformerConfig` (default: `transformer_small`).
        train_config: `gnmt_tf.config.TrainConfig` (default: the preset's).
        options: `TaskSpaceOptions`.
        vocab: optional SentencePiece `.model` to use instead of training
            one (needs the `<2xx>` pieces if `target_language_token`).
        strategy: `tf.distribute` strategy name (see `make_strategy`).
        log_every: steps between progress lines.
        init_from: a task-space model directory or shipped name: a new run
            starts from its weights, architecture and vocabulary, the
            optimizer afresh (`gnmt_tf.training.init_from`); a run that
            resumes ignores it.
        data_config: a data configuration file (its `prepared` directory)
            or a prepared directory (`gnmt-tf data prepare`): train on its
            shards, streamed, instead of Multi30k (`data_dir` is then
            unused); the directions are its corpora's.

    Returns:
        `gnmt_tf.training.trainer.TrainResult`.

    The run holds the directory's lock, and a run that fails before its
    first checkpoint leaves no half-made directory
    (`gnmt_tf.training.model_dir_guard.claim_model_dir`). With
    `strategy="multi_worker_mirrored"` only the chief claims and writes the
    directory (`gnmt_tf.training.workers`).

    Raises:
        ValueError: bad directions or tags, or `directions` differing from
            the ones a resumed model directory was trained on.
        gnmt_tf.training.model_dir_guard.ModelDirBusyError: another run
            trains in `model_dir`.
    """
    from gnmt_tf.training import trainer
    from gnmt_tf.training import workers

    # First: MultiWorkerMirroredStrategy must be made before any TF op.
    strategy = trainer.make_strategy(strategy)
    chief = workers.is_chief(strategy)
    options = options or TaskSpaceOptions()
    if data_config is None and options.data is not None:  # --set data=DIR
        data_config = options.data
    if data_config is not None:
        options = _with_shards(options, data_config, directions)
    if directions is not None and data_config is None:
        if not isinstance(directions, str):
            directions = data_lib.format_directions(directions)
        options = dataclasses.replace(options, directions=directions)
    if model_config is None or train_config is None:
        preset_model, preset_train = get_preset("transformer_small")
        model_config = model_config or preset_model
        train_config = train_config or preset_train

    with workers.claim_for_training(model_dir, chief):
        return _train_task_space(model_dir, data_dir, model_config,
                                 train_config, options, vocab, strategy,
                                 log_every, chief, init_from)


def _with_shards(options, data_config, directions):
    """`options` training on the prepared shards `data_config` names, with
    their corpora's directions."""
    from gnmt_tf.data import prepare as prepare_lib
    from gnmt_tf.models.task_space.shard_data import corpus_directions

    if directions is not None:
        raise ValueError("--directions does not go with --data-config: "
                         "the directions are its corpora's")
    prepared = prepare_lib.prepared_dir_of(data_config).resolve()
    manifest = prepare_lib.read_manifest(prepared)
    return dataclasses.replace(
        options, data=str(prepared),
        directions=data_lib.format_directions(corpus_directions(manifest)))


def _train_task_space(model_dir, data_dir, model_config, train_config,
                      options, vocab, strategy, log_every, chief, init_from):
    import tf_keras as keras

    from gnmt_tf.training import trainer
    from gnmt_tf.training import workers
    from gnmt_tf.models.task_space.task_space_translation_model import (
                                                                        TaskSpaceTranslationModel)

    if not chief:  # until the chief has written spm.model and config.json
        workers.barrier(strategy)
    config_path = pathlib.Path(model_dir) / model_dir_lib.CONFIG_FILE
    extra = {}
    if config_path.exists():
        payload = model_dir_lib.read_config(model_dir)
        if init_lib.INIT_KEY in payload:
            extra[init_lib.INIT_KEY] = payload[init_lib.INIT_KEY]
        model_config, saved = read_task_space_config(
            model_dir, (registry.MODEL_TYPE,))
        if options.directions is not None and (
                data_lib.parse_directions(options.directions,
                                          model_config.languages)
                != data_lib.parse_directions(saved.directions,
                                             model_config.languages)):
            raise ValueError(
                f"{model_dir} was trained on directions {saved.directions!r}, "
                f"not {options.directions!r}; use a new model directory")
        if options.data is not None and options.data != saved.data:
            raise ValueError(
                f"{model_dir} was trained on {saved.data or 'Multi30k'}, not "
                f"{options.data}; use a new model directory")
        options = dataclasses.replace(
            saved, validation_lines=options.validation_lines)
    elif init_from is not None:
        source_config, vocab, extra[init_lib.INIT_KEY] = (
            init_lib.read_source(init_from, registry.MODEL_TYPE))
        model_config = TransformerConfig.from_dict(source_config)
    if options.directions is None:
        options = dataclasses.replace(options, directions="all")
    pairs = data_lib.parse_directions(options.directions,
                                      model_config.languages)
    tags = data_lib.parse_tags(options.tags)
    model_config.tag_vector(tags)  # unknown tags fail before any work
    if options.target_language_token and model_config.use_task_space:
        print("note: target_language_token with use_task_space=True: the "
              "model sees the target language twice", file=sys.stderr)

    if options.data is not None:
        from gnmt_tf.models.task_space import shard_data

        manifest = prepare_lib.read_manifest(options.data)
        shard_data.check_manifest(manifest, model_config, tags)
        train = None
        train_size = manifest["counts"]["kept"]
        sentences = _sampled_sentences(options.data, train_config.seed)
    else:
        data_dir = corpus.resolve_data_dir(data_dir)
        train = data_lib.load_multi30k(data_dir, "train", pairs, tags,
                                       options.max_lines,
                                       model_config.languages)
        train_size = len(train)
        sentences = data_lib.vocabulary_sentences(
            data_dir, "train", data_lib.directions_languages(pairs),
            options.max_lines)
    subwords = trainer.prepare_vocabulary(
        model_dir, sentences, model_config.vocabulary_size, vocab,
        user_defined_symbols=[data_lib.target_language_token(lang)
                              for lang in model_config.languages],
        write=chief)
    model_config = model_config.replace(
        vocabulary_size=subwords.vocabulary_size)
    if chief:
        model_dir_lib.write_config(
            model_dir, registry.MODEL_TYPE, model_config, train_config,
            {"task_space": dataclasses.asdict(dataclasses.replace(
                options, directions=data_lib.format_directions(pairs))),
             **extra})
        workers.barrier(strategy)

    print(f"training on {len(pairs)} directions "
          f"({data_lib.format_directions(pairs)}), {train_size} pairs",
          file=sys.stderr)
    # Seed before the datasets: their shuffles mix the global seed with
    # their own, so a seed left by earlier code would change the order.
    keras.utils.set_random_seed(train_config.seed)
    encode = dict(subwords=subwords, config=model_config,
                  use_target_language_token=options.target_language_token)
    if train is None:
        dataset = shard_data.make_shard_task_dataset(
            options.data, subwords, model_config, train_config, tags,
            options.target_language_token,
            worker=workers.data_position(strategy))
    else:
        dataset = data_lib.make_task_dataset(
            data_lib.encode_examples(train, **encode),
            train_config.max_tokens, train_config.max_length,
            shuffle_buffer=train_config.shuffle_buffer,
            seed=train_config.seed, **train_config.bucketing())
    validation = bleu_sample = None
    if train is None and options.validation_lines:
        print("note: no validation set when training on prepared shards",
              file=sys.stderr)
    if options.validation_lines and train is not None:
        try:
            val = data_lib.load_multi30k(data_dir, "val", pairs, tags,
                                         options.validation_lines,
                                         model_config.languages)
            validation = data_lib.make_task_dataset(
                data_lib.encode_examples(val, **encode),
                train_config.max_tokens, train_config.max_length,
                shuffle=False, repeat=False,
                **train_config.bucketing())
            bleu_sample = _bleu_sample(val, train_config.bleu_lines)
        except FileNotFoundError:
            pass
    with strategy.scope():
        model = TaskSpaceTranslationModel(model_config,
                                          dtype=train_config.precision)
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


def _bleu_sample(examples, lines):
    """The first `lines` validation pairs of each task, for the BLEU that
    `trainer.fit` reports every `bleu_every` steps."""
    from gnmt_tf.training.validation_bleu import BleuGroup, BleuSample
    from gnmt_tf.evaluation.by_task import group_by_task

    groups = []
    for (src, tgt, tags), indices in group_by_task(examples).items():
        indices = indices[:lines]
        groups.append(BleuGroup(
            {"src_lang": src, "tgt_lang": tgt, "tags": tags},
            [examples.sources[i] for i in indices],
            [examples.targets[i] for i in indices]))
    return BleuSample(groups)


def finetune_data(model, subwords, payload, data_dir, train_config):
    """`(train_config, dataset)` a task-space model directory is fine-tuned
    on (its `ModelType.finetune_data`, e.g. RL refinement): the
    mixed-direction batches of the directions, scene tags and
    target-language token it was trained on (`payload`, its
    `config.json`)."""
    config = model.config
    options = TaskSpaceOptions(**payload.get("task_space", {}))
    if options.data is not None:
        from gnmt_tf.models.task_space.shard_data import make_shard_task_dataset

        return train_config, make_shard_task_dataset(
            options.data, subwords, config, train_config,
            data_lib.parse_tags(options.tags), options.target_language_token)
    examples = data_lib.load_multi30k(
        data_dir, "train",
        data_lib.parse_directions(options.directions, config.languages),
        data_lib.parse_tags(options.tags), options.max_lines,
        config.languages)
    encoded = data_lib.encode_examples(
        examples, subwords, config, options.target_language_token)
    return train_config, data_lib.make_task_dataset(
        encoded, train_config.max_tokens, train_config.max_length,
        shuffle_buffer=train_config.shuffle_buffer, seed=train_config.seed,
        **train_config.bucketing())
