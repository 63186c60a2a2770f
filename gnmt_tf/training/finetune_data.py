"""The training data a GNMT model directory is fine-tuned on (its
`ModelType.finetune_data`, `gnmt_tf.model_types`)."""

from gnmt_tf.data import corpus
from gnmt_tf.data.datasets import make_dataset


def gnmt_finetune_data(model, subwords, payload, data_dir, train_config):
    """`(train_config, dataset)`: the `train.*` pairs of the direction the
    model was trained on (`payload`, its `config.json`), batched as in
    training.

    Raises:
      ValueError: `config.json` names no `src_lang`/`tgt_lang`.
      FileNotFoundError: no training files in `data_dir`.
    """
    del model
    src_lang, tgt_lang = payload.get("src_lang"), payload.get("tgt_lang")
    if not (src_lang and tgt_lang):
        raise ValueError("the model's config.json names no src_lang/tgt_lang")
    src, tgt = corpus.read_parallel(corpus.resolve_data_dir(data_dir), "train",
                                    src_lang, tgt_lang)
    return train_config, make_dataset(
        subwords.encode(src), subwords.encode(tgt), train_config.max_tokens,
        train_config.max_length, shuffle_buffer=train_config.shuffle_buffer,
        seed=train_config.seed, **train_config.bucketing())
