"""Executors read back only files of this user's own, and never run code from them: the block
directories are checked (owner, mode, no link) and kernel states hold data, not pickles."""

from __future__ import annotations

import glob
import os
import pickle
import struct

import numpy as np
import pytest

from sparkrank.data.block import RankingData
from sparkrank.engines.spark import kernel_state, store as blocks
from sparkrank.io.spark.errors import UnsafeDirectoryError
from sparkrank.engines.spark.state_files import StateFileError, read_state, write_state

OTHER_UID = 12345


def _owner() -> blocks.Owner:
    return blocks.Owner.of_this_driver("app-test")


def test_a_new_block_directory_is_this_users_alone(tmp_path):
    app = blocks.app_dir(_owner(), str(tmp_path))
    for path in (app, os.path.dirname(app)):
        st = os.stat(path)
        assert st.st_uid == os.getuid() and st.st_mode & 0o777 == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_a_directory_others_may_write_is_refused_by_name(tmp_path, mode):
    root = blocks.blocks_root(str(tmp_path))
    os.mkdir(root)
    os.chmod(root, mode)
    with pytest.raises(UnsafeDirectoryError, match=f"unsafe block directory {root}: its mode {mode:04o} lets"):
        blocks.app_dir(_owner(), str(tmp_path))
    assert os.listdir(root) == []


def test_a_directory_of_another_user_is_refused_by_name(tmp_path):
    root = blocks.blocks_root(str(tmp_path))
    os.mkdir(root, 0o700)
    os.chown(root, OTHER_UID, OTHER_UID)
    with pytest.raises(UnsafeDirectoryError, match=f"{root}: it belongs to uid {OTHER_UID}, not to this user"):
        blocks.app_dir(_owner(), str(tmp_path))
    # the application's directory inside a good root is checked too
    os.chown(root, os.getuid(), os.getgid())
    app = os.path.join(root, "app-test")
    os.mkdir(app, 0o700)
    os.chown(app, OTHER_UID, OTHER_UID)
    with pytest.raises(UnsafeDirectoryError, match=f"{app}: it belongs to uid {OTHER_UID}"):
        blocks.app_dir(_owner(), str(tmp_path))


