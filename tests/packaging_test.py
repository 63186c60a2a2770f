"""What setup.py, requirements.txt, the Makefile and the README promise about
installing gnmt-tf, checked against each other and against the code."""

import ast
import importlib.metadata
import pathlib
import re
import subprocess
import sys

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("gnmt_tf", "task_space", "alignment", "export", "serving",
            "pipeline", "gateway")


def _setup_py():
    """`{"PYTHON_REQUIRES": str, "INSTALL_REQUIRES": [...], "extras":
    {name: [...]}}` read from setup.py without running it; `extras` is
    `EXTRAS_REQUIRE` plus `"dev"`: `DEV_REQUIRE` and every other extra, as
    setup.py composes it."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
    setup = {key: ast.literal_eval(found[key]) for key in
             ("PYTHON_REQUIRES", "INSTALL_REQUIRES", "EXTRAS_REQUIRE",
              "DEV_REQUIRE", "SEPARATE_EXTRAS")}
    extras = dict(setup.pop("EXTRAS_REQUIRE"))
    separate = setup["SEPARATE_EXTRAS"]
    extras["dev"] = setup.pop("DEV_REQUIRE") + sorted(set(sum(
        (reqs for extra, reqs in extras.items() if extra not in separate),
        [])))
    setup["extras"] = extras
    return setup


def _pins(name="requirements.txt"):
    """`{canonical name: version}` of a requirements file."""
    pins = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep, f"requirements.txt: {line!r} is not an exact pin"
            pins[canonicalize_name(name)] = version
    return pins


def _check_python():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import check_python
    finally:
        sys.path.pop(0)
    return check_python


def test_python_range_is_the_one_the_wheels_allow():
    """TensorFlow 2.21 has no 3.14 wheels, onnxruntime 1.32 no 3.10 ones."""
    setup = _setup_py()
    assert setup["PYTHON_REQUIRES"] == ">=3.11,<3.14"
    check = _check_python()
    text = (ROOT / "setup.py").read_text()
    for version in [(3, 11), (3, 12), (3, 13)]:
        assert check.problem(version, text) is None
    for version in [(3, 10), (3, 14), (2, 7)]:
        message = check.problem(version, text)
        assert message.startswith("gnmt-tf needs Python 3.11 to 3.13")
        assert "not %d.%d" % version in message


def test_makefile_checks_the_interpreter_before_creating_the_venv(tmp_path):
    ok = subprocess.run([sys.executable, "scripts/check_python.py"],
                        cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stderr == ""
    plan = subprocess.run(
        ["make", "-n", "venv", f"VENV={tmp_path / 'venv'}",
         "PYTHON=python3.x"], cwd=ROOT, capture_output=True, text=True)
    assert plan.returncode == 0, plan.stderr
    lines = plan.stdout.splitlines()
    check = next(i for i, l in enumerate(lines)
                 if "python3.x scripts/check_python.py" in l)
    create = next(i for i, l in enumerate(lines) if "python3.x -m venv" in l)
    assert check < create


def test_readme_states_the_python_range():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "Python 3.11 to 3.13" in readme
    assert "3.10+" not in readme


def test_requirements_pin_versions_inside_the_declared_ranges():
    """requirements.txt pins every package of the base install and of
    every extra, each inside the range setup.py declares (a package in two
    extras has one range)."""
    setup = _setup_py()
    pins = _pins()
    ranges = {}
    separate = set()
    for extra, lines in [(None, setup["INSTALL_REQUIRES"]),
                         *setup["extras"].items()]:
        for line in lines:
            requirement = Requirement(line)
            name = canonicalize_name(requirement.name)
            assert ranges.setdefault(name, requirement) == requirement, (
                f"{name}: {ranges[name]} and {requirement} in setup.py")
            if extra in setup["SEPARATE_EXTRAS"]:
                separate.add(name)
    assert sorted(set(ranges) - separate) == sorted(pins)
    # The beam extra's environment: requirements-beam.txt pins it and
    # replaces some of requirements.txt's pins, each inside setup.py's range.
    beam_pins = _pins("requirements-beam.txt")
    assert separate <= set(beam_pins)
    pins = {**pins, **beam_pins}
    assert set(pins) == set(ranges)
    for name, requirement in ranges.items():
        assert requirement.specifier, f"{name} has no version range"
        assert requirement.specifier.contains(pins[name]), (
            f"requirements.txt pins {name}=={pins[name]} outside "
            f"{requirement.specifier}")
    # tensorflow-text, tf-keras and tensorflow-serving-api follow
    # TensorFlow's minor version: pinned to it and ranged within it.
    major, minor = map(int, pins["tensorflow"].split(".")[:2])
    for name in ("tensorflow", "tensorflow-text", "tf-keras",
                 "tensorflow-serving-api"):
        assert pins[name].startswith(f"{major}.{minor}."), name
        specifier = ranges[name].specifier
        assert specifier.contains(f"{major}.{minor}.99"), name
        assert not specifier.contains(f"{major}.{minor + 1}.0"), name


def _third_party_imports():
    """`{top-level module: first file importing it}` of the packages."""
    first_party = set(PACKAGES)
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in first_party and \
                            top not in sys.stdlib_module_names:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_extras_match_use():
    """The base install serves train/translate/export savedmodel/serve;
    each optional runtime has its own extra, and `dev` holds them all."""
    extras = _setup_py()["extras"]
    names = {extra: {canonicalize_name(Requirement(r).name) for r in reqs}
             for extra, reqs in extras.items()}
    assert names["tflite"] == {"ai-edge-litert"}
    assert names["onnx"] == {"tf2onnx", "onnxruntime"}
    assert names["plot"] == {"matplotlib"}
    assert "ctranslate2" in names["bench"]
    assert names["gateway"] == {"lingua-language-detector", "lxml",
                                "sacremoses", "cachetools", "regex"}
    assert names["beam"] == {"apache-beam"}
    for extra in ("tflite", "onnx", "plot", "bench", "gateway"):
        assert names[extra] <= names["dev"], extra
    # apache-beam needs protobuf < 7, requirements.txt pins protobuf 7.
    assert not names["beam"] & names["dev"]
    assert Version(_pins()["protobuf"]) >= Version("7") > Version(
        _pins("requirements-beam.txt")["protobuf"])
    assert {"pytest", "hypothesis", "import-linter"} <= names["dev"]
    base = {canonicalize_name(Requirement(r).name)
            for r in _setup_py()["INSTALL_REQUIRES"]}
    assert not base & set().union(*names.values())


def _import_ctranslate2_converter():
    import importlib

    importlib.import_module("gnmt_tf.models.task_space.ctranslate2_converter")


def _convert_to_onnx():
    from gnmt_tf.export.onnx_export import convert_step_functions

    convert_step_functions(None, "unused")


def _onnxruntime():
    from gnmt_tf.onnx_runtime import _onnxruntime

    _onnxruntime()


def _new_figure():
    from gnmt_tf.plots import new_figure

    new_figure(1, 1)


def _importer(name):
    def call():
        import importlib

        sys.modules.pop(name, None)
        importlib.import_module(name)
    return call


def _translate_beam():
    import argparse

    from gnmt_tf.cli import translate_beam

    translate_beam.run(argparse.Namespace(pipeline_args=[]))


@pytest.mark.parametrize("module, call, extra", [
    ("lingua", _importer("gnmt_tf.pipeline.language_id"), "gateway"),
    ("lxml", _importer("gnmt_tf.pipeline.documents"), "gateway"),
    ("sacremoses", _importer("gnmt_tf.pipeline.normalize"), "gateway"),
    ("cachetools", _importer("gnmt_tf.pipeline.cache"), "gateway"),
    ("apache_beam", _translate_beam, "beam"),
    ("onnxruntime", _onnxruntime, "onnx"),
    ("tf2onnx", _convert_to_onnx, "onnx"),
    ("matplotlib.figure", _new_figure, "plot"),
    ("ctranslate2", _import_ctranslate2_converter, "bench"),
])
def test_a_missing_optional_package_names_its_extra(monkeypatch, module,
                                                    call, extra):
    assert extra in _setup_py()["extras"]
    monkeypatch.setitem(sys.modules, module, None)  # import raises
    for name in ("gnmt_tf.models.task_space.ctranslate2_converter", "gnmt_tf.pipeline.language_id",
                 "gnmt_tf.pipeline.documents", "gnmt_tf.pipeline.normalize", "gnmt_tf.pipeline.cache"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(Exception) as error:
        call()
    message = str(error.value)
    assert f"'gnmt-tf[{extra}]'" in message and "\n" not in message, message


_BASE_IMPORTS = """
import sys
for name in ("lingua", "lxml", "sacremoses", "cachetools", "apache_beam"):
    sys.modules[name] = None  # not installed
