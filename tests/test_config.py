"""The pipeline config: parsing, overrides, and bad configs rejected in one line before any work starts."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
import yaml

from graphshard.cli import main
from graphshard.errors import InputError
from graphshard.pipeline.config import PipelineConfig, load_config
from graphshard.plan.fit import host_memory, worker_limit
from graphshard.shuffle.graphbolt import missing_modules

REPO = Path(__file__).resolve().parents[1]


def write_config(folder: Path, metadata: Path, **changes) -> Path:
    """A valid config in `folder` (paths relative to it where possible), with top-level `changes` merged in."""
    data = {"input": {"metadata": str(metadata)}, "output": {"dir": "out"}, "work_dir": "work", "num_parts": 2,
            "cluster": {"workers": 1}}
    data.update(changes)
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_shipped_configs_parse():
    for name in ("example.yaml", "mag.yaml", "cluster.yaml", "multilevel.yaml"):
        cfg = load_config(REPO / "configs" / name)
        assert isinstance(cfg, PipelineConfig)
        if name == "cluster.yaml":  # every location on the compose stack's S3 service (no shared volume)
            assert cfg.input.metadata.url.startswith("s3://") and cfg.output.dir.url.startswith("s3://")
        else:
            assert cfg.input.metadata.is_absolute() and cfg.output.dir.is_absolute()
    example = load_config(REPO / "configs" / "example.yaml")
    assert example.input.metadata == (REPO / "data/example/metadata.json").resolve()
    assert example.work == (REPO / "work/example").resolve()


def test_relative_paths_and_defaults(tmp_path, rmat_small):
    cfg = load_config(write_config(tmp_path, rmat_small))
    assert cfg.output.dir == tmp_path / "out" and cfg.work == tmp_path / "work"
    assert cfg.assign.method == "random" and cfg.shuffle.halo_hops == 1 and cfg.validate_.enabled
    data = yaml.safe_load((tmp_path / "run.yaml").read_text())
    del data["work_dir"]
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(data))
    assert load_config(tmp_path / "run.yaml").work == tmp_path / "out.work"


def test_config_path_under_home(tmp_path, rmat_small, monkeypatch):
    """`~` in the config's own path is the home folder: a deployment's `config` parameter has no shell to expand it."""
    monkeypatch.setenv("HOME", str(tmp_path))
    config = write_config(tmp_path, rmat_small)
    assert load_config("~/run.yaml").source == config


def test_overrides_are_yaml_typed(tmp_path, rmat_small):
    cfg = load_config(write_config(tmp_path, rmat_small), [
        "assign.method=metis", "num_parts=3", "shuffle.graph_formats=[coo, csc]", "validate.full=true",
        "cluster.memory_limit=1GB", "output.dir=elsewhere"])
    assert (cfg.assign.method, cfg.num_parts, cfg.shuffle.graph_formats) == ("metis", 3, ["coo", "csc"])
    assert cfg.validate_.full is True and cfg.cluster.memory_limit == "1GB"
    assert cfg.output.dir == tmp_path / "elsewhere"


def test_a_bad_override_is_named_as_the_set_that_gave_it(tmp_path, rmat_small):
    """`--set num_part=3` named the YAML file, although the key came from the command line."""
    config = write_config(tmp_path, rmat_small)
    for item, words in (("num_part=3", "field 'num_part': expected a known key (did you mean 'num_parts'?)"),
                        ("cluster.workers=two", "field 'cluster.workers': expected a valid integer")):
        with pytest.raises(InputError) as err:
            load_config(config, ["assign.seed=3", item])
        key = item.partition("=")[0]
        assert str(err.value).startswith(f"--set {key}=... (over {config}): {words}"), str(err.value)
    with pytest.raises(InputError) as err:  # a problem of the file itself stays the file's
        load_config(write_config(tmp_path, rmat_small, num_parts="4"), ["assign.seed=3"])
    assert str(err.value).startswith(f"{config}: field 'num_parts'")


def test_memory_limit_in_bytes_as_local_cluster_takes_it(tmp_path, rmat_small):
    """A plain byte count is a memory limit as LocalCluster reads it; the plan resolves it to the same bytes."""
    cfg = load_config(write_config(tmp_path, rmat_small, cluster={"memory_limit": 2_000_000_000}))
    assert cfg.cluster.spec().memory_limit == 2_000_000_000
    assert worker_limit(cfg.cluster.memory_limit, 2, 1) == min(2_000_000_000, host_memory())


def test_yaml_merge_keys_may_be_overridden(tmp_path, rmat_small):
    """Duplicate keys are refused, but a key given again after `<<: *anchor` is YAML's override, not a duplicate."""
    (tmp_path / "run.yaml").write_text(f"input: {{metadata: {rmat_small}}}\noutput: {{dir: out}}\nnum_parts: 2\n"
                                       "cluster: {workers: 3}\n"
                                       "assign: {method: metis, metis: {<<: {objtype: vol, metis_niter: 4}, "
                                       "metis_niter: 7}}\n")
    cfg = load_config(tmp_path / "run.yaml")
    assert (cfg.assign.objtype, cfg.assign.metis_niter, cfg.cluster.workers) == ("vol", 7, 3)