def test_a_link_is_refused(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    root = blocks.blocks_root(str(tmp_path))
    os.symlink(target, root)
    with pytest.raises(UnsafeDirectoryError, match="it is a symbolic link"):
        blocks.app_dir(_owner(), str(tmp_path))


def test_a_readable_directory_of_this_user_is_narrowed(tmp_path):
    """What sparkrank made before it asked for 0700 (the umask's 0755): no one else could write in it."""
    root = blocks.blocks_root(str(tmp_path))
    os.mkdir(root)
    os.chmod(root, 0o755)
    blocks.app_dir(_owner(), str(tmp_path))
    assert os.stat(root).st_mode & 0o777 == 0o700


def test_an_executor_checks_the_directory_before_reading_a_block(tmp_path):
    app = blocks.app_dir(_owner(), str(tmp_path))
    data = RankingData.from_arrays(np.eye(3), [1.0, 0.0, 2.0], [1, 1, 2])
    part = os.path.join(app, "store", "part-00000")
    blocks._write_block(part, data)
    os.chmod(app, 0o777)
    blocks._CHECKED.discard(app)  # a Python worker that has not read from it yet
    with pytest.raises(UnsafeDirectoryError, match=f"unsafe block directory {app}"):
        blocks.open_block(part, 3)
    os.chmod(app, 0o700)
    block = blocks.open_block(part, 3)
    np.testing.assert_array_equal(block.groups.labels, data.groups.labels)
    blocks.remove_store([part])


class _Marker:
    """Unpickling this creates the marker file: what a crafted state file would have done."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return open, (self.path, "w")


def _pickle_state_file(marker: str) -> bytes:
    """A state file as the pickle format had it (sizes, then the pickle), whose pickle runs code."""
    payload = pickle.dumps(_Marker(marker), protocol=5)
    return struct.pack("<QQ", len(payload), 0) + payload


def test_a_tampered_state_file_is_never_executed(tmp_path):
    marker = str(tmp_path / "marker")
    state_dir = str(tmp_path)
    for content in (_pickle_state_file(marker), b"\x80\x05garbage" * 100, b"",
                    b"SPARKRANK-STATE-1\n" + struct.pack("<Q", 10) + b'{"tree": 1',
                    b"SPARKRANK-STATE-1\n" + struct.pack("<Q", 61) + b'{"tree": {"array": 0}, "arrays": [["|O", [1], 0, 8]]}'
                    + bytes(64)):
        with open(kernel_state._state_file(state_dir, 1), "wb") as f:
            f.write(content)
        assert kernel_state.read_state(state_dir, 1) is None  # recomputed from its recipe, as a lost one
        with pytest.raises(StateFileError):
            read_state(kernel_state._state_file(state_dir, 1))
    assert not os.path.exists(marker)


def test_a_state_file_holds_numbers_only(tmp_path):
    path = str(tmp_path / "s.bin")
    state = [(np.float32(2.5), [np.arange(3, dtype=np.uint8), True, None, 1.5, -3]), None]
    write_state(path, state)
    back = read_state(path)
    assert back[1] is None and back[0][1][1:] == [True, None, 1.5, -3]
    assert type(back[0][0]) is np.float32 and back[0][0] == 2.5
    np.testing.assert_array_equal(back[0][1][0], np.arange(3, dtype=np.uint8))
    with pytest.raises(TypeError, match="may not hold an array of object"):
        write_state(path, [np.array([object()])])
    with pytest.raises(TypeError, match="may not hold a dict"):
        write_state(path, [{"a": 1}])


def test_tampered_states_on_spark_are_recomputed_not_run(spark, tmp_path, caplog, monkeypatch):
    """A fit whose kept states are replaced, between iterations, by files whose pickle would create
    a marker and by garbage: the marker never appears and the fit ends in the undisturbed model."""
    from sparkrank.io.files import write_parquet
    from sparkrank.datasets import make_ranking_data
    from sparkrank.engines import tiles
    from sparkrank.engines.spark import SparkEngine
    from sparkrank.training import train

    data, _ = make_ranking_data(900, 6, rows_per_group=20, n_levels=3, density=0.6, seed=7)
    path = str(tmp_path / "train.parquet")
    write_parquet(path, data)
    marker = str(tmp_path / "marker")
    monkeypatch.setattr(tiles, "TILE_BYTES", 3000)  # a state per tile, several per block
    with SparkEngine(spark.read.parquet(path), placement="executor", num_partitions=2) as engine:
        undisturbed = train(engine, solver="tron", C=0.1)
        store = os.path.join(blocks.blocks_root(engine.local_dir), engine.owner.app_id, engine.store_id)
        tampered = []

        def tamper(record):
            if record.accepted and record.iteration in (1, 2):
                for i, f in enumerate(sorted(glob.glob(os.path.join(store, "part-*", "state-*.bin")))):
                    with open(f, "wb") as out:
                        out.write(_pickle_state_file(marker) if (i + record.iteration) % 2 else os.urandom(4096))
                    tampered.append(f)

        disturbed = train(engine, solver="tron", C=0.1, callback=tamper)
    assert tampered, "no kept state was found to tamper with"
    assert not os.path.exists(marker)
    assert "recomputing it from its recipe" in caplog.text
    np.testing.assert_array_equal(disturbed.weights, undisturbed.weights)
    assert disturbed.summary["iterations"] == undisturbed.summary["iterations"]


def test_the_command_line_refuses_an_unsafe_directory_in_one_line(spark, tmp_path, monkeypatch, capsys):
    """Local mode: the driver checks the executors' directory (on its own host) before any task."""
    from sparkrank.cli import main
    from sparkrank.io.files import write_parquet
    from sparkrank.datasets import make_ranking_data

    data, _ = make_ranking_data(200, 4, rows_per_group=10, seed=1)
    path = str(tmp_path / "train.parquet")
    write_parquet(path, data)
    root = str(tmp_path / "sparkrank-blocks-victim")
    os.mkdir(root, 0o700)
    os.chown(root, OTHER_UID, OTHER_UID)
    monkeypatch.setattr(blocks, "blocks_root", lambda local_dir=None: root)
    code = main(["train", "--engine", "spark", "--input", path, "--model", str(tmp_path / "m.json"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"sparkrank train: error: unsafe block directory {root}: it belongs to uid {OTHER_UID}, not to this user "
        f"(uid {os.getuid()}); sparkrank keeps block and kernel-state files only in a directory of this user's own "
        "that no one else may write (remove it, or point SPARK_LOCAL_DIRS / spark.local.dir elsewhere)")
    assert not (tmp_path / "m.json").exists()