import gnmt_tf.cli.translate, gnmt_tf.cli.train, gnmt_tf.export.cli, gnmt_tf.serving.cli
import gnmt_tf.serving.server, gnmt_tf.serving.rest_server, gnmt_tf.serving.client
import gnmt_tf.export.savedmodel, gnmt_tf.translator
from gnmt_tf.cli.main import build_parser
build_parser()
print("ok")
"""


def test_base_commands_need_no_extra():
    """train, translate (--server too), export savedmodel and serve import
    without the gateway and beam extras."""
    result = subprocess.run([sys.executable, "-c", _BASE_IMPORTS], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.stdout.strip() == "ok", result.stderr[-2000:]


def test_every_imported_package_is_declared():
    setup = _setup_py()
    declared = {canonicalize_name(Requirement(r).name) for r in
                setup["INSTALL_REQUIRES"] + sum(setup["extras"].values(), [])}
    distributions = importlib.metadata.packages_distributions()
    separate = {canonicalize_name(Requirement(r).name)
                for extra in setup["SEPARATE_EXTRAS"]
                for r in setup["extras"][extra]}
    missing = {}
    for module, path in _third_party_imports().items():
        names = {canonicalize_name(d) for d in distributions.get(module, [])}
        if not names and canonicalize_name(module) in separate:
            continue  # in its own environment (requirements-beam.txt)
        if not names:
            pytest.fail(f"{module} (imported by {path}) is not installed")
        if not names & declared:
            missing[module] = (path, sorted(names))
    assert not missing, f"imported but not declared in setup.py: {missing}"


def test_relative_links_of_the_docs_stay_inside_the_repository():
    """A standalone clone has no ../shared: links must point into the repo."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert ROOT / "docs" / "design.md" in pages
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            assert path.is_relative_to(ROOT) and path.exists(), (
                f"{page.name} links to {target}, which is not in the "
                "repository")


