"""The predictor flags (`--predictors`, `--weights`, `--lm`,
`--ensemble-mode`, `--predictor-config`): SGNMT-style combinations of
scoring models."""


_PREDICTOR_KEYS = ("model", "predictors", "weights", "lm", "ensemble_mode")


def add_predictor_arguments(parser):
    """Adds the predictor flags (`predictor_settings` reads them)."""
    parser.add_argument(
        "--predictors", metavar="LIST",
        help="comma-separated predictors combined log-linearly: nmt (one "
             "per --model, in order), lm (--lm), wc (word-count bonus); "
             "default: one nmt per --model")
    parser.add_argument(
        "--weights", metavar="LIST",
        help="comma-separated weights >= 0, one per predictor (default 1)")
    parser.add_argument("--lm", metavar="FILE",
                        help="kenlm n-gram model (ARPA or binary) over the "
                             "target pieces, for the lm predictor (gnmt-tf "
                             "lm)")
    parser.add_argument(
        "--ensemble-mode", choices=["loglinear", "average"], default=None,
        help="how the nmt predictors combine: loglinear (sum of weighted "
             "log-probabilities, SGNMT; default) or average (weighted "
             "average of probabilities)")
    parser.add_argument(
        "--predictor-config", metavar="FILE",
        help="YAML/JSON file with any of model (a list), predictors, "
             "weights, lm, ensemble_mode; flags override it")


def predictor_settings(args):
    """`(model_dirs, predictors, weights, lm, mode)` from the flags and
    `--predictor-config` (flags win); predictors, weights and lm None when
    not given.

    Raises:
      ValueError: an unknown key in the file, a bad predictor or weight.
    """
    from gnmt_tf.predictor_model import parse_predictors, parse_weights

    settings = {}
    path = getattr(args, "predictor_config", None)
    if path:
        from gnmt_tf.config_file import read_settings

        for item in read_settings(path):
            key, _, value = item.partition("=")
            if key not in _PREDICTOR_KEYS:
                raise ValueError(f"{path}: unknown key {key!r}; known: "
                                 f"{', '.join(_PREDICTOR_KEYS)}")
            settings[key] = value
    if "model" in settings:
        settings["model"] = [m for m in settings["model"].split(",") if m]
    for key in _PREDICTOR_KEYS:
        if getattr(args, key, None):
            settings[key] = getattr(args, key)
    if isinstance(settings.get("model"), str):  # a command with one --model
        settings["model"] = [settings["model"]]
    predictors = settings.get("predictors")
    weights = settings.get("weights")
    return (list(settings.get("model") or []),
            parse_predictors(predictors) if predictors else None,
            parse_weights(weights) if weights else None,
            settings.get("lm"), settings.get("ensemble_mode", "loglinear"))
