"""Shared pytest fixtures and options for gnmt-tf.

The one place for test data and tiny trained models: the toy corpus
(`toy_corpus`, `toy_data_dir`), the synthetic 4-way corpus (`multiway_dir`),
each model family's tiny trained model directory (`tiny_model_dir`,
`ts_model_dir`, and `example_model_dir` of the example family that shows
what adding a family takes), and the model-family harness's fixtures (`model_families`,
`family`, `qat_family`; see `tests/harness/model_families.py`). Training,
exporting and loading an export in a fresh process take seconds each, so
all are session-scoped.
"""

import gzip
import os
import pathlib
import random
import subprocess
import sys

import atexit
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings

# Under the default engine (`auto`) each of the suite's hundreds of tiny
# models would compile an XLA search per shape and `gnmt-tf translate` would
# convert a TFLite export after each first run: minutes of the suite's budget.
# The graph search is the suite's default (set before gnmt_tf is imported,
# and inherited by the commands tests start); tests/gnmt_tf/search_engine_test.py
# runs `auto` itself. Caches go to a folder of this session, never ~/.cache.
os.environ.setdefault("GNMT_TF_ENGINE", "graph")
_CACHES = tempfile.mkdtemp(prefix="gnmt_tf_test_caches-")
atexit.register(shutil.rmtree, _CACHES, True)
os.environ.setdefault("GNMT_TF_XLA_CACHE", os.path.join(_CACHES, "xla"))
os.environ.setdefault("GNMT_TF_TFLITE_CACHE", os.path.join(_CACHES, "tflite"))

import gnmt_tf  # noqa: E402,F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)
from model_families import FAMILIES  # noqa: E402
from model_families import FAMILIES_BY_NAME
from model_families import QAT_FAMILIES
from model_families import FamilyArtifacts

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


# Property tests (Hypothesis): "fast" keeps all of them within about a minute
# of `make test` (each test caps its own max_examples below this); the tests
# marked slow run the "long" profile (`make test-all`). Derandomized and
# without an example database, so runs are repeatable and write no files.
settings.register_profile(
    "fast", max_examples=25, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow,
                           HealthCheck.function_scoped_fixture])
settings.register_profile("long", settings.get_profile("fast"),
                          max_examples=300, derandomize=False)
settings.load_profile("fast")