def _make_plan(target, tmp_path, *variables):
    result = subprocess.run(
        ["make", "-n", target, f"VENV={tmp_path / 'venv'}", *variables],
        cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return [l for l in result.stdout.splitlines()
            if "gnmt-tf quickstart" in l or "exit 2" in l]


def test_make_quickstart_goes_on_without_a_data_directory(tmp_path):
    """Without DATA_DIR it runs `gnmt-tf quickstart`, which downloads."""
    for target in ("quickstart", "quickstart-train"):
        lines = _make_plan(target, tmp_path, "DATA_DIR=")
        assert len(lines) == 1 and "--data-dir" not in lines[0], lines
        lines = _make_plan(target, tmp_path, "DATA_DIR=/data/multi30k")
        assert len(lines) == 1 and "--data-dir /data/multi30k" in lines[0], \
            lines


def test_make_quickstart_translates_and_quickstart_train_trains(tmp_path):
    """`make quickstart` runs the shipped model (no training flags);
    `make quickstart-train MINUTES=...` the training demo."""
    [line] = _make_plan("quickstart", tmp_path, "DATA_DIR=/d")
    assert "--train" not in line and "--minutes" not in line, line
    [line] = _make_plan("quickstart", tmp_path, "DATA_DIR=/d",
                        "MAX_LINES=50")
    assert line.endswith("--max-lines 50"), line
    [line] = _make_plan("quickstart-train", tmp_path, "DATA_DIR=/d",
                        "MINUTES=60")
    assert "quickstart --train" in line and "--minutes 60" in line, line
