# GGUF: files written with the gguf package (llama.cpp's own Python writer) for
# every tensor type kiln reads; values compared with gguf's dequantization, bit
# for bit. Metadata typed access vs gguf.GGUFReader, llama's Q/K row order, and a
# table of hostile files that must raise instead of crashing.
import struct

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.io
from io_util import cli_rejects

gguf = pytest.importorskip("gguf")
Q = gguf.GGMLQuantizationType


def as_np(t):
    return np.asarray(t)


def write(path, arch, tensors, kv=None):
    w = gguf.GGUFWriter(str(path), arch)
    for k, (fn, v) in (kv or {}).items():
        getattr(w, fn)(k, v)
    for name, (arr, qtype) in tensors.items():
        if qtype in (None, Q.F32, Q.F16):
            w.add_tensor(name, arr)
        else:
            w.add_tensor(name, gguf.quants.quantize(arr, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


TYPES = [Q.F32, Q.F16, Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q4_1]


@pytest.mark.parametrize("qtype", TYPES, ids=lambda q: q.name)
@pytest.mark.parametrize("shape", [(64,), (3, 64), (5, 96), (2, 3, 32)], ids=str)
def test_dequantize_matches_gguf(tmp_path, rng, qtype, shape):
    x = (rng.standard_normal(shape) * rng.uniform(0.1, 10)).astype(np.float32)
    if qtype == Q.F16:
        x = x.astype(np.float16)
    path = tmp_path / "t.gguf"
    write(path, "llama", {"w": (x, qtype)})
    f = kiln.io.GGUFFile(str(path))
    info = f.tensor_info("w")
    assert info["type"] == qtype.name and tuple(info["shape"]) == shape
    got = as_np(f.dequantize("w"))
    assert got.dtype == np.float32 and got.shape == shape
    if qtype in (Q.F32, Q.F16):
        want = x.astype(np.float32)
    else:
        want = gguf.quants.dequantize(gguf.quants.quantize(x, qtype), qtype).reshape(shape)
    np.testing.assert_array_equal(got, want)
    # Against gguf's own reader of the same file.
    r = gguf.GGUFReader(str(path))
    (t,) = [t for t in r.tensors if t.name == "w"]
    np.testing.assert_array_equal(got.reshape(-1), gguf.quants.dequantize(t.data, t.tensor_type).reshape(-1))
    # Plain types are zero-copy views in their own dtype; block types are refused there.
    if qtype in (Q.F32, Q.F16, Q.BF16):
        v = f.tensor("w")
        want_dt = {Q.F32: np.float32, Q.F16: np.float16, Q.BF16: ml_dtypes.bfloat16}[qtype]
        assert as_np(v).dtype == want_dt
        np.testing.assert_array_equal(as_np(v).astype(np.float32), want)
    else:
        with pytest.raises(TypeError, match="block-quantized"):
            f.tensor("w")
        raw = as_np(f.raw("w"))
        assert raw.dtype == np.uint8 and raw.tobytes() == gguf.quants.quantize(x, qtype).tobytes()
    assert as_np(f.dequantize("w", kiln.bfloat16)).dtype == ml_dtypes.bfloat16


def test_metadata_typed_access(tmp_path, rng):
    path = tmp_path / "m.gguf"
    kv = {
        "tokenizer.ggml.model": ("add_string", "gpt2"),
        "tokenizer.ggml.pre": ("add_string", "smollm"),
        "tokenizer.ggml.tokens": ("add_array", ["a", "b", "ü", "<|im_end|>"]),
        "tokenizer.ggml.token_type": ("add_array", [1, 1, 1, 3]),
        "tokenizer.ggml.scores": ("add_array", [0.5, -1.0, 2.0, 0.0]),
        "tokenizer.ggml.merges": ("add_array", ["a b", "ab c"]),
        "tokenizer.ggml.bos_token_id": ("add_uint32", 1),
        "tokenizer.ggml.add_bos_token": ("add_bool", False),
        "test.i64": ("add_int64", -5),
        "test.u64": ("add_uint64", 2**63 + 1),
        "test.f64": ("add_float64", 0.1),
        "test.i8": ("add_int8", -3),
    }
    write(path, "llama", {"x": (np.zeros(4, np.float32), None)}, kv)
    f = kiln.io.GGUFFile(str(path))
    assert f.version == 3 and f.alignment == 32 and f.architecture == "llama"
    md = f.metadata
    assert md["tokenizer.ggml.tokens"] == ["a", "b", "ü", "<|im_end|>"]
    assert md["tokenizer.ggml.token_type"] == [1, 1, 1, 3]
    assert md["tokenizer.ggml.scores"] == [0.5, -1.0, 2.0, 0.0]
    assert md["tokenizer.ggml.merges"] == ["a b", "ab c"]
    assert md["tokenizer.ggml.bos_token_id"] == 1 and md["tokenizer.ggml.add_bos_token"] is False
    assert md["test.i64"] == -5 and md["test.u64"] == 2**63 + 1 and md["test.i8"] == -3
    assert md["test.f64"] == 0.1
    assert f.value_type("tokenizer.ggml.tokens") == "array[string]"
    assert f.value_type("tokenizer.ggml.bos_token_id") == "uint32"
    assert f.get("nope", 7) == 7
    # Everything gguf's reader sees, kiln sees the same.
    r = gguf.GGUFReader(str(path))
    for name, field in r.fields.items():
        if name.startswith("GGUF."):
            continue
        v = field.contents()
        assert md[name] == pytest.approx(v) if isinstance(v, float) else md[name] == v, name
    assert f.tensor_names == ["x"] and "x" in f and len(f) == 1


def hf_to_gguf_permute(w, n_head):
    # llama.cpp convert_hf_to_gguf.py LlamaModel.permute, restated.
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


@pytest.mark.parametrize("arch,permuted", [("llama", True), ("qwen2", False), ("qwen3", False)])
def test_load_hf_restores_qk_rows(tmp_path, rng, arch, permuted):
    n_head, n_kv, hd, hidden = 4, 2, 8, 32
    wq = rng.standard_normal((n_head * hd, hidden)).astype(np.float32)
    wk = rng.standard_normal((n_kv * hd, hidden)).astype(np.float32)
    wv = rng.standard_normal((n_kv * hd, hidden)).astype(np.float32)
    if permuted:
        sq, sk = hf_to_gguf_permute(wq, n_head), hf_to_gguf_permute(wk, n_kv)
    else:
        sq, sk = wq, wk
    kv = {f"{arch}.attention.head_count": ("add_uint32", n_head),
          f"{arch}.attention.head_count_kv": ("add_uint32", n_kv)}
    path = tmp_path / "qk.gguf"
    write(path, arch, {"blk.0.attn_q.weight": (sq, Q.F32), "blk.0.attn_k.weight": (sk, Q.F32),
                       "blk.0.attn_v.weight": (wv, Q.F32)}, kv)
    f = kiln.io.GGUFFile(str(path))
    np.testing.assert_array_equal(as_np(f.load_hf("blk.0.attn_q.weight")), wq)
    np.testing.assert_array_equal(as_np(f.load_hf("blk.0.attn_k.weight")), wk)
    np.testing.assert_array_equal(as_np(f.load_hf("blk.0.attn_v.weight")), wv)
    np.testing.assert_array_equal(as_np(f.dequantize("blk.0.attn_q.weight")), sq)
    assert f.hf_name("blk.0.attn_q.weight") == "model.layers.0.self_attn.q_proj.weight"
    assert f.hf_name("blk.0.nonsense.weight") is None


# ---- hostile files ------------------------------------------------------------------


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def build(kvs=(), tensors=(), data=b"", version=3, magic=b"GGUF", n_tensors=None, n_kv=None, align=32):
    """kvs: (key, type, payload bytes); tensors: (name, dims, type, offset)."""
    out = magic + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                              len(kvs) if n_kv is None else n_kv)
    for k, t, payload in kvs:
        out += gstr(k) + struct.pack("<I", t) + payload
    for name, dims, t, off in tensors:
        out += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", t, off)
    out += b"\0" * (-len(out) % align)
    return out + data


F32 = 0
ONE = [("a", [4], F32, 0)]
BAD = {
    "empty": (b"", "truncated"),
    "wrong_magic": (b"GGML" + b"\0" * 28, "magic"),
    "version_1": (build(version=1), "version 1"),
    "big_endian": (build(version=3 << 24), "big-endian"),
    "truncated_header": (build(tensors=ONE, data=b"\0" * 16)[:30], "truncated"),
    "huge_kv_count": (build(n_kv=2**62), "metadata entries"),
    "huge_tensor_count": (build(n_tensors=2**40), "tensors"),
    "huge_string": (build([("k", 8, struct.pack("<Q", 2**62))]), "claims"),
    "huge_array": (build([("k", 9, struct.pack("<IQ", 4, 2**61))]), "claims"),
    "nested_array": (build([("k", 9, struct.pack("<IQ", 9, 1))]), "arrays"),
    "bad_value_type": (build([("k", 99, b"")]), "value type"),
    "bad_utf8_key": (build([(b"\xff\xfe", 4, struct.pack("<I", 1))]), "UTF-8"),
    "bad_utf8_value": (build([("k", 8, gstr(b"\xc0\x80"))]), "UTF-8"),
    "duplicate_key": (build([("k", 4, struct.pack("<I", 1)), ("k", 4, struct.pack("<I", 2))]), "duplicate"),
    "bad_alignment": (build([("general.alignment", 4, struct.pack("<I", 3))]), "alignment"),
    "offset_past_end": (build(tensors=[("a", [4], F32, 32)], data=b"\0" * 16), "past the end"),
    "size_past_end": (build(tensors=[("a", [1 << 40], F32, 0)], data=b"\0" * 16), "past the end"),
    "misaligned_offset": (build(tensors=[("a", [1], F32, 4)], data=b"\0" * 16), "multiple of the alignment"),
    "overlap": (build(tensors=[("a", [16], F32, 0), ("b", [8], F32, 32)], data=b"\0" * 64), "overlap"),
    "duplicate_tensor": (build(tensors=[("a", [4], F32, 0), ("a", [4], F32, 32)], data=b"\0" * 64), "duplicate"),
    "unknown_type": (build(tensors=[("a", [4], 77, 0)], data=b"\0" * 16), "unknown ggml type"),
    "bad_ndims": (build(tensors=[("a", [1] * 5, F32, 0)], data=b"\0" * 16), "dims"),
    "zero_ndims": (build(tensors=[("a", [], F32, 0)], data=b"\0" * 16), "dims"),
    "block_mismatch": (build(tensors=[("a", [33], 8, 0)], data=b"\0" * 64), "block size"),
    "numel_overflow": (build(tensors=[("a", [2**40, 2**40], F32, 0)], data=b"\0" * 16), "too many elements"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_file(tmp_path, case):
    data, msg = BAD[case]
    path = tmp_path / f"{case}.gguf"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=msg):
        kiln.io.GGUFFile(str(path))
    line = cli_rejects(path)
    if line is not None:
        assert msg in line, line


def test_good_handmade_file(tmp_path):
    # The builder above makes valid files too (so the table tests what it says).
    vals = np.arange(4, dtype=np.float32)
    path = tmp_path / "ok.gguf"
    path.write_bytes(build([("general.architecture", 8, gstr("llama"))], ONE, vals.tobytes()))
    f = kiln.io.GGUFFile(str(path))
    np.testing.assert_array_equal(as_np(f.tensor("a")), vals)


def test_unsupported_type_is_named(tmp_path, rng):
    path = tmp_path / "k.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tensor("w", rng.integers(0, 255, (2, 66), dtype=np.uint8), raw_dtype=Q.IQ2_XXS)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    f = kiln.io.GGUFFile(str(path))
    assert f.tensor_info("w")["type"] == "IQ2_XXS"
    with pytest.raises(NotImplementedError, match="IQ2_XXS"):
        f.dequantize("w")


def test_cli_info_summarizes_gguf(tmp_path, rng):
    import json
    import subprocess
    from io_util import kiln_cli
    cli = kiln_cli()
    if cli is None:
        pytest.skip("kiln CLI not installed")
    path = tmp_path / "tiny.gguf"
    kv = {"llama.block_count": ("add_uint32", 1), "llama.embedding_length": ("add_uint32", 64),
          "llama.attention.head_count": ("add_uint32", 4), "llama.feed_forward_length": ("add_uint32", 128),
          "tokenizer.ggml.model": ("add_string", "gpt2"), "tokenizer.ggml.pre": ("add_string", "smollm"),
          "tokenizer.ggml.tokens": ("add_array", ["a", "b"]), "tokenizer.chat_template": ("add_string", "{{x}}")}
    write(path, "llama", {"token_embd.weight": (rng.standard_normal((2, 64)).astype(np.float32), Q.Q8_0),
                          "blk.0.attn_q.weight": (rng.standard_normal((64, 64)).astype(np.float32), Q.Q4_1),
                          "output_norm.weight": (np.ones(64, np.float32), Q.F32)}, kv)
    doc = json.loads(subprocess.run([cli, "info", "--json", str(path)], check=True, capture_output=True,
                                    text=True).stdout)
    assert doc["format"] == "gguf" and doc["architecture"] == "llama" and doc["tensors"] == 3
    assert doc["types"]["Q4_1"]["elements"] == 64 * 64 and doc["types"]["Q8_0"]["bytes"] == 2 * 2 * 34
    assert doc["config"]["layers"] == 1 and doc["config"]["heads"] == 4 and doc["config"]["vocab_size"] == 2
    assert doc["tokenizer"] == {"model": "gpt2", "pre": "smollm", "vocab_size": 2, "chat_template": True}
    text = subprocess.run([cli, "info", str(path)], check=True, capture_output=True, text=True).stdout
    assert "architecture    llama" in text and "pre=smollm" in text
