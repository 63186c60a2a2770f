"""Refusing the directions a task-space model was never trained on.

A task-space model asked for a direction outside its training directions
still answers, often in a training target language (en->cs from a model
trained on en-de and en-fr comes out French). Training records its
directions (`config.json` "task_space" / the TFLite `task.json`);
`check_direction` refuses the others unless zero-shot translation is asked
for explicitly, and warns when a model directory has no record.
"""

import sys

from task_space.data import parse_directions


def check_direction(trained, languages, src_lang, tgt_lang,
                    allow_zero_shot=False, model="the model", stream=None):
    """Checks that `src_lang -> tgt_lang` is a trained direction.

    Args:
      trained: the recorded direction spec (e.g. "en-de,en-fr"), or None for
        a model that records none (old model directories): warns only.
      languages: the model's language codes (for "all" specs).
      src_lang, tgt_lang: str. The direction asked for.
      allow_zero_shot: bool. Translate an untrained direction, with a warning.
      model: str. How messages name the model (e.g. its directory).
      stream: where warnings go (default stderr).

    Raises:
      ValueError: an untrained direction without `allow_zero_shot`.
    """
    stream = stream or sys.stderr
    if not trained:
        print(f"warning: {model} does not record its training directions; "
              f"{src_lang}-{tgt_lang} may be one it never saw", file=stream)
        return
    pairs = parse_directions(trained, languages)
    if (src_lang, tgt_lang) in pairs:
        return
    if allow_zero_shot:
        print(f"warning: {src_lang}-{tgt_lang} is zero-shot: {model} was "
              f"trained on {trained} only", file=stream)
        return
    raise ValueError(f"{model} was not trained on {src_lang}-{tgt_lang} "
                     f"(only {trained}); pass --allow-zero-shot to translate "
                     "it anyway")