def test_cache_sections_are_json():
    cfg = load_config(REPO / "configs" / "example.yaml")
    assert cfg.section("assign")["method"] == "random"
    assert cfg.section("validate") == {"enabled": True, "full": True, "seed": 0, "remote_share": True}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _case_output_inside_input(tmp, meta):
    return write_config(tmp, meta, output={"dir": str(meta.parent / "parts")}), "output.dir"


def _case_output_exists(tmp, meta):
    (tmp / "out").mkdir()
    (tmp / "out" / "keep.txt").write_text("mine")
    return write_config(tmp, meta), "output.dir"


def _case_overwrite_over_other_files(tmp, meta):
    """output.overwrite replaces the folder whole: one holding the config itself and notes is refused."""
    (tmp / "out").mkdir()
    (tmp / "out" / "part0").mkdir()
    (tmp / "out" / "part0" / "graph.dgl").write_bytes(b"")  # an earlier set's file, which may go
    (tmp / "out" / "notes.txt").write_text("mine")
    return write_config(tmp, meta, output={"dir": "out", "overwrite": True}), \
        "expected a folder holding only an earlier partition set, which is replaced whole"


def _case_graph_named_report(tmp, meta):
    """Validation's report.json would replace the partition config report.json."""
    shutil.copytree(meta.parent, tmp / "g")
    data = json.loads((tmp / "g" / "metadata.json").read_text())
    (tmp / "g" / "metadata.json").write_text(json.dumps({**data, "graph_name": "report"}))
    return write_config(tmp, tmp / "g" / "metadata.json"), "field 'graph_name': expected a name other than 'report'"


def _case_output_is_a_file(tmp, meta):
    (tmp / "out").write_text("mine")
    return write_config(tmp, meta, output={"dir": "out", "overwrite": True}), "expected a folder (or a path that " \
        "does not exist yet), found " + str(tmp / "out") + ", a file"


def _case_work_dir_is_a_file(tmp, meta):
    (tmp / "cache").write_text("mine")
    return write_config(tmp, meta, work_dir="cache/sub"), "field 'work_dir': expected a folder (or a path that " \
        "does not exist yet), found " + str(tmp / "cache") + ", a file"


