"""The model store: round trip, atomic writes, partial directories, corrupt files, no pickle."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from kgbias_core.embeddings.pykeen_bridge import pykeen_model
from kgbias_core.embeddings.store import (
    MODEL_FILES,
    check_output,
    list_models,
    load_model,
    read_config,
    save_model,
)
from kgbias_core.errors import ModelStoreError


def test_round_trip_keeps_everything(tiny_model, tmp_path: Path) -> None:
    path = save_model(tiny_model, tmp_path)
    loaded = load_model(path)
    assert torch.equal(loaded.entity_embeddings, tiny_model.entity_embeddings)
    assert torch.equal(loaded.triples, tiny_model.triples)
    assert torch.equal(loaded.negatives, tiny_model.negatives)
    assert torch.equal(loaded.test_triples, tiny_model.test_triples)
    assert loaded.entity_labels == tiny_model.entity_labels
    assert loaded.entity_names == tiny_model.entity_names
    assert loaded.schema == tiny_model.schema and loaded.config == tiny_model.config
    config = read_config(path)
    assert config["data_hash"] == tiny_model.data_hash and config["seed"] == tiny_model.config.seed
    assert {"versions", "final_loss", "train_seconds"} <= set(config)
    header = (path / "entities.tsv").read_text().splitlines()[0]
    assert header == "id\tlabel\tname"


def test_pykeen_model_scores_like_the_stored_weights(tiny_model) -> None:
    module = pykeen_model(tiny_model)
    hrt = tiny_model.triples[:20]
    E, R = tiny_model.entity_embeddings, tiny_model.relation_embeddings
    expected = -((E[hrt[:, 0]] + R[hrt[:, 1]] - E[hrt[:, 2]]) ** 2).sum(-1)
    assert torch.allclose(module.score_hrt(hrt).squeeze(-1), expected, atol=1e-5)


def test_replacing_a_model_is_atomic_and_leaves_no_temporaries(tiny_model, tmp_path: Path) -> None:
    save_model(tiny_model, tmp_path)
    changed = replace(tiny_model, influence_scale=0.25)
    save_model(changed, tmp_path, overwrite=True)
    assert load_model(tmp_path / tiny_model.name).influence_scale == 0.25
    assert [p.name for p in tmp_path.iterdir()] == [tiny_model.name]


def test_a_failed_write_keeps_the_old_model(tiny_model, tmp_path: Path) -> None:
    save_model(tiny_model, tmp_path)
    broken = replace(tiny_model, weights={"entity_embeddings": "not a tensor"})
    with pytest.raises(AttributeError):
        save_model(broken, tmp_path, overwrite=True)
    assert torch.equal(load_model(tmp_path / tiny_model.name).entity_embeddings, tiny_model.entity_embeddings)
    assert list_models(tmp_path) == [tiny_model.name]


def test_partial_directories_are_never_listed_or_loaded(tiny_model, tmp_path: Path) -> None:
    path = save_model(tiny_model, tmp_path)
    partial = tmp_path / "half-written"
    shutil.copytree(path, partial)
    (partial / "training.safetensors").unlink()
    shutil.copytree(path, tmp_path / ".tmp-job-123")
    assert list_models(tmp_path) == [tiny_model.name]
    with pytest.raises(ModelStoreError, match="incomplete model directory, missing training.safetensors"):
        load_model(partial)
    with pytest.raises(ModelStoreError, match="no model at"):
        load_model(tmp_path / "nothing")


def test_corrupt_files_are_reported_not_unpickled(tiny_model, tmp_path: Path) -> None:
    path = save_model(tiny_model, tmp_path)
    # A pickle where the weights should be: safetensors refuses it, nothing is executed.
    torch.save({"entity_embeddings": torch.zeros(2)}, path / "model.safetensors")
    with pytest.raises(ModelStoreError, match=str(path)):
        load_model(path)
    path = save_model(tiny_model, tmp_path, overwrite=True)
    (path / "config.json").write_text("{not json")
    with pytest.raises(ModelStoreError, match="config.json"):
        load_model(path)
    path = save_model(tiny_model, tmp_path, overwrite=True)
    lines = (path / "entities.tsv").read_text().splitlines()
    (path / "entities.tsv").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(ModelStoreError, match="entity_embeddings does not match the id maps"):
        load_model(path)


def test_model_files_are_the_documented_ones(tiny_model, tmp_path: Path) -> None:
    path = save_model(tiny_model, tmp_path)
    assert sorted(p.name for p in path.iterdir()) == sorted(MODEL_FILES)
    config = json.loads((path / "config.json").read_text())
    for key in ("dataset", "data_hash", "schema", "model", "dim", "epochs", "batch_size", "lr", "margin",
                "damping", "l2", "influence_scale", "seed", "versions", "final_loss", "train_seconds"):
        assert key in config, key


# --- nothing destroys data ------------------------------------------------------------------------
def test_a_directory_that_is_not_a_model_is_never_replaced(tiny_model, tmp_path: Path) -> None:
    precious = tmp_path / tiny_model.name
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    with pytest.raises(ModelStoreError, match="is not a kgbias model directory: refusing to replace it"):
        save_model(tiny_model, tmp_path, overwrite=True)
    assert (precious / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == [tiny_model.name]


def test_an_existing_model_is_replaced_only_when_asked(tiny_model, tmp_path: Path) -> None:
    save_model(tiny_model, tmp_path)
    with pytest.raises(ModelStoreError, match="already holds a model: pass --force"):
        save_model(replace(tiny_model, influence_scale=0.5), tmp_path, overwrite=False)
    assert load_model(tmp_path / tiny_model.name).influence_scale == tiny_model.influence_scale


@pytest.mark.parametrize("name", ["..", ".", "../escape", "a/b", "", ".hidden", "x\ny"])
def test_model_names_never_leave_the_store(tiny_model, tmp_path: Path, name: str) -> None:
    store = tmp_path / "store"
    with pytest.raises(ModelStoreError, match="is not a model name"):
        save_model(replace(tiny_model, name=name), store)
    assert not (tmp_path / "escape").exists() and not store.exists()


def test_the_model_being_read_is_never_the_output(tiny_model, tmp_path: Path) -> None:
    path = save_model(tiny_model, tmp_path)
    with pytest.raises(ModelStoreError, match="is the model being read"):
        check_output(tmp_path / "." / tiny_model.name, overwrite=True, reading=path)


def test_orphans_of_dead_writers_are_cleaned_live_ones_kept(tiny_model, tmp_path: Path) -> None:
    save_model(tiny_model, tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = tmp_path / f".tmp-{tiny_model.name}-{int(dead.stdout)}-{'0' * 32}"
    live = tmp_path / f".old-{tiny_model.name}-{os.getpid()}-{'1' * 32}"
    orphan.mkdir(), live.mkdir()
    assert list_models(tmp_path) == [tiny_model.name]
    assert not orphan.exists() and live.exists()


def test_every_model_file_is_world_readable(tiny_model, tmp_path: Path) -> None:
    path = save_model(tiny_model, tmp_path)
    assert {oct(p.stat().st_mode & 0o777) for p in path.iterdir()} == {oct(0o644)}


def test_non_finite_weights_are_refused_naming_the_tensor(tiny_model, tmp_path: Path) -> None:
    entities = tiny_model.entity_embeddings.clone()
    entities[3, 1] = float("nan")
    entities[5, 0] = float("inf")
    weights = {**tiny_model.weights, "entity_embeddings": entities}
    path = save_model(replace(tiny_model, weights=weights), tmp_path)
    with pytest.raises(ModelStoreError, match="tensor 'entity_embeddings' holds 2 NaN or infinite values"):
        load_model(path)


def test_an_unknown_model_kind_in_the_config_is_one_clear_error(tiny_model, tmp_path: Path) -> None:
    path = save_model(tiny_model, tmp_path)
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, "model": "transformer"}))
    with pytest.raises(ModelStoreError, match="unknown model 'transformer': choose one of transe, distmult"):
        load_model(path)


def test_a_full_disk_is_one_error_and_keeps_the_old_model(tiny_model, tmp_path: Path) -> None:
    """A real write failure: the writer's file-size limit makes the OS refuse the weights (EFBIG)."""
    save_model(tiny_model, tmp_path)
    script = f"""
import resource, signal, sys
from dataclasses import replace
import torch
from kgbias_core.embeddings.store import load_model, save_model
from kgbias_core.errors import ModelStoreError
model = load_model({str(tmp_path / tiny_model.name)!r})
big = replace(model, weights={{**model.weights, "entity_embeddings": torch.zeros(200_000, 16)}})
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.RLIM_INFINITY))
try:
    save_model(big, {str(tmp_path)!r}, overwrite=True)
except ModelStoreError as error:
    print(error)
    sys.exit(2)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert "could not write the model" in result.stdout and "previous model is intact" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    assert torch.equal(load_model(tmp_path / tiny_model.name).entity_embeddings, tiny_model.entity_embeddings)
    assert list_models(tmp_path) == [tiny_model.name]


# --- faults: a killed save, two writers ----------------------------------------------------------
_KILL_AT_REPLACE = """
import os, signal, sys
from dataclasses import replace
from kgbias_core.embeddings import store
model = store.load_model(sys.argv[1])
calls = []
real = os.replace
def dying_replace(src, dst):
    calls.append(src)
    if len(calls) == int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)  # the kill -9 of the issue, at this rename
    real(src, dst)
