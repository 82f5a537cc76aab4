"""One device, chosen at the top: ``resolve_device``, ``--device`` on every command, ``KGBIAS_DEVICE``.

On this CPU machine ``auto`` resolves to the CPU, so every command's output must be identical under
``--device auto`` and ``--device cpu``; ``cuda`` cases run only where PyTorch sees a GPU.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch

from kgbias_core.cli import _leaf_parsers, build_parser, main
from kgbias_core.device import DEVICE_ENV, default_device, resolve_device, retrain_device
from kgbias_core.embeddings import training
from kgbias_core.embeddings.store import load_model
from kgbias_core.errors import NO_CUDA_DEVICE, UNKNOWN_DEVICE, DeviceError

HAS_CUDA = torch.cuda.is_available()
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device here"))]


def test_resolve_device_names_cpu_and_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(" CPU ") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cuda" if HAS_CUDA else "cpu") == default_device()
    assert resolve_device(None) == resolve_device("auto")  # no flag, no variable: auto


@pytest.mark.parametrize("spec", ["bogus", "gpu", "cpu:1", "auto:0", "cuda:x", ""])
def test_an_unknown_device_is_a_named_error(spec: str) -> None:
    with pytest.raises(DeviceError) as error:
        resolve_device(spec)
    assert str(error.value) == UNKNOWN_DEVICE.format(spec=spec, source="--device")


@pytest.mark.skipif(HAS_CUDA, reason="a GPU is present: cuda resolves")
@pytest.mark.parametrize("spec", ["cuda", "cuda:0"])
def test_an_absent_gpu_is_a_named_error(spec: str) -> None:
    with pytest.raises(DeviceError) as error:
        resolve_device(spec)
    assert str(error.value) == NO_CUDA_DEVICE.format(spec=spec, source="--device")


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device here")
def test_cuda_resolves_and_a_missing_index_is_refused() -> None:
    assert resolve_device("cuda").type == "cuda"
    assert resolve_device("cuda:0") == torch.device("cuda", 0)
    with pytest.raises(DeviceError, match="numbered 0 to"):
        resolve_device(f"cuda:{torch.cuda.device_count()}")


def test_the_variable_is_read_when_no_spec_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    assert resolve_device(None) == torch.device("cpu")
    monkeypatch.setenv(DEVICE_ENV, "bogus")
    with pytest.raises(DeviceError) as error:
        resolve_device(None)
    assert str(error.value) == UNKNOWN_DEVICE.format(spec="bogus", source=DEVICE_ENV)
    assert resolve_device("cpu") == torch.device("cpu")  # an explicit flag wins over the variable


def test_the_retrain_rule_has_one_home(tiny_model) -> None:
    assert training.retrain_device is retrain_device and training.default_device is default_device
    assert retrain_device(tiny_model) == torch.device("cpu")  # trained on the CPU: retrained there


@pytest.mark.parametrize("device", DEVICES)
def test_load_model_moves_the_model_once(tiny_store: Path, device: str) -> None:
    model = load_model(tiny_store / "tiny-transe", device=device)
    assert model.device.type == device
    assert {t.device.type for t in (model.triples, model.negatives, model.test_triples)} == {device}
    on_cpu = load_model(tiny_store / "tiny-transe")
    assert torch.equal(model.entity_embeddings.cpu(), on_cpu.entity_embeddings)


def test_every_command_has_the_device_flag() -> None:
    leaves = _leaf_parsers(build_parser())
    names = {parser.prog.removeprefix("kgbias ") for parser in leaves}
    assert {"train", "import", "measures", "audit", "download", "validate influence", "validate census"} <= names
    assert {"prepare", "debias-embedding", "compare-debiasing", "link-prediction", "plan"} <= names
    assert len(leaves) == 23  # every command, validate's two included
    for parser in leaves:
        assert "--device" in parser._option_string_actions, parser.prog


@pytest.mark.parametrize("spec, message", [
    ("bogus", UNKNOWN_DEVICE.format(spec="bogus", source="--device")),
    pytest.param("cuda", NO_CUDA_DEVICE.format(spec="cuda", source="--device"),
                 marks=pytest.mark.skipif(HAS_CUDA, reason="a GPU is present")),
])
def test_a_bad_device_is_one_line_and_exit_2(tiny_store: Path, tmp_path: Path, capsys, spec: str,
                                            message: str) -> None:
    out = tmp_path / "m.csv"
    assert main(["measures", "--model", str(tiny_store / "tiny-transe"), "--out", str(out), "--device", spec]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {message}\n"
    assert not out.exists()  # refused before anything was read or written


def test_a_bad_variable_is_one_line_and_exit_2(tiny_store: Path, tmp_path: Path, capsys,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEVICE_ENV, "tpu")
    assert main(["measures", "--model", str(tiny_store / "tiny-transe"), "--out", str(tmp_path / "m.csv")]) == 2
    assert capsys.readouterr().err == f"error: {UNKNOWN_DEVICE.format(spec='tpu', source=DEVICE_ENV)}\n"


def _commands(model: str, tmp: Path) -> dict[str, list[str]]:
    """Every command that reads a model, as a batch user would run it on the tiny graph (fast settings)."""
    return {
        "measures": ["measures", "--model", model, "--out", str(tmp / "measures.csv")],
        "individuals": ["individuals", "--model", model, "--occupation", "nurse", "--out", str(tmp / "ind.csv")],
        "influence": ["influence", "--model", model, "--occupation", "nurse", "--top", "9",
                      "--out", str(tmp / "inf.csv")],
        "fisher": ["fisher", "--model", model, "--relation", "gender", "--a", "male", "--b", "female",
                   "--out", str(tmp / "fisher.csv")],
        "intersect": ["intersect", "--model", model, "--occupation", "Actor", "--attribute", "nationality",
                      "--out", str(tmp / "intersect.csv")],
        "audit": ["audit", "--models", model, "--k", "3", "--min-persons", "3", "--out", str(tmp / "audit.csv")],
        "fairness": ["fairness", "--models", model, "--bootstrap", "10", "--out", str(tmp / "fair.csv")],
        "report": ["report", "--model", model, "--occupation", "nurse", "--out", str(tmp / "report.html")],
        "validate influence": ["validate", "influence", "--model", model, "--occupation", "nurse", "--ks", "3",
                               "--kinds", "top", "--out", str(tmp / "acc.csv")],
    }


def test_every_reading_command_runs_with_device_cpu_and_auto_gives_the_same_files(
    tiny_store: Path, tmp_path: Path
) -> None:
    if HAS_CUDA:
        pytest.skip("auto is the GPU here: its figures agree with the CPU's only within float32 tolerance")
    model = tmp_path / "tiny-transe"
    shutil.copytree(tiny_store / "tiny-transe", model)
    outputs = {}
    for device in ("cpu", "auto"):
        folder = tmp_path / device
        folder.mkdir()
        for name, argv in _commands(str(model), folder).items():
            assert main([*argv, "--device", device]) == 0, name
        outputs[device] = folder
    for file in sorted(p.name for p in outputs["cpu"].iterdir()):
        a, b = outputs["cpu"] / file, outputs["auto"] / file
        if file.endswith(".csv"):
            pd.testing.assert_frame_equal(pd.read_csv(a), pd.read_csv(b), check_exact=True)
    assert {p.name for p in outputs["cpu"].iterdir()} == {p.name for p in outputs["auto"].iterdir()}


def test_writing_commands_run_with_device_cpu(tiny_store: Path, tmp_path: Path) -> None:
    model = tmp_path / "store" / "tiny-transe"
    shutil.copytree(tiny_store / "tiny-transe", model)
    assert main(["train", "--dataset", "synthetic", "--dim", "8", "--epochs", "2", "--device", "cpu",
                 "--out", str(tmp_path / "store" / "trained")]) == 0
    assert load_model(tmp_path / "store" / "trained").info["device"] == "cpu"  # trained where it was told
    assert main(["synthetic", "--persons", "200", "--triples", "3000", "--device", "cpu",
                 "--out", str(tmp_path / "syn")]) == 0
    assert main(["import", "--format", "random", "--graph", str(tmp_path / "syn"), "--dim", "8", "--device", "cpu",
                 "--out", str(tmp_path / "store" / "random")]) == 0
    assert main(["debias", "--model", str(model), "--occupation", "nurse", "--remove-k", "3", "--device", "cpu",
                 "--out", str(tmp_path / "store" / "run")]) == 0
    assert main(["calibrate", "--model", str(model), "--occupations", "3", "--k", "3", "--device", "cpu"]) == 0
    assert main(["findings", "--model", str(model), "--device", "cpu", "--data-dir", str(tmp_path / "nodata"),
                 "--out", str(tmp_path / "findings.json")]) == 0
    assert main(["validate", "census", "--model", str(model), "--device", "cpu", "--data-dir",
                 str(tmp_path / "nodata"), "--out", str(tmp_path / "c.csv")]) == 2  # no census: one line, exit 2
    # download needs a network: its parser takes the flag (checked above) and resolves it before fetching.
    assert main(["download", "--device", "bogus", "--data-dir", str(tmp_path / "nodata")]) == 2


# --- the app: KGBIAS_DEVICE, shown in the sidebar ------------------------------------------------
def test_the_sidebar_shows_the_device_of_measures_and_training(app_store: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import page, texts

    monkeypatch.setenv(DEVICE_ENV, "cpu")
    app = page("overview")
    app.run()
    assert not app.exception
    sidebar = texts(app.sidebar.caption)
    assert "Device: **CPU** for measures and training (`KGBIAS_DEVICE`)" in sidebar
    assert "retrains run on the kind of device their model was trained on" in sidebar


def test_a_bad_app_device_is_one_error_line(app_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import page

    monkeypatch.setenv(DEVICE_ENV, "bogus")
    app = page("overview")
    app.run()
    assert not app.exception
    assert [e.value for e in app.error] == [UNKNOWN_DEVICE.format(spec="bogus", source=DEVICE_ENV)]


def test_the_app_cache_holds_the_model_on_the_variables_device(app_store: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from kgbias_app import cache

    monkeypatch.setenv(DEVICE_ENV, "cpu")
    ref = next(m for m in cache.catalog().values() if m.name == "tiny-transe")
    assert cache.device() == torch.device("cpu")
    assert cache.analysis(ref).model.device.type == "cpu"


@pytest.mark.parametrize("device", DEVICES)
def test_every_measure_runs_where_the_model_was_loaded(tiny_store: Path, device: str) -> None:
    """No function below the top picks a device: on a model loaded onto ``device`` every memoised tensor is
    there, and the tables (which leave the device at display) equal the CPU's."""
    from kgbias_core import tables
    from kgbias_core.analysis import ModelAnalysis
    from kgbias_core.influence.iterative import conjugate_gradient_solve, group_bias_rhs

    there = ModelAnalysis(load_model(tiny_store / "tiny-transe", device=device))
    cpu = ModelAnalysis(load_model(tiny_store / "tiny-transe", device="cpu"))
    nurse = "nurse"
    index = there.groups.index(nurse)
    solved = conjugate_gradient_solve(there.model, group_bias_rhs(there.context, index), damping=there.damping,
                                      iterations=5)
    for tensor in (there.group_bias(), *there.pair_biases, there.fisher_changes, there.fisher_bp,
                   there.influence(nurse), there.context.entity_embeddings, there.alpha, solved[0]):
        assert tensor.device.type == device
    exact = device == "cpu"  # a GPU sums float32 in another order: equal within tolerance, not bit for bit
    pd.testing.assert_frame_equal(tables.measures_table(there), tables.measures_table(cpu), check_exact=exact)
    pd.testing.assert_frame_equal(tables.influence_table(there, nurse, top=10),
                                  tables.influence_table(cpu, nurse, top=10), check_exact=exact)
