"""Settings files: `--config run.yaml` next to `--set key=value`.

A settings file is a YAML (or JSON) mapping of the same keys `--set` takes,
one level deep; a list value becomes a comma-separated one (as
`--set languages=en,de,fr`):

```yaml
# run.yaml
hidden_dim: 512
train_steps: 20000
learning_rate: 1.0e-3
clip_cell: true
```

The file's settings are applied first and the `--set` ones on top, so a
flag always wins over the file (`layered`).

Example:
```python
items = read_settings("run.yaml")        # ["hidden_dim=512", ...]
model, train = layered(split_overrides, (model, train), "run.yaml",
                       ["train_steps=10"])
```
"""

import json
import pathlib


def read_settings(path) -> list:
    """The settings of a YAML or JSON file as `key=value` strings.

    Raises:
      ValueError: the file does not parse, is not a mapping, or a value is
        a mapping (one line, naming the file).
      FileNotFoundError: no such file.
    """
    path = pathlib.Path(path)
    data = _parse(path, path.read_text(encoding="utf-8"))
    if data is None:
        return []
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of settings "
                         f"(key: value), got {type(data).__name__}")
    return [f"{key}={_text(path, key, value)}" for key, value in data.items()]


def layered(apply, configs, config_path, overrides):
    """`configs` with a settings file's items, then `overrides` on top.

    Args:
      apply: `(items, *configs) -> configs`, e.g.
        `gnmt_tf.config.split_overrides`.
      configs: tuple of configs (dataclasses) to update.
      config_path: str, Path or None (no file).
      overrides: list of `key=value` strings (`--set`).

    Returns:
      The updated configs, as a list.

    Raises:
      ValueError: a bad file, or an unknown key or bad value (in the file's
        case, prefixed with its name).
    """
    configs = list(configs)
    if config_path:
        items = read_settings(config_path)
        try:
            configs = list(apply(items, *configs))
        except ValueError as e:
            raise ValueError(f"{config_path}: {e}") from None
    return list(apply(list(overrides), *configs))


def _text(path, key, value) -> str:
    """A YAML/JSON value as `--set` would spell it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return ",".join(_text(path, key, v) for v in value)
    if isinstance(value, dict):
        raise ValueError(f"{path}: {key}: expected a number, string, boolean "
                         "or list, got a mapping")
    return str(value)


def _parse(path, text):
    """The file's data; a syntax error as a one-line ValueError."""
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except ValueError as e:
            raise ValueError(f"{path}: not valid JSON: {e}") from None
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ValueError(f"{path}: not valid YAML: {problem}{where}") from None