store.os.replace = dying_replace
store.save_model(replace(model, influence_scale=float(sys.argv[4])), sys.argv[2], overwrite=True)
"""


@pytest.mark.parametrize(("kill_at", "survivor"), [(1, "old"), (2, "new")])
def test_a_save_killed_at_either_rename_leaves_a_loadable_model(
    tiny_model, tmp_path: Path, kill_at: int, survivor: str
) -> None:
    """The issue's fault: killed between the two renames (kill_at 2), the old model sat in `.old-`, the new
    complete one in `.tmp-`, and the next listing deleted both. Now the listing rolls forward to the new one."""
    store = tmp_path / "store"
    path = save_model(replace(tiny_model, influence_scale=0.25), store)
    result = subprocess.run([sys.executable, "-B", "-c", _KILL_AT_REPLACE, str(path), str(store), str(kill_at), "0.75"],
                            capture_output=True, text=True)
    assert result.returncode == -9, result.stderr
    if kill_at == 2:  # the kill really came between the renames: no model under its name
        assert not path.exists() and len([p for p in store.iterdir() if p.name.startswith(".")]) >= 2
    assert list_models(store) == [tiny_model.name]
    assert load_model(path).influence_scale == (0.25 if survivor == "old" else 0.75)
    assert [p.name for p in store.iterdir()] == [tiny_model.name]  # scratch and claim gone
    assert torch.equal(load_model(path).entity_embeddings, tiny_model.entity_embeddings)


def test_a_save_killed_between_renames_is_recovered_by_the_next_save(tiny_model, tmp_path: Path) -> None:
    """Without a listing in between: the next save of the name first restores the model, so a save without
    --force is refused as over an existing model instead of silently creating one."""
    store = tmp_path / "store"
    path = save_model(replace(tiny_model, influence_scale=0.25), store)
    subprocess.run([sys.executable, "-B", "-c", _KILL_AT_REPLACE, str(path), str(store), "2", "0.75"], check=False)
    with pytest.raises(ModelStoreError, match="already holds a model"):
        save_model(tiny_model, store)
    assert load_model(path).influence_scale == 0.75


def test_two_writers_of_one_name_the_second_is_refused(tiny_model, tmp_path: Path, monkeypatch) -> None:
    """The issue's race: both writers' existence checks ran before either renamed; both said `saved`, one
    model was lost. The claim makes the second one fail with one line while the first writes."""
    import threading

    from kgbias_core.embeddings import store as store_module

    writing, go = threading.Event(), threading.Event()
    real = store_module._write_model_files

    def slow_write(model, folder):
        writing.set()
        assert go.wait(30)
        real(model, folder)

    monkeypatch.setattr(store_module, "_write_model_files", slow_write)
    first = threading.Thread(target=save_model, args=(replace(tiny_model, influence_scale=0.25), tmp_path))
    first.start()
    assert writing.wait(30)
    monkeypatch.setattr(store_module, "_write_model_files", real)
    try:
        with pytest.raises(ModelStoreError, match=r"is being written by another kgbias process \(pid \d+\)"):
            save_model(replace(tiny_model, influence_scale=0.75), tmp_path)
    finally:
        go.set()
        first.join()
    assert load_model(tmp_path / tiny_model.name).influence_scale == 0.25
    with pytest.raises(ModelStoreError, match="already holds a model"):  # after the first: the usual refusal
        save_model(replace(tiny_model, influence_scale=0.75), tmp_path)


_HOLD_CLAIM = """
import sys, time
from pathlib import Path
from kgbias_core.embeddings.claims import Claim
claim = Claim(Path(sys.argv[1]), sys.argv[2])
assert claim.acquire()
print("held", flush=True)
time.sleep(60)
"""


def test_a_claim_of_another_process_refuses_and_a_dead_ones_is_recovered(tiny_model, tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-B", "-c", _HOLD_CLAIM, str(tmp_path), tiny_model.name],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ModelStoreError, match=f"pid {holder.pid}"):
            save_model(tiny_model, tmp_path)
        assert not (tmp_path / tiny_model.name).exists()
    finally:
        holder.kill()
        holder.wait()
    assert (tmp_path / f".lock-{tiny_model.name}").exists()  # killed: its claim file stays, stale
    save_model(tiny_model, tmp_path)  # the kernel released the dead holder's lock: the claim is recovered
    assert list_models(tmp_path) == [tiny_model.name]
    assert [p.name for p in tmp_path.iterdir()] == [tiny_model.name]


def test_retrain_refusal_names_why_a_model_cannot_be_retrained_here(tiny_model) -> None:
    """A model trained here can be retrained (None); an import (no frozen negatives) and a debiased model cannot, each
    with the named error its frozen negatives raise, which the pages show instead of a retrain button."""
    from kgbias_core.errors import DEBIASED_NO_RETRAIN, NO_NEGATIVES_IMPORTED

    assert tiny_model.retrain_refusal() is None
    imported = replace(tiny_model, name="imp", negatives=None, info={**tiny_model.info, "imported_from": "npy"})
    assert imported.retrain_refusal() == NO_NEGATIVES_IMPORTED.format(model="imp", source="npy")
    debiased = replace(tiny_model, name="proj", info={**tiny_model.info, "debias": {"method": "project"}})
    assert debiased.retrain_refusal() == DEBIASED_NO_RETRAIN.format(model="proj", method="project")
