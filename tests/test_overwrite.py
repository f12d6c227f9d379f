"""`overwrite` replaces a folder holding an earlier output of the same kind, never one holding anything else: `assign
--out top --overwrite` beside the input graph in `top/g` deleted the graph, and a store prefix was deleted whole."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from graphshard.assign import AssignOptions, assign
from graphshard.errors import GraphshardError
from graphshard.generate import generate_rmat
from graphshard.shuffle import ShuffleOptions, shuffle
from graphshard.storage import Storage


@pytest.fixture()
def top(tmp_path, rmat_small) -> Path:
    """A folder holding the input graph (in g/) and a user's notes."""
    folder = tmp_path / "top"
    shutil.copytree(rmat_small.parent, folder / "g")
    (folder / "notes.txt").write_text("mine")
    return folder


def _refused(call, what: str) -> str:
    with pytest.raises(GraphshardError) as err:
        call()
    line = str(err.value)
    assert "--overwrite replaces the whole folder" in line and f"not part of {what}" in line and "\n" not in line
    return line


def test_no_writer_replaces_a_folder_of_other_files(top, tmp_path, dask_cluster_client):
    graph = top / "g" / "metadata.json"
    line = _refused(lambda: assign(graph, top, 2, AssignOptions(), overwrite=True), "an assignment")
    assert "holds g/, notes.txt," in line
    asg = assign(graph, tmp_path / "asg", 2, AssignOptions())
    _refused(lambda: shuffle(graph, asg, top, ShuffleOptions(), dask_cluster_client, overwrite=True),
             "a partition set")
    _refused(lambda: generate_rmat(top, nodes=100, edges=500, overwrite=True), "a chunked graph")
    assert (top / "notes.txt").read_text() == "mine" and graph.is_file()
    out = shuffle(graph, asg, tmp_path / "named", ShuffleOptions(), dask_cluster_client)
    (out.parent / "part0" / "mynotes.txt").write_text("mine")  # one file in the way is named, not its folder
    again = lambda: shuffle(graph, asg, out.parent, ShuffleOptions(), dask_cluster_client, overwrite=True)  # noqa: E731
    assert "holds part0/mynotes.txt, not part of" in _refused(again, "a partition set")
    # an earlier output of the same kind (with a set's report beside it) is replaced, not a text file of the user's
    (asg / "README.txt").write_text("mine")
    assert "holds README.txt, not part of an assignment" in _refused(
        lambda: assign(graph, asg, 3, AssignOptions(), overwrite=True), "an assignment")
    (asg / "README.txt").unlink()
    assign(graph, asg, 3, AssignOptions(), overwrite=True)
    out = shuffle(graph, asg, tmp_path / "set", ShuffleOptions(), dask_cluster_client)
    (out.parent / "report.json").write_text("{}")
    shuffle(graph, asg, tmp_path / "set", ShuffleOptions(), dask_cluster_client, overwrite=True)
    assert generate_rmat(top / "g", nodes=100, edges=500, overwrite=True) == graph


def test_a_store_prefix_of_other_objects_is_not_deleted(s3_env, rmat_small, tmp_path, dask_cluster_client):
    bucket, storage = s3_env.new_bucket(), Storage()
    storage.write_bytes(f"{bucket}/out/notes.txt", b"mine")
    asg = assign(rmat_small, tmp_path / "asg", 2, AssignOptions())
    _refused(lambda: assign(rmat_small, f"{bucket}/out", 2, AssignOptions(), overwrite=True), "an assignment")
    _refused(lambda: shuffle(rmat_small, asg, f"{bucket}/out", ShuffleOptions(), dask_cluster_client,
                             overwrite=True), "a partition set")
    assert storage.read_bytes(f"{bucket}/out/notes.txt") == b"mine"
