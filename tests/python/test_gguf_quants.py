# GGUF block types beyond Q4_0/Q4_1/Q8_0: Q5_0, Q5_1, the K-quants, Q8_K, IQ4_NL
# and IQ4_XS. Fixtures are written with the gguf package; kiln's dequantization is
# compared bit for bit with gguf.quants.dequantize of the same bytes (Q8_K, which
# gguf-py does not read, with NumPy by ggml's layout). Blocks are random bytes with
# finite f16 scales, so every code of every field is exercised; the types gguf can
# quantize are also checked through gguf.quants.quantize. Hostile blocks (NaN/inf
# scales) give NaN/inf where the reference does; truncated tensors are refused.
import numpy as np
import pytest

import kiln
import kiln.io

gguf = pytest.importorskip("gguf")
Q = gguf.GGMLQuantizationType

# Byte offsets of each type's f16 scales within a block (Q8_K: one f32 at 0).
SCALES = {
    Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0],
    Q.Q2_K: [80, 82], Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208],
    Q.IQ4_NL: [0], Q.IQ4_XS: [0], Q.Q8_K: [],
}
TYPES = list(SCALES)
QUANTIZABLE = [Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0]


def block_sizes(qtype):
    return gguf.GGML_QUANT_SIZES[qtype]


def shapes_for(qtype):
    # Row lengths of an odd count of blocks, several rows, 1-D to 3-D.
    bs, _ = block_sizes(qtype)
    return [(bs,), (3, 3 * bs), (2, 3, 5 * bs), (7, bs)]


def random_blocks(rng, qtype, n_blocks, scale=None):
    """n_blocks random but valid blocks: random bytes, finite f16 (Q8_K: f32) scales."""
    _, ts = block_sizes(qtype)
    raw = rng.integers(0, 256, (n_blocks, ts), dtype=np.uint8)
    for off in SCALES[qtype]:
        s = scale if scale is not None else rng.standard_normal(n_blocks) * np.exp2(rng.integers(-20, 4, n_blocks))
        raw[:, off : off + 2] = np.asarray(s, dtype=np.float16).reshape(-1, 1).view(np.uint8)
    if qtype == Q.Q8_K:
        s = scale if scale is not None else rng.standard_normal(n_blocks) * np.exp2(rng.integers(-30, 10, n_blocks))
        raw[:, 0:4] = np.asarray(s, dtype=np.float32).reshape(-1, 1).view(np.uint8)
    return raw


