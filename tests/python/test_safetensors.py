# safetensors: round trips bit-exact, zero-copy views that outlive the dict,
# agreement with the safetensors package, sharded checkpoints, and a table of
# hostile files that must raise ValueError/TypeError (and make `kiln info`
# exit 1 with one line) instead of crashing.
import json
import struct

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.io
from io_util import cli_rejects

DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.uint8, np.int16, np.uint16,
          np.int32, np.uint32, np.int64, np.uint64, np.bool_, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]


def sample(rng, dtype, shape):
    if dtype == np.bool_:
        return np.asarray(rng.integers(0, 2, shape)).astype(bool)
    if np.issubdtype(np.dtype(dtype), np.integer):
        info = np.iinfo(dtype)
        return np.asarray(rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True))
    return np.asarray(rng.standard_normal(shape) * 3).astype(dtype)


def as_np(t):
    return np.asarray(t)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_bit_exact(tmp_path, rng, dtype):
    shapes = {"a": (3, 5), "b": (7,), "c": (), "d": (0, 4), "e": (2, 1, 3)}
    arrays = {k: sample(rng, dtype, s) for k, s in shapes.items()}
    path = tmp_path / "x.safetensors"
    kiln.io.save_file({k: kiln.from_numpy(v) for k, v in arrays.items()}, str(path))
    back = kiln.io.load_file(str(path))
    assert sorted(back) == sorted(arrays)
    for k, v in arrays.items():
        got = as_np(back[k])
        assert got.dtype == v.dtype and got.shape == v.shape
        assert got.tobytes() == v.tobytes()


def test_non_contiguous_and_metadata(tmp_path, rng):
    base = rng.standard_normal((6, 8)).astype(np.float32)
    t = kiln.from_numpy(base).t()  # a transposed view is written contiguous
    path = tmp_path / "t.safetensors"
    kiln.io.save_file({"w": t, "n": base[:, ::2]}, str(path), metadata={"format": "pt", "note": "ünï"})
    back = kiln.io.load_file(str(path))
    np.testing.assert_array_equal(as_np(back["w"]), base.T)
    np.testing.assert_array_equal(as_np(back["n"]), base[:, ::2])
    assert kiln.io.load_metadata(str(path)) == {"format": "pt", "note": "ünï"}


def test_zero_copy_view_outlives_dict(tmp_path, rng):
    a = rng.standard_normal((64, 64)).astype(np.float32)
    path = tmp_path / "z.safetensors"
    kiln.io.save_file({"a": a}, str(path))
    t = kiln.io.load_file(str(path))["a"]
    import gc
    gc.collect()
    np.testing.assert_array_equal(as_np(t), a)
    # Copy-on-write: writing to the view does not change the file.
    t.fill_(0.0)
    np.testing.assert_array_equal(as_np(kiln.io.load_file(str(path))["a"]), a)


def test_matches_safetensors_package(tmp_path, rng):
    st = pytest.importorskip("safetensors.numpy")
    arrays = {"x": rng.standard_normal((4, 3)).astype(np.float32), "y": rng.integers(0, 9, (5,), dtype=np.int64),
              "z": rng.standard_normal((2, 2)).astype(np.float16)}
    # Theirs -> ours.
    p1 = tmp_path / "theirs.safetensors"
    st.save_file(arrays, str(p1), metadata={"k": "v"})
    back = kiln.io.load_file(str(p1))
    for k, v in arrays.items():
        assert as_np(back[k]).tobytes() == v.tobytes()
    # Ours -> theirs.
    p2 = tmp_path / "ours.safetensors"
    kiln.io.save_file(arrays, str(p2), metadata={"k": "v"})
    theirs = st.load_file(str(p2))
    for k, v in arrays.items():
        np.testing.assert_array_equal(theirs[k], v)
    # Bytes API.
    data = kiln.io.save(arrays)
    assert {k: as_np(v).tobytes() for k, v in kiln.io.load(data).items()} == {k: v.tobytes() for k, v in arrays.items()}
    assert st.load(data)["x"].tobytes() == arrays["x"].tobytes()