# (name, builder(tmp, metadata) -> (config path, words the message must contain), extra CLI arguments)
BAD = [
    ("missing config file", lambda t, m: (t / "nope.yaml", "no such file"), []),
    ("config is a folder", lambda t, m: (t, f"{t}: expected an existing YAML config file, found a folder"), []),
    ("yaml syntax", lambda t, m: (_text(t, "input: {metadata: [\n"), "valid YAML"), []),
    ("tab indentation", lambda t, m: (_text(t, "input:\n\tmetadata: x\n"), "expected valid YAML, found "
                                      "character '\\t' that cannot start any token at line 2 column 1"), []),
    ("not a mapping", lambda t, m: (_text(t, "- a\n- b\n"), "mapping"), []),
    ("duplicate key", lambda t, m: (_text(t, f"input: {{metadata: {m}}}\noutput: {{dir: out}}\nnum_parts: 2\n"
                                             "num_parts: 3\n"), "key 'num_parts' given twice (first at line 3)"), []),
    ("duplicate nested key", lambda t, m: (_text(t, f"input: {{metadata: {m}}}\noutput: {{dir: out, dir: o2}}\n"
                                                    "num_parts: 2\n"), "key 'dir' given twice"), []),
    ("null location", lambda t, m: (write_config(t, m, output={"dir": None}),
                                    "field 'output.dir': expected a path or a URL, found null"), []),
    ("URL without a bucket", lambda t, m: (write_config(t, m, work_dir="s3://"),
                                           "run.yaml: field 'work_dir': s3://: expected s3://<bucket>"), []),
    ("unknown URL protocol", lambda t, m: (write_config(t, m, work_dir="foo://x/y"),
                                           "run.yaml: work_dir: foo://x/y: unknown storage protocol 'foo'"), []),
    ("not UTF-8", lambda t, m: (_bytes(t, b"num_parts: 2\noutput: {dir: caf\xe9}\n"),
                                "expected a UTF-8 text file (save the config as UTF-8), found byte 0xe9"), []),
    ("missing input", lambda t, m: (write_config(t, t / "absent" / "metadata.json"), "input.metadata"), []),
    ("unknown top-level key", lambda t, m: (write_config(t, m, num_part=4), "did you mean 'num_parts'"), []),
    ("unknown nested key", lambda t, m: (write_config(t, m, assign={"methd": "metis"}),
                                         "did you mean 'assign.method'"), []),
    ("wrong type", lambda t, m: (write_config(t, m, num_parts="four"), "num_parts"), []),
    ("string for int", lambda t, m: (write_config(t, m, cluster={"workers": "2"}), "cluster.workers"), []),
    ("num_parts 0", lambda t, m: (write_config(t, m, num_parts=0), "num_parts"), []),
    ("num_parts above nodes", lambda t, m: (write_config(t, m, num_parts=10**9), "at most the number of nodes"), []),
    ("unknown method", lambda t, m: (write_config(t, m, assign={"method": "spectral"}), "assign.method"), []),
    ("bad graph format", lambda t, m: (write_config(t, m, shuffle={"graph_formats": ["coo", "xml"]}),
                                       "shuffle.graph_formats"), []),
    ("unreachable scheduler", lambda t, m: (write_config(
        t, m, cluster={"address": f"tcp://127.0.0.1:{_closed_port()}", "connect_timeout": 0.5}),
        "cannot reach Dask scheduler"), []),
    ("malformed scheduler address", lambda t, m: (write_config(t, m, cluster={"address": "localhost"}),
                                                  "cluster.address"), []),
    ("output inside input", _case_output_inside_input, []),
    ("output exists", _case_output_exists, []),
    ("output is a file", _case_output_is_a_file, []),
    ("work_dir under a file", _case_work_dir_is_a_file, []),
    ("work_dir inside output", lambda t, m: (write_config(t, m, work_dir="out/work"), "work_dir"), []),
    ("graph named report", _case_graph_named_report, []),
    ("overwrite over other files", _case_overwrite_over_other_files, []),
    ("output at the filesystem root", lambda t, m: (write_config(t, m, output={"dir": "/"}, work_dir=None),
                                                    "field 'work_dir': expected a work_dir in the config when "
                                                    "output.dir is /"), []),
    ("graph_name mismatch", lambda t, m: (write_config(t, m, graph_name="other"), "graph_name"), []),
    ("bad memory limit", lambda t, m: (write_config(t, m, cluster={"memory_limit": "lots"}), "memory_limit"), []),
    ("memory limit a bool", lambda t, m: (write_config(t, m, cluster={"memory_limit": True}), "memory_limit"), []),
    ("negative memory limit in bytes", lambda t, m: (write_config(t, m, cluster={"memory_limit": -5}),
                                                     "field 'cluster.memory_limit': expected a size like '4GB'"), []),
    ("negative memory limit", lambda t, m: (write_config(t, m, cluster={"memory_limit": "-1GB"}),
                                            "field 'cluster.memory_limit': expected a size like '4GB'"), []),
    ("file method without folder", lambda t, m: (write_config(t, m, assign={"method": "file"}), "assign.dir"), []),
    ("graphbolt choice without graphbolt", lambda t, m: (write_config(t, m), "output.store_eids"),
     ["--set", "output.store_eids=true"]),
    pytest.param("graphbolt without DGL", lambda t, m: (write_config(t, m), "output.graphbolt: GraphBolt output is "
                 "written by DGL's own converter"), ["--set", "output.graphbolt=true"],
                 marks=pytest.mark.skipif(not missing_modules(), reason="DGL and torch are installed")),
    ("malformed --set", lambda t, m: (write_config(t, m), "key.path=value"), ["--set", "num_parts"]),
    ("unknown --set key", lambda t, m: (write_config(t, m), "did you mean 'shuffle.halo_hops'"),
     ["--set", "shuffle.halo_hop=2"]),
    ("negative halo via --set", lambda t, m: (write_config(t, m), "shuffle.halo_hops"),
     ["--set", "shuffle.halo_hops=-1"]),
    ("no halo with several partitions", lambda t, m: (write_config(t, m), "field 'shuffle.halo_hops': expected at "
                                                   "least 1 with more than one partition"),
     ["--set", "shuffle.halo_hops=0"]),
]


def _text(folder: Path, text: str) -> Path:
    path = folder / "run.yaml"
    path.write_text(text)
    return path


def _bytes(folder: Path, data: bytes) -> Path:
    """A config file holding exactly `data` (e.g. Latin-1 text, not UTF-8)."""
    path = folder / "run.yaml"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("name,build,extra", BAD, ids=[getattr(b, "values", b)[0] for b in BAD])
def test_bad_config_one_line_before_work(name, build, extra, tmp_path, rmat_small, capsys):
    config, words = build(tmp_path, rmat_small)
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["run", str(config), *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("graphshard run: error: ")
    assert words in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no work folder, no output: nothing started


def test_unreachable_prefect_api_one_line(tmp_path, rmat_small, capsys, monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", f"http://127.0.0.1:{_closed_port()}/api")
    code = main(["run", str(write_config(tmp_path, rmat_small))])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "no Prefect server answers" in err, err
    assert not (tmp_path / "work").exists() and not (tmp_path / "out").exists()