def reference(raw, qtype):
    """The reference dequantization of raw blocks [..., bytes per row] as float32 [..., elements per row]."""
    bs, ts = block_sizes(qtype)
    shape = (*raw.shape[:-1], raw.shape[-1] // ts * bs)
    with np.errstate(invalid="ignore", over="ignore"):
        if qtype == Q.Q8_K:  # ggml's dequantize_row_q8_K: y = d * q (bsums unused)
            b = raw.reshape(-1, ts)
            d = b[:, 0:4].copy().view(np.float32)
            q = b[:, 4 : 4 + 256].view(np.int8).astype(np.float32)
            return (d * q).reshape(shape)
        return gguf.quants.dequantize(raw, qtype).reshape(shape)


def write_raw(path, tensors):
    w = gguf.GGUFWriter(str(path), "llama")
    for name, (raw, qtype) in tensors.items():
        w.add_tensor(name, raw, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def assert_bits_equal(got, want):
    assert got.dtype == np.float32 and want.dtype == np.float32 and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


@pytest.mark.parametrize("qtype", TYPES, ids=lambda q: q.name)
def test_random_blocks_match_gguf(tmp_path, rng, qtype):
    bs, ts = block_sizes(qtype)
    tensors = {}
    for k, shape in enumerate(shapes_for(qtype)):
        n_blocks = int(np.prod(shape)) // bs
        raw = random_blocks(rng, qtype, n_blocks).reshape(*shape[:-1], shape[-1] // bs * ts)
        tensors[f"w{k}"] = (raw, qtype)
    path = tmp_path / "t.gguf"
    write_raw(path, tensors)
    f = kiln.io.GGUFFile(str(path))
    for name, (raw, _) in tensors.items():
        info = f.tensor_info(name)
        assert info["type"] == qtype.name
        got = np.asarray(f.dequantize(name))
        want = reference(raw, qtype)
        assert tuple(info["shape"]) == want.shape
        assert_bits_equal(got, want)
        assert np.isfinite(got).all()  # finite scales: finite values
        assert np.asarray(f.raw(name)).tobytes() == raw.tobytes()
        with pytest.raises(TypeError, match="block-quantized"):
            f.tensor(name)


@pytest.mark.parametrize("qtype", QUANTIZABLE, ids=lambda q: q.name)
def test_quantized_by_gguf(tmp_path, rng, qtype):
    bs, _ = block_sizes(qtype)
    x = (rng.standard_normal((5, 3 * bs)) * 3).astype(np.float32)
    raw = gguf.quants.quantize(x, qtype)
    path = tmp_path / "q.gguf"
    write_raw(path, {"w": (raw, qtype)})
    got = np.asarray(kiln.io.GGUFFile(str(path)).dequantize("w"))
    assert_bits_equal(got, reference(raw, qtype))
    # The same file through gguf's own reader.
    (t,) = [t for t in gguf.GGUFReader(str(path)).tensors if t.name == "w"]
    assert_bits_equal(got.reshape(-1), gguf.quants.dequantize(t.data, t.tensor_type).reshape(-1))


@pytest.mark.parametrize("qtype", TYPES, ids=lambda q: q.name)
def test_nonfinite_scales_propagate_as_in_gguf(tmp_path, rng, qtype):
    # NaN and +-inf scales are not refused: the elements they scale become what the
    # reference's float arithmetic makes them (inf * 0 = NaN, inf - inf = NaN, ...).
    bs, ts = block_sizes(qtype)
    raw = random_blocks(rng, qtype, 12)
    specials = np.array([np.nan, np.inf, -np.inf, 65504.0], dtype=np.float32)
    offs = SCALES[qtype] or [0]
    width = 4 if qtype == Q.Q8_K else 2
    for b in range(12):
        off = offs[b % len(offs)]
        v = specials[b % 4].astype(np.float32 if width == 4 else np.float16)
        raw[b, off : off + width] = np.frombuffer(v.tobytes(), dtype=np.uint8)
    raw = raw.reshape(3, 4 * ts)
    path = tmp_path / "nan.gguf"
    write_raw(path, {"w": (raw, qtype)})
    got = np.asarray(kiln.io.GGUFFile(str(path)).dequantize("w"))
    want = reference(raw, qtype)
    assert not np.isfinite(want).all()
    assert_bits_equal(got, want)


@pytest.mark.parametrize("qtype", [Q.Q4_K, Q.Q6_K, Q.IQ4_XS, Q.Q5_0], ids=lambda q: q.name)
def test_truncated_tensor_is_refused(tmp_path, rng, qtype):
    bs, ts = block_sizes(qtype)
    raw = random_blocks(rng, qtype, 6).reshape(2, 3 * ts)
    path = tmp_path / "full.gguf"
    write_raw(path, {"first": (random_blocks(rng, qtype, 1), qtype), "victim": (raw, qtype)})
    info = kiln.io.GGUFFile(str(path)).tensor_info("victim")
    data = path.read_bytes()
    for cut in (1, ts - 1, ts, info["nbytes"] - 1):
        short = tmp_path / f"short{cut}.gguf"
        short.write_bytes(data[: info["offset"] + info["nbytes"] - cut])
        with pytest.raises(ValueError, match=r"^\[gguf\] tensor 'victim' .* runs past the end") as e:
            kiln.io.GGUFFile(str(short))
        assert "\n" not in str(e.value)


@pytest.mark.parametrize("qtype", [Q.IQ2_XXS, Q.IQ3_S, Q.IQ1_M, Q.TQ2_0, Q.Q8_1], ids=lambda q: q.name)
def test_other_types_refused_by_name(tmp_path, rng, qtype):
    bs, ts = block_sizes(qtype)
    path = tmp_path / "u.gguf"
    write_raw(path, {"w": (rng.integers(0, 256, (2, ts), dtype=np.uint8), qtype)})
    f = kiln.io.GGUFFile(str(path))
    assert f.tensor_info("w")["type"] == qtype.name
    with pytest.raises(NotImplementedError) as e:
        f.dequantize("w")
    msg = str(e.value)
    assert msg.startswith("[gguf] tensor 'w' is " + qtype.name) and "\n" not in msg
    for supported in ("Q4_0", "Q5_1", "Q2_K", "Q6_K", "Q8_K", "IQ4_NL", "IQ4_XS"):
        assert supported in msg


# ---- a whole model whose matrices are block-quantized loads as its dequantization ----

H, NH, NKV, HD, FF, V = 256, 4, 2, 64, 512, 96


def write_model(path, matrices, qtype):
    """A one-layer llama: `matrices` name -> float32 array or raw blocks of `qtype`."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_embedding_length(H)
    w.add_feed_forward_length(FF)
    w.add_head_count(NH)
    w.add_head_count_kv(NKV)
    w.add_key_length(HD)
    w.add_value_length(HD)
    w.add_rope_dimension_count(HD)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_vocab_size(V)
    ones = np.ones(H, dtype=np.float32)
    w.add_tensor("output_norm.weight", ones)
    w.add_tensor("blk.0.attn_norm.weight", ones)
    w.add_tensor("blk.0.ffn_norm.weight", ones)
    for name, a in matrices.items():
        if a.dtype == np.uint8:
            w.add_tensor(name, a, raw_dtype=qtype)
        else:
            w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


MATRICES = {
    "token_embd.weight": (V, H), "output.weight": (V, H),
    "blk.0.attn_q.weight": (NH * HD, H), "blk.0.attn_k.weight": (NKV * HD, H),
    "blk.0.attn_v.weight": (NKV * HD, H), "blk.0.attn_output.weight": (H, NH * HD),
    "blk.0.ffn_gate.weight": (FF, H), "blk.0.ffn_up.weight": (FF, H), "blk.0.ffn_down.weight": (H, FF),
}


def random_matrices(rng, qtype):
    """MATRICES as random blocks of qtype, and each one's reference dequantization."""
    bs, ts = block_sizes(qtype)
    quant, deq = {}, {}
    for name, (n, k) in MATRICES.items():
        raw = random_blocks(rng, qtype, n * k // bs, scale=rng.uniform(0.001, 0.01, n * k // bs))
        quant[name] = raw.reshape(n, k // bs * ts)
        deq[name] = reference(quant[name], qtype)
    return quant, deq


@pytest.mark.parametrize("qtype", TYPES, ids=lambda q: q.name)
def test_model_loads_as_its_dequantization(tmp_path, rng, qtype):
    quant, deq = random_matrices(rng, qtype)
    qpath, fpath = tmp_path / "q.gguf", tmp_path / "f.gguf"
    write_model(qpath, quant, qtype)
    write_model(fpath, deq, qtype)
    ids = [1, 5, 9, 33, 70, 2]
    for dtype in ("f32", "fp8"):
        got = np.asarray(kiln.llm.load(str(qpath), dtype=dtype).logits(ids))
        want = np.asarray(kiln.llm.load(str(fpath), dtype=dtype).logits(ids))
        assert got.shape == (len(ids), V) and np.isfinite(got).all()
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
@pytest.mark.parametrize("qtype", TYPES, ids=lambda q: q.name)
def test_model_runs_blocks_natively_as_its_dequantization(tmp_path, rng, qtype, tied):
    # dtype="native": the blocks as stored (no FP8 or bf16 copy), the
    # embedding table's too (rows dequantized per token; the head when tied),
    # so the logits are the f32 dequantization's to float32 rounding, through
    # the matrix-vector kernel (6 tokens) and the GEMM (13); Q/K rows
    # un-permuted as blocks.
    bs, ts = block_sizes(qtype)
    quant, deq = random_matrices(rng, qtype)
    if tied:
        del quant["output.weight"], deq["output.weight"]
    qpath, fpath = tmp_path / "q.gguf", tmp_path / "f.gguf"
    write_model(qpath, quant, qtype)
    write_model(fpath, deq, qtype)
    native = kiln.llm.load(str(qpath), dtype="native")
    assert native.dtype == "native"
    ref = kiln.llm.load(str(fpath), dtype="f32")
    for ids in ([1, 5, 9, 33, 70, 2], list(range(3, 16))):
        got = np.asarray(native.logits(ids))
        want = np.asarray(ref.logits(ids))
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
        native.reset()
        ref.reset()
    # A native load holds fewer bytes than the FP8 copy where blocks are smaller.
    if ts / bs < 1.0:
        assert native.weight_bytes < kiln.llm.load(str(qpath), dtype="fp8").weight_bytes


def test_native_load_refuses_a_non_finite_block_scale(tmp_path, rng):
    qtype = gguf.GGMLQuantizationType.Q4_K
    quant, _ = random_matrices(rng, qtype)
    quant["blk.0.ffn_up.weight"][3, 0:2] = np.array([np.inf], dtype=np.float16).view(np.uint8)
    path = tmp_path / "bad.gguf"
    write_model(path, quant, qtype)
    with pytest.raises(ValueError, match=r"ffn_up|up_proj.*non-finite|NaN or infinite block scale"):
        kiln.llm.load(str(path), dtype="native")
    kiln.llm.load(str(path), dtype="f32")  # dequantizing follows the reference (inf values), as before