def test_sharded_checkpoint(tmp_path, rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((5,)).astype(np.float32)
    kiln.io.save_file({"model.a": a}, str(tmp_path / "model-00001-of-00002.safetensors"))
    kiln.io.save_file({"model.b": b}, str(tmp_path / "model-00002-of-00002.safetensors"))
    index = {"metadata": {"total_size": 68},
             "weight_map": {"model.a": "model-00001-of-00002.safetensors",
                            "model.b": "model-00002-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    for p in (tmp_path, tmp_path / "model.safetensors.index.json"):
        d = kiln.io.load_file(str(p))
        assert sorted(d) == ["model.a", "model.b"]
        np.testing.assert_array_equal(as_np(d["model.a"]), a)
        np.testing.assert_array_equal(as_np(d["model.b"]), b)
    # An index pointing outside its directory, or at a shard that lacks the tensor.
    index["weight_map"]["model.b"] = "../elsewhere.safetensors"
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="not a file name"):
        kiln.io.load_file(str(tmp_path))
    index["weight_map"]["model.b"] = "model-00001-of-00002.safetensors"
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="does not hold it"):
        kiln.io.load_file(str(tmp_path))


def test_save_refuses_bad_input(tmp_path):
    with pytest.raises(ValueError, match="__metadata__"):
        kiln.io.save_file({"__metadata__": np.zeros(1, np.float32)}, str(tmp_path / "x.safetensors"))
    with pytest.raises(TypeError):
        kiln.io.save_file({"c": np.zeros(2, np.complex128)}, str(tmp_path / "x.safetensors"))
    with pytest.raises(TypeError):
        kiln.io.save_file({"a": np.zeros(2, np.float32)}, str(tmp_path / "x.safetensors"), metadata={"k": 1})


# ---- hostile files ----------------------------------------------------------------


def st_bytes(header, data=b"", raw_header=None, pad=True):
    h = raw_header if raw_header is not None else json.dumps(header).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


GOOD = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}

BAD = {
    "empty": (b"", "too short"),
    "truncated_length": (b"\x10\x00\x00", "too short"),
    "huge_header_length": (struct.pack("<Q", 2**63) + b"{}", "runs past the end"),
    "header_past_end": (struct.pack("<Q", 100) + b"{}", "runs past the end"),
    "not_json": (st_bytes(None, raw_header=b"{nope"), "invalid JSON"),
    "not_object": (st_bytes(None, raw_header=b"[1, 2]  "), "JSON header"),
    "bad_utf8": (st_bytes(None, raw_header=b'{"\xff\xfe": 1}'), "invalid JSON"),
    "duplicate_name": (st_bytes(None, raw_header=b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},'
                                                 b' "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}',
                                data=b"\0" * 8), "duplicate key"),
    "offsets_past_end": (st_bytes(GOOD, b"\0" * 4), "past the end"),
    "wrong_dtype_size": (st_bytes({"a": {"dtype": "F64", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8),
                         "needs 16 bytes"),
    "unknown_dtype": (st_bytes({"a": {"dtype": "F4", "shape": [2], "data_offsets": [0, 1]}}, b"\0"),
                      "unsupported dtype F4"),
    "overlap": (st_bytes({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                          "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12), "overlaps"),
    "hole": (st_bytes({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8), "unused bytes"),
    "trailing": (st_bytes(GOOD, b"\0" * 12), "after the last tensor"),
    "end_before_begin": (st_bytes({"a": {"dtype": "U8", "shape": [0], "data_offsets": [8, 0]}}, b"\0" * 8),
                         "end before begin"),
    "negative_dim": (st_bytes({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4),
                     "bad shape"),
    "huge_shape": (st_bytes({"a": {"dtype": "F32", "shape": [2**62, 2**62], "data_offsets": [0, 4]}}, b"\0" * 4),
                   "needs"),
    "too_many_dims": (st_bytes({"a": {"dtype": "U8", "shape": [1] * 9, "data_offsets": [0, 1]}}, b"\0"), "dims"),
    "missing_fields": (st_bytes({"a": {"dtype": "F32"}}), "no shape"),
    "metadata_not_strings": (st_bytes({"__metadata__": {"k": 1}}), "not a string"),
    "newline_in_name": (st_bytes({"a\nb": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}), "past the end"),
    "offsets_not_ints": (st_bytes({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0.5, 4]}}, b"\0" * 4),
                         "bad data_offsets"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_file(tmp_path, case):
    data, msg = BAD[case]
    with pytest.raises((ValueError, TypeError), match=msg):
        kiln.io.load(data)
    path = tmp_path / f"{case}.safetensors"
    path.write_bytes(data)
    with pytest.raises((ValueError, TypeError), match=msg):
        kiln.io.load_file(str(path))
    line = cli_rejects(path)
    if line is not None:
        assert msg in line or case in ("bad_utf8",), line


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="cannot open"):
        kiln.io.load_file(str(tmp_path / "nope.safetensors"))
    with pytest.raises(ValueError, match="neither"):
        kiln.io.load_file(str(tmp_path))


def test_bench_load_quick_json(tmp_path):
    import subprocess
    from io_util import kiln_cli
    cli = kiln_cli()
    if cli is None:
        pytest.skip("kiln CLI not installed")
    out = subprocess.run([cli, "bench", "load", "--quick", "--json", "--dir", str(tmp_path)],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    doc = json.loads(out)
    assert doc["synthetic"] and [r["format"] for r in doc["results"]] == ["safetensors", "gguf"]
    for r in doc["results"]:
        assert r["tensor_bytes"] > 0 and r["file_bytes"] >= r["tensor_bytes"] and r["open_s"] >= 0
    assert "dequantize_s" in doc["results"][1]
    assert list(tmp_path.iterdir()) == []  # synthetic files removed
