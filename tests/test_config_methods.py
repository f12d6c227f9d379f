"""Every method is one edit away: in every shipped config, `assign.method` alone switches to any method; an option
one method reads does not block the others (per-method blocks, or a one-line warning), and a real conflict is
refused before any work, naming the YAML key (the command line names the flag: tests/test_assign_errors.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from flow_helpers import REPO, run

from graphshard.assign.options import METHODS
from graphshard.cli import main
from graphshard.pipeline.config import load_config
from graphshard.pipeline.preflight import check_config

SHIPPED = sorted(p.name for p in (REPO / "configs").glob("*.yaml"))
GRAPH_OF = {"example.yaml": "rmat", "cluster.yaml": "rmat", "mag.yaml": "mag", "multilevel.yaml": "mag"}


def test_every_shipped_config_is_covered():
    assert set(SHIPPED) == set(GRAPH_OF)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", SHIPPED)
def test_method_override_parses_without_conflict_or_warning(name, method):
    cfg = load_config(REPO / "configs" / name, [f"assign.method={method}"])
    assert cfg.assign.method == method
    assert cfg._ignored == []  # the shipped configs keep each method's options in its own block


def _shipped(name: str, tmp_path: Path, metadata: Path, address: str) -> Path:
    """A shipped config with input, output, work folder and cluster pointed at this test's graph and cluster."""
    data = yaml.safe_load((REPO / "configs" / name).read_text())
    data.update(output={"dir": str(tmp_path / "out")}, work_dir=str(tmp_path / "work"), num_parts=3,
                cluster={"address": address})
    data["input"]["metadata"] = str(metadata)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def user_assignment(tmp_path_factory, rmat_small, mag_small) -> dict[str, Path]:
    """An assignment folder per test graph, as a user brings to method `file`."""
    out = {}
    for kind, md in (("rmat", rmat_small), ("mag", mag_small)):
        folder = tmp_path_factory.mktemp("assignment") / kind
        assert main(["assign", "--in", str(md), "--out", str(folder), "--num-parts", "3", "--seed", "5"]) == 0
        out[kind] = folder
    return out


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", ["example.yaml", "mag.yaml"])
def test_every_method_runs_from_every_shipped_graph_config(name, method, tmp_path, rmat_small, mag_small,
                                                           dask_address, user_assignment):
    if method == "parmetis" and shutil.which("mpirun") is None:
        pytest.skip("mpirun is not installed (scripts/setup-system.sh as root installs OpenMPI)")
    kind = GRAPH_OF[name]
    config = _shipped(name, tmp_path, {"rmat": rmat_small, "mag": mag_small}[kind], dask_address)
    overrides = [f"assign.method={method}"]
    if method == "file":  # the one method that needs a folder of the user's: its block names it
        overrides.append(f"assign.file.dir={user_assignment[kind]}")
    summary = run(config, overrides)
    assert summary["steps"]["validate"] == "Completed" and summary["method"] == method, summary
    assert Path(summary["partition_config"]) == tmp_path / "out" / f"{kind}.json"


def test_real_conflict_refused_before_any_work_naming_the_yaml_key(tmp_path, mag_small, capsys):
    config = _shipped("mag.yaml", tmp_path, mag_small, "tcp://127.0.0.1:1")  # no scheduler: no work may start
    code = main(["run", str(config), "--set", "assign.method=kaminpar",
                 "--set", "assign.balance_ntypes=[paper/train_mask]"])
    err = capsys.readouterr().err
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert f"{config}: assign.balance_ntypes: method 'kaminpar' cannot honour it" in lines[0]
    assert "move it under assign.metis or assign.parmetis or assign.multilevel" in lines[0]
    assert "--" not in lines[0].split("cannot honour")[1]  # YAML words for a YAML edit, no command-line flags
    assert not (tmp_path / "work").exists() and not (tmp_path / "out").exists()


def test_ignored_flat_option_is_one_warning_line(tmp_path, rmat_small):
    config = _shipped("example.yaml", tmp_path, rmat_small, "tcp://127.0.0.1:1")
    cfg = load_config(config, ["assign.method=metis", "assign.balanced=true", "cluster.address=null"])
    warnings: list[str] = []
    check_config(cfg, warn=warnings.append)
    assert warnings == [f"{config}: assign.balanced is ignored by method 'metis' (random only: this method balances "
                        "node counts itself, within ufactor)"]
    assert cfg.assign.balanced is False  # the ignored option neither changes the run nor its cache key
    assert cfg.section("assign") == load_config(config, ["assign.method=metis", "cluster.address=null"]).section(
        "assign")


def test_method_block_overrides_the_flat_value_and_other_blocks_are_not_read(tmp_path, rmat_small):
    config = _shipped("example.yaml", tmp_path, rmat_small, "tcp://127.0.0.1:1")
    cfg = load_config(config, ["assign.method=multilevel", "assign.multilevel_lp_rounds=3",
                               "assign.multilevel.multilevel_lp_rounds=5", "assign.metis.objtype=vol"])
    assert cfg.assign.multilevel_lp_rounds == 5 and cfg.assign.objtype == "cut"
    known = "known: fetch_refine_rounds, kaminpar_preset, kaminpar_threads"
    with pytest.raises(Exception, match=f"assign.kaminpar.balance_ntypes.*{known}"):
        load_config(config, ["assign.kaminpar.balance_ntypes=[_N]"])


def test_every_option_is_read_by_some_method():
    """A new option must be entered in HONOURS, else resolve() would silently reset it to its default."""
    from graphshard.assign.options import COMMON, HONOURS, FlatOptions

    assert set(FlatOptions.model_fields) == COMMON | set().union(*HONOURS.values())