def pytest_addoption(parser):
    parser.addoption(
        "--run-slow", action="store_true", default=False,
        help="also run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def data_dir():
    """Multi30k directory from GNMT_TF_DATA or ../shared/data/multi30k."""
    candidates = [os.environ.get("GNMT_TF_DATA"),
                  str(REPO_ROOT.parent / "shared" / "data" / "multi30k")]
    for c in candidates:
        if c and pathlib.Path(c, "train.en.gz").exists():
            return pathlib.Path(c)
    pytest.skip("Multi30k data not found (set GNMT_TF_DATA)")


_NOUNS = [("man", "Mann"), ("woman", "Frau"), ("dog", "Hund"), ("cat", "Katze"),
          ("child", "Kind"), ("boy", "Junge"), ("girl", "Mädchen"), ("horse", "Pferd")]
_VERBS = [("runs", "läuft"), ("sleeps", "schläft"), ("eats", "isst"),
          ("plays", "spielt"), ("jumps", "springt")]
_ADJS = [("big", "großer"), ("small", "kleiner"), ("old", "alter"), ("young", "junger")]


def toy_pairs():
    """A deterministic English->German toy corpus (160 pairs)."""
    pairs = []
    for adj_en, adj_de in _ADJS:
        for noun_en, noun_de in _NOUNS:
            for verb_en, verb_de in _VERBS:
                pairs.append((f"A {adj_en} {noun_en} {verb_en}.",
                              f"Ein {adj_de} {noun_de} {verb_de}."))
    return pairs


@pytest.fixture(scope="session")
def toy_data_dir(tmp_path_factory):
    """train/val/test_2016_flickr .en/.de files of the toy corpus."""
    path = tmp_path_factory.mktemp("toy_data")
    pairs = toy_pairs()
    splits = {"train": pairs, "val": pairs[::10], "test_2016_flickr": pairs[5::10]}
    for split, rows in splits.items():
        for lang, column in (("en", 0), ("de", 1)):
            (path / f"{split}.{lang}").write_text(
                "".join(r[column] + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(toy_data_dir, tmp_path_factory):
    """A gnmt_tiny model (32 units wide) trained on the toy corpus.

    600 steps at a high learning rate, checkpoints every 200: enough that it
    translates most toy sentences (and every search's output depends on the
    sentence); the 16-unit preset, or 400 steps, still says the same
    sentence for every input.
    """
    from gnmt_tf.config import apply_overrides
    from gnmt_tf.models.gnmt.presets import get_preset
    from gnmt_tf.models.gnmt.training import train_gnmt

    model_dir = tmp_path_factory.mktemp("tiny_model")
    model_config, train_config = get_preset("gnmt_tiny")
    model_config = apply_overrides(model_config, [
        "vocabulary_size=100", "hidden_dim=32", "attention_dim=16"])
    train_config = apply_overrides(train_config, [
        "train_steps=600", "checkpoint_every=200", "learning_rate=0.03",
        "label_smoothing=0.0", "bleu_every=600", "bleu_lines=8"])
    train_gnmt(model_dir, toy_data_dir, "en", "de", model_config, train_config,
               log_every=200)
    return model_dir


_HOLD_LOCK = """
import sys
from gnmt_tf.training.model_dir_guard import claim_model_dir
with claim_model_dir(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes our stdin
"""


@pytest.fixture
def locked_dir(tmp_path):
    """A model directory whose training lock another process holds."""
    path = tmp_path / "locked_model"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield path
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


@pytest.fixture(scope="session")
def toy_corpus():
    """The toy corpus as a list of (English, German) pairs."""
    return toy_pairs()


# --- a tiny synthetic 4-way corpus (task-space training and export tests) ---

# One concept per row: en, de, fr, cs.
MULTIWAY_LEXICON = [
    ("a", "ein", "un", "jeden"),
    ("dog", "Hund", "chien", "pes"),
    ("cat", "Katze", "chat", "kočka"),
    ("man", "Mann", "homme", "muž"),
    ("runs", "rennt", "court", "běží"),
    ("sleeps", "schläft", "dort", "spí"),
    ("red", "roter", "rouge", "červený"),
    ("big", "großer", "grand", "velký"),
    ("ball", "Ball", "balle", "míč"),
    ("park", "Park", "parc", "park"),
]
MULTIWAY_LANGUAGES = ("en", "de", "fr", "cs")


def synthetic_multiway_lines(num_lines, seed):
    """`{lang: lines}`, line-aligned across the four languages."""
    rng = random.Random(seed)
    lines = {lang: [] for lang in MULTIWAY_LANGUAGES}
    for _ in range(num_lines):
        words = [rng.randrange(len(MULTIWAY_LEXICON))
                 for _ in range(rng.randint(2, 4))]
        for column, lang in enumerate(MULTIWAY_LANGUAGES):
            lines[lang].append(
                " ".join(MULTIWAY_LEXICON[w][column] for w in words))
    return lines


def write_multiway(directory, split, lines, compress=True):
    for lang, text in lines.items():
        data = "".join(line + "\n" for line in text).encode("utf-8")
        if compress:
            (directory / f"{split}.{lang}.gz").write_bytes(gzip.compress(data))
        else:
            (directory / f"{split}.{lang}").write_bytes(data)


@pytest.fixture(scope="session")
def multiway_dir(tmp_path_factory):
    """Multi30k-like 4-way directory (en, de, fr, cs): train (200 lines),
    val (20), and test_2017_flickr (10) without Czech, as Multi30k."""
    directory = tmp_path_factory.mktemp("multiway")
    write_multiway(directory, "train", synthetic_multiway_lines(200, seed=1))
    write_multiway(directory, "val", synthetic_multiway_lines(20, seed=2),
                   compress=False)
    test = synthetic_multiway_lines(10, seed=3)
    del test["cs"]
    write_multiway(directory, "test_2017_flickr", test)
    return directory


@pytest.fixture(scope="session")
def ts_model_dir(multiway_dir, tmp_path_factory):
    """A transformer_tiny trained 60 steps on en-fr and de-cs (enough for
    non-empty, input-dependent output; at 30 steps everything is "")."""
    from gnmt_tf.config import apply_overrides
    from gnmt_tf.models.task_space.training import TaskSpaceOptions
    from gnmt_tf.models.task_space.training import get_preset
    from gnmt_tf.models.task_space.training import train_task_space

    model_config, train_config = get_preset("transformer_tiny")
    model_config = model_config.replace(vocabulary_size=60)
    # bucket_width=0: the geometric batches this fixture was made with
    # (and its QAT fine-tuning, which reads config.json), so that the
    # int8-vs-QAT checks keep the model their grid-step bounds were set on.
    train_config = apply_overrides(train_config, [
        "train_steps=60", "checkpoint_every=60", "learning_rate=0.02",
        "label_smoothing=0.0", "bucket_width=0"])
    path = tmp_path_factory.mktemp("ts_model")
    train_task_space(path, multiway_dir, "en-fr,de-cs", model_config,
                     train_config, TaskSpaceOptions(validation_lines=0),
                     log_every=1000)
    return path


@pytest.fixture(scope="session")
def ts_baseline_model_dir(multiway_dir, tmp_path_factory):
    """The Johnson et al. baseline: transformer_tiny without the task space,
    trained 30 steps with `<2xx>` source tokens (slow tests only)."""
    from gnmt_tf.config import apply_overrides
    from gnmt_tf.models.task_space.training import TaskSpaceOptions
    from gnmt_tf.models.task_space.training import get_preset
    from gnmt_tf.models.task_space.training import train_task_space

    model_config, train_config = get_preset("transformer_tiny")
    model_config = model_config.replace(vocabulary_size=60,
                                        use_task_space=False)
    train_config = apply_overrides(train_config, [
        "train_steps=30", "checkpoint_every=30", "learning_rate=0.02"])
    model_dir = tmp_path_factory.mktemp("ts_baseline")
    train_task_space(model_dir, multiway_dir, "en-fr,de-cs", model_config,
                     train_config,
                     TaskSpaceOptions(validation_lines=0,
                                      target_language_token=True),
                     log_every=1000)
    return model_dir


# --- a third model family, outside gnmt_tf (tests/harness/example_family) ---


@pytest.fixture(scope="session")
def example_family_installed(tmp_path_factory):
    """Declares the example family's model type as an installed package
    would: a `.dist-info` with an ``entry_points.txt`` of the group
    ``gnmt_tf.model_types``, on `sys.path` for the session."""
    from gnmt_tf import model_types

    site = tmp_path_factory.mktemp("site")
    info = site / "gnmt_tf_example_family-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: gnmt-tf-example-family\n"
        "Version: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[{model_types.ENTRY_POINT_GROUP}]\n"
        "example_gru = example_family.registry:EXAMPLE_GRU\n")
    sys.path.append(str(site))
    model_types.model_types.cache_clear()
    yield
    sys.path.remove(str(site))
    model_types.model_types.cache_clear()


@pytest.fixture(scope="session")
def example_model_dir(example_family_installed, tmp_path_factory):
    """The example family's model trained on the toy corpus (`model.fit`)."""
    from example_family.training import train_example_model

    return train_example_model(tmp_path_factory.mktemp("example_model"),
                               toy_pairs())



# --- the model-family harness (tests/harness) --------------------------------


@pytest.fixture(scope="session")
def model_families(request, tmp_path_factory):
    """`model_families(name)` -> the `model_families.FamilyArtifacts` of
    that family: its model, translator and exports, each made once."""
    made = {}

    def get(name):
        if name not in made:
            family = FAMILIES_BY_NAME[name]
            made[name] = FamilyArtifacts(
                family, request.getfixturevalue(family.model_dir),
                family.qat_data and request.getfixturevalue(family.qat_data),
                tmp_path_factory)
        return made[name]

    return get


@pytest.fixture(params=[f.name for f in FAMILIES])
def family(request, model_families):
    """Each model family in turn (`FamilyArtifacts`)."""
    return model_families(request.param)


@pytest.fixture(params=[f.name for f in QAT_FAMILIES])
def qat_family(request, model_families):
    """Each model family with a quantization-aware variant in turn."""
    return model_families(request.param)
