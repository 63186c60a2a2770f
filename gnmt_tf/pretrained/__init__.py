"""Trained models shipped inside the package (`gnmt_tf/pretrained/<name>/`).

Each folder is a model directory (`gnmt_tf.model_dir`) whose weights are one
float16 `weights.npz` (`gnmt_tf.weights_file`) instead of training
checkpoints, plus `MODEL_CARD.md` and `scores.json` (what
`benchmarks/model_zoo.py` measured on it). Wherever a model directory is
accepted, so is one of these names:

```python
from gnmt_tf.translator import Translator
translator = Translator.from_model_dir("multi30k-transformer")
```

A shipped model may also carry its int8 TFLite export (made by the QAT
path, `gnmt-tf export qat` then `gnmt-tf export tflite --int8`) in
`<name>/tflite_int8/` (the `.tflite` file, its `spm.model` and
`model.json`); wherever a `.tflite` file is accepted (`gnmt-tf translate
--tflite`, `HostTranslator.from_tflite`), so is the model's name.
"""

import json
import pathlib

PRETRAINED_DIR = pathlib.Path(__file__).resolve().parent
SCORES_FILE = "scores.json"
CARD_FILE = "MODEL_CARD.md"
TFLITE_DIR = "tflite_int8"
TFLITE_FILE = "model_int8.tflite"


def names():
    """Names of the shipped models, sorted."""
    return sorted(path.name for path in PRETRAINED_DIR.iterdir()
                  if (path / "config.json").is_file())


def locate(model_dir_or_name) -> pathlib.Path:
    """The directory of a model directory path or a shipped model's name.

    An existing path wins over a name, so a local folder called like a
    shipped model is what the user gets.

    Raises:
      FileNotFoundError: neither a directory nor a shipped model's name.
    """
    path = pathlib.Path(model_dir_or_name)
    if path.is_dir():
        return path
    if str(model_dir_or_name) in names():
        return PRETRAINED_DIR / str(model_dir_or_name)
    known = ", ".join(names()) or "none installed"
    raise FileNotFoundError(
        f"{model_dir_or_name} is not a model directory nor the name of a "
        f"shipped model (shipped: {known})")


def locate_tflite(path_or_name) -> pathlib.Path:
    """A `.tflite` file path, or the int8 TFLite export of a shipped model
    given by name. An existing file wins over a name.

    Raises:
      FileNotFoundError: neither a file nor a shipped model with an int8
        export.
    """
    path = pathlib.Path(path_or_name)
    if path.is_file():
        return path
    shipped = tflite_path(str(path_or_name))
    if shipped is not None:
        return shipped
    known = ", ".join(n for n in names() if tflite_path(n)) or "none"
    raise FileNotFoundError(
        f"{path_or_name} is not a .tflite file nor the name of a shipped "
        f"model with an int8 TFLite export (shipped: {known})")


def tflite_path(name):
    """The int8 TFLite file shipped with model `name`, or None."""
    if name not in names():
        return None
    path = PRETRAINED_DIR / name / TFLITE_DIR / TFLITE_FILE
    return path if path.is_file() else None


def size_mb(directory) -> float:
    """The size in MiB of the files directly in `directory`, 1 decimal."""
    return round(sum(f.stat().st_size for f in pathlib.Path(directory).iterdir()
                     if f.is_file()) / 2**20, 1)


def describe(name) -> dict:
    """`{"name", "size_mb", "model_type", "scores", "tflite_int8_mb"}` of a
    shipped model; `scores` is `scores.json` (empty when missing),
    `tflite_int8_mb` None without an int8 export."""
    path = locate(name)
    config = json.loads((path / "config.json").read_text())
    scores_path = path / SCORES_FILE
    scores = json.loads(scores_path.read_text()) if scores_path.exists() else {}
    tflite = tflite_path(name)
    return {"name": name, "size_mb": size_mb(path),
            "model_type": config.get("model_type", "gnmt"), "scores": scores,
            "tflite_int8_mb": (size_mb(tflite.parent) if tflite else None)}
