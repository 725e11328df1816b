# Writing GGUF block types: kiln.io.quantize_gguf and `kiln quantize`.
# Legacy types (Q4_0..Q8_0) must equal gguf.quants.quantize byte for byte; the
# K types, which ggml leaves to the writer's fit, are decoded with
# gguf.quants.dequantize and their error measured against the input (and
# against the legacy types at equal or fewer bits). Recipes are checked tensor
# by tensor; the file must read back through gguf's reader with every metadata
# key kept, and run in kiln (and llama.cpp when llama-cpp-python is installed).
import subprocess

import numpy as np
import pytest

import kiln
import kiln.io
from io_util import kiln_cli
from tiny_chat_model import byte_to_unicode

gguf = pytest.importorskip("gguf")
Q = gguf.GGMLQuantizationType
LEGACY = [Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0]


def write_tensors(path, tensors, arch="llama", extra_kv=None):
    w = gguf.GGUFWriter(str(path), arch)
    for key, value in (extra_kv or {}).items():
        w.add_string(key, value)
    for name, a in tensors.items():
        w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def read(path):
    r = gguf.GGUFReader(str(path))
    return r, {t.name: t for t in r.tensors}


def decoded(t):
    """A block tensor of gguf's reader decoded by gguf-py, as float32 [rows, row length]."""
    x = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type)
    return x.reshape(-1, int(t.shape[0])).astype(np.float32)


def field_value(r, key):
    """A scalar metadata value: its numpy parts (a string's bytes, a number's one element)."""
    f = r.fields[key]
    return f.parts[f.data[0]]


@pytest.mark.parametrize("qtype", LEGACY, ids=lambda q: q.name)
def test_legacy_types_equal_gguf_py_bytes(tmp_path, rng, qtype):
    # Gaussian rows, rows with an outlier, constant and zero blocks, a row whose
    # largest magnitude is negative and one with ties for it.
    x = (rng.standard_normal((9, 32 * 7)) * rng.uniform(0.01, 10, (9, 1))).astype(np.float32)
    x[1, 5] = 40.0
    x[2, :32] = 0.25
    x[3, 32:64] = 0.0
    x[4, 70] = -x[4].__abs__().max() * 3
    x[5, 96:128] = np.where(np.arange(32) % 2, 2.0, -2.0)
    src, out = tmp_path / "src.gguf", tmp_path / "out.gguf"
    write_tensors(src, {"blk.0.ffn_up.weight": x})
    s = kiln.io.quantize_gguf(src, out, qtype.name)
    assert s["quantized"] == 1 and s["copied"] == 0
    _, t = read(out)
    got = t["blk.0.ffn_up.weight"]
    assert got.tensor_type == qtype
    want = gguf.quants.quantize(x, qtype)
    np.testing.assert_array_equal(np.asarray(got.data).reshape(want.shape), want)


# Relative RMS error ceilings on Gaussian rows; the decoded error is also
# compared with gguf-py's legacy encoders at equal or more bits per weight
# (none has as few as Q2_K's 2.625 or Q3_K's 3.4375).
K_TYPES = {Q.Q2_K: (0.3, None), Q.Q3_K: (0.16, None), Q.IQ4_XS: (0.085, Q.Q4_0), Q.IQ4_NL: (0.085, Q.Q4_0),
           Q.Q4_K: (0.095, Q.Q4_1), Q.Q5_K: (0.047, Q.Q5_1), Q.Q6_K: (0.024, Q.Q5_1)}


@pytest.mark.parametrize("qtype", list(K_TYPES), ids=lambda q: q.name)
def test_k_types_decode_close_to_their_input(tmp_path, rng, qtype):
    ceiling, legacy = K_TYPES[qtype]
    x = rng.standard_normal((16, 256 * 3)).astype(np.float32)
    x[:, :256] *= rng.uniform(0.001, 100, (16, 1)).astype(np.float32)  # scales per super-block
    x[3, 256:512] = 0.0  # an all-zero super-block
    x[4, 512:] = np.abs(x[4, 512:]) + 1  # all positive: the min must stay at or below zero
    x[5, 300] = 50.0  # an outlier
    src, out = tmp_path / "src.gguf", tmp_path / "out.gguf"
    write_tensors(src, {"blk.0.ffn_up.weight": x})  # ffn_up: Q4_K_M's base type
    kiln.io.quantize_gguf(src, out, qtype.name)
    _, t = read(out)
    got = t["blk.0.ffn_up.weight"]
    assert got.tensor_type == qtype
    y = decoded(got)
    assert np.isfinite(y).all()
    np.testing.assert_array_equal(y[3, 256:512], 0)
    # Error per super-block, relative to its RMS.
    blocks = x.reshape(-1, 256)
    err = (y.reshape(-1, 256) - blocks)
    rms = np.sqrt((blocks**2).mean(1))
    rel = np.sqrt((err**2).mean(1))[rms > 0] / rms[rms > 0]
    gauss = rel[np.arange(len(rel)) % 3 != 0]  # the unscaled Gaussian blocks
    assert np.median(gauss) < ceiling, np.median(gauss)
    assert rel.max() < 3 * ceiling, rel.max()
    # No worse than the legacy type of at least as many bits.
    if legacy is not None:
        ref = gguf.quants.dequantize(gguf.quants.quantize(x, legacy), legacy).reshape(x.shape)
        assert np.sqrt(((y - x) ** 2).mean()) <= np.sqrt(((ref - x) ** 2).mean())


def test_kiln_reads_what_it_wrote_as_gguf_does(tmp_path, rng):
    x = rng.standard_normal((6, 512)).astype(np.float32)
    src = tmp_path / "src.gguf"
    write_tensors(src, {"blk.0.ffn_gate.weight": x})
    for qtype in [*LEGACY, *K_TYPES]:
        out = tmp_path / f"{qtype.name}.gguf"
        kiln.io.quantize_gguf(src, out, qtype.name)
        _, t = read(out)
        got = np.asarray(kiln.io.GGUFFile(str(out)).dequantize("blk.0.ffn_gate.weight"))
        np.testing.assert_array_equal(got, decoded(t["blk.0.ffn_gate.weight"]))


# ---- recipes over a model ----

H, NH, NKV, HD, FF, V, LAYERS = 256, 4, 2, 64, 512, 96, 8


def write_model(path, rng, hidden=H, layers=LAYERS, tied=False, kv_heads=NKV):
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(layers)
    w.add_context_length(64)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(FF)
    w.add_head_count(NH)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(HD)
    w.add_value_length(HD)
    w.add_rope_dimension_count(HD)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_vocab_size(V)
    w.add_string("general.name", "tiny")
    w.add_array("kiln.test.ints", [1, -2, 3])
    w.add_file_type(1)
    f16 = lambda *s: (rng.standard_normal(s) * 0.05).astype(np.float16)
    w.add_tensor("token_embd.weight", f16(V, hidden))
    if not tied:
        w.add_tensor("output.weight", f16(V, hidden))
    w.add_tensor("output_norm.weight", np.ones(hidden, np.float32))
    for i in range(layers):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(hidden, np.float32))
        w.add_tensor(p + "ffn_norm.weight", np.ones(hidden, np.float32))
        w.add_tensor(p + "attn_q.weight", f16(NH * HD, hidden))
        w.add_tensor(p + "attn_k.weight", f16(kv_heads * HD, hidden))
        w.add_tensor(p + "attn_v.weight", f16(kv_heads * HD, hidden))
        w.add_tensor(p + "attn_output.weight", f16(hidden, NH * HD))
        w.add_tensor(p + "ffn_gate.weight", f16(FF, hidden))
        w.add_tensor(p + "ffn_up.weight", f16(FF, hidden))
        w.add_tensor(p + "ffn_down.weight", f16(hidden, FF))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


MORE_BITS = {0, 3, 6, 7}  # 8 layers: the first and last eighth, and every third between


# llama.cpp's mixes for the low-bit recipes of an 8-layer model whose query
# heads share KV heads in pairs: (recipe, matrix, layers or None for all) -> type.
LOW_BIT_MIXES = {
    ("Q2_K", "attn_v", None): Q.Q3_K, ("Q2_K", "attn_output", None): Q.Q3_K, ("Q2_K", "ffn_down", None): Q.Q3_K,
    ("Q3_K_M", "attn_v", (0, 1)): Q.Q5_K, ("Q3_K_M", "attn_v", None): Q.Q4_K,
    ("Q3_K_M", "ffn_down", None): Q.Q4_K, ("Q3_K_M", "attn_output", None): Q.Q4_K,  # 8 / 16 = 0 layers of Q5_K
    ("Q3_K_L", "attn_v", None): Q.Q5_K, ("Q3_K_L", "ffn_down", None): Q.Q5_K, ("Q3_K_L", "attn_output", None): Q.Q5_K,
    ("IQ4_NL", "ffn_down", (0,)): Q.Q5_K, ("IQ4_XS", "ffn_down", (0,)): Q.Q5_K,
}
LOW_BIT_BASE = {"Q2_K": Q.Q2_K, "Q3_K_S": Q.Q3_K, "Q3_K_M": Q.Q3_K, "Q3_K_L": Q.Q3_K, "IQ4_NL": Q.IQ4_NL,
                "IQ4_XS": Q.IQ4_XS}


def expected_type(recipe, name, tied=False):
    if name.endswith("_norm.weight"):
        return Q.F32
    head = name == "output.weight" or (tied and name == "token_embd.weight")
    layer = int(name.split(".")[1]) if name.startswith("blk.") else -1
    v_or_down = ".attn_v." in name or ".ffn_down." in name
    if recipe in LOW_BIT_BASE:
        if head:
            return Q.Q6_K
        matrix = name.split(".")[2] if layer >= 0 else None
        for (r, m, layers), t in LOW_BIT_MIXES.items():  # the first match: per-layer entries come first
            if r == recipe and m == matrix and (layers is None or layer in layers):
                return t
        return LOW_BIT_BASE[recipe]
    if recipe in ("Q4_K_M", "Q5_K_M"):
        base = Q.Q4_K if recipe == "Q4_K_M" else Q.Q5_K
        return Q.Q6_K if head or (v_or_down and layer in MORE_BITS) else base
    if recipe == "Q4_K_S":  # attn_v in the first 4 layers, ffn_down in the first eighth
        more = (".attn_v." in name and layer < 4) or (".ffn_down." in name and layer < LAYERS // 8)
        return Q.Q6_K if head else Q.Q5_K if more else Q.Q4_K
    if recipe == "Q5_K_S":
        return Q.Q6_K if head else Q.Q5_K
    if recipe in ("Q4_0", "Q4_1", "Q5_0", "Q5_1"):
        return Q.Q6_K if head else Q[recipe]
    return Q[recipe]


FTYPE = {"Q8_0": 7, "Q4_0": 2, "Q4_1": 3, "Q5_0": 8, "Q5_1": 9, "Q4_K_S": 14, "Q4_K_M": 15, "Q5_K_S": 16,
         "Q5_K_M": 17, "Q6_K": 18, "F16": 1, "Q2_K": 10, "Q3_K_S": 11, "Q3_K_M": 12, "Q3_K_L": 13, "IQ4_NL": 25,
         "IQ4_XS": 30}


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
@pytest.mark.parametrize("recipe", list(FTYPE))
def test_recipe_types_metadata_and_logits(tmp_path, rng, recipe, tied):
    src, out = tmp_path / "src.gguf", tmp_path / "out.gguf"
    write_model(src, rng, tied=tied)
    s = kiln.io.quantize_gguf(src, out, recipe)
    r, tensors = read(out)
    r0, src_tensors = read(src)
    assert list(tensors) == list(src_tensors)  # every tensor, in order
    for name, t in tensors.items():
        assert t.tensor_type == expected_type(recipe, name, tied), name
        assert list(t.shape) == list(src_tensors[name].shape)
    # Metadata: every source key, file_type set for the recipe.
    assert set(r.fields) == set(r0.fields) | {"general.quantization_version"}
    assert int(field_value(r, "general.file_type")[0]) == FTYPE[recipe]
    assert bytes(field_value(r, "general.name")) == b"tiny"
    f = r.fields["kiln.test.ints"]
    assert [int(f.parts[k][0]) for k in f.data] == [1, -2, 3]
    assert s["out_bytes"] < s["in_bytes"] or recipe == "F16"
    # kiln runs it: natively as stored (the logits of its own f32 dequantization,
    # to rounding that 8 random layers amplify), and its logits follow the
    # source's the closer the more bits. (Native holds plain F16 matrices as
    # FP8, so F16 is compared through f32 only.)
    ids = [1, 5, 9, 33, 70, 2]
    want = np.asarray(kiln.llm.load(str(src), dtype="f32").logits(ids))
    deq = np.asarray(kiln.llm.load(str(out), dtype="f32").logits(ids))
    if recipe != "F16":
        got = np.asarray(kiln.llm.load(str(out), dtype="native").logits(ids))
        np.testing.assert_allclose(got, deq, rtol=0, atol=5e-3 * np.abs(deq).max())
    corr = np.corrcoef(deq.ravel(), want.ravel())[0, 1]
    assert corr > MIN_CORRELATION[recipe], corr


# Lowest correlation of the quantized model's logits with the source's seen
# over 6 seeds, less a margin: 0.9996, 0.921, 0.947, 0.952, 0.986, 0.988, 0.996, 1.0;
# Q2_K 0.634, Q3_K_S/M/L 0.746 / 0.885 / 0.916, IQ4_NL 0.949, IQ4_XS 0.952 (6 seeds, tied and untied).
MIN_CORRELATION = {"Q8_0": 0.999, "Q4_0": 0.85, "Q4_1": 0.85, "Q5_0": 0.95, "Q5_1": 0.95, "Q4_K_S": 0.9, "Q4_K_M": 0.9, "Q5_K_S": 0.97, "Q5_K_M": 0.97,
                   "Q6_K": 0.99, "F16": 0.9999, "Q2_K": 0.55, "Q3_K_S": 0.65, "Q3_K_M": 0.83, "Q3_K_L": 0.87,
                   "IQ4_NL": 0.92, "IQ4_XS": 0.92}


def test_rows_that_are_not_whole_super_blocks_fall_back(tmp_path, rng):
    # hidden 288 = 9 blocks of 32 but not 256: K types fall back as llama.cpp does.
    src, out = tmp_path / "src.gguf", tmp_path / "out.gguf"
    write_model(src, rng, hidden=288, layers=1)
    kiln.io.quantize_gguf(src, out, "Q4_K_M")
    _, t = read(out)
    assert t["blk.0.attn_q.weight"].tensor_type == Q.Q5_0  # Q4_K -> Q5_0
    assert t["blk.0.attn_v.weight"].tensor_type == Q.Q8_0  # Q6_K -> Q8_0
    assert t["output.weight"].tensor_type == Q.Q8_0
    assert t["blk.0.ffn_down.weight"].tensor_type == Q.Q6_K  # rows of 512
    kiln.io.quantize_gguf(src, out, "Q5_K_S")
    _, t = read(out)
    assert t["blk.0.attn_q.weight"].tensor_type == Q.Q5_1  # Q5_K -> Q5_1
    # Rows of 40 are not even 32-element blocks: F16.
    write_tensors(src, {"blk.0.ffn_up.weight": rng.standard_normal((3, 40)).astype(np.float32)})
    kiln.io.quantize_gguf(src, out, "Q8_0")
    _, t = read(out)
    assert t["blk.0.ffn_up.weight"].tensor_type == Q.F16


def test_low_bit_fallbacks_and_shared_kv_heads(tmp_path, rng):
    # Rows of 288: Q2_K and Q3_K fall back to Q4_0, IQ4_XS to IQ4_NL (32-element blocks).
    src, out = tmp_path / "src.gguf", tmp_path / "out.gguf"
    write_model(src, rng, hidden=288, layers=1)
    for recipe, fallback, down in (("Q2_K", Q.Q4_0, Q.Q3_K), ("Q3_K_S", Q.Q4_0, Q.Q3_K), ("IQ4_XS", Q.IQ4_NL, Q.IQ4_XS)):
        kiln.io.quantize_gguf(src, out, recipe)
        _, t = read(out)
        assert t["blk.0.attn_q.weight"].tensor_type == fallback, recipe
        assert t["blk.0.ffn_down.weight"].tensor_type == down, recipe  # rows of 512
        assert t["output.weight"].tensor_type == Q.Q8_0  # Q6_K -> Q8_0
    # 4 query heads per KV head: Q2_K's attn_v is Q4_K, IQ4's Q5_K.
    write_model(src, rng, layers=2, kv_heads=1)
    for recipe, want in (("Q2_K", Q.Q4_K), ("IQ4_NL", Q.Q5_K), ("IQ4_XS", Q.Q5_K), ("Q3_K_S", Q.Q3_K)):
        kiln.io.quantize_gguf(src, out, recipe)
        _, t = read(out)
        assert t["blk.1.attn_v.weight"].tensor_type == want, recipe


def llama_quantize(llama_cpp, src, out, ftype):
    p = llama_cpp.llama_model_quantize_default_params()
    p.ftype = ftype
    assert llama_cpp.llama_model_quantize(str(src).encode(), str(out).encode(), p) == 0


@pytest.mark.parametrize("hidden,layers,tied", [(256, 8, False), (256, 16, True), (288, 3, False)])
def test_same_types_as_llama_cpp_and_legacy_bytes(tmp_path, rng, hidden, layers, tied):
    # llama.cpp's own quantizer on the same file: every tensor gets the same
    # type, and the legacy types the same bytes.
    llama_cpp = pytest.importorskip("llama_cpp")
    src, ours, theirs = tmp_path / "src.gguf", tmp_path / "k.gguf", tmp_path / "l.gguf"
    write_model(src, rng, hidden=hidden, layers=layers, tied=tied)
    for recipe, ftype in FTYPE.items():
        if recipe == "F16":
            continue
        kiln.io.quantize_gguf(src, ours, recipe)
        llama_quantize(llama_cpp, src, theirs, ftype)
        k, l = read(ours)[1], read(theirs)[1]
        assert {n: t.tensor_type for n, t in k.items()} == {n: t.tensor_type for n, t in l.items()}, recipe
        for n, t in k.items():
            if t.tensor_type in LEGACY:
                np.testing.assert_array_equal(np.asarray(t.data), np.asarray(l[n].data))


def test_already_quantized_tensors(tmp_path, rng):
    src, mid, out = tmp_path / "src.gguf", tmp_path / "mid.gguf", tmp_path / "out.gguf"
    write_model(src, rng, layers=1)
    kiln.io.quantize_gguf(src, mid, "Q8_0")
    # The same type again: copied byte for byte.
    s = kiln.io.quantize_gguf(mid, out, "Q8_0")
    assert s["quantized"] == 0
    assert out.read_bytes() == mid.read_bytes()
    # Another block type: refused unless asked for.
    with pytest.raises(ValueError, match=r"^\[quantize\] .* is already Q8_0.*--allow-requantize") as e:
        kiln.io.quantize_gguf(mid, tmp_path / "x.gguf", "Q4_K_M")
    assert "\n" not in str(e.value)
    assert not (tmp_path / "x.gguf").exists() and not (tmp_path / "x.gguf.tmp").exists()
    kiln.io.quantize_gguf(mid, out, "Q4_K_M", allow_requantize=True)
    assert read(out)[1]["blk.0.ffn_up.weight"].tensor_type == Q.Q4_K


def test_bad_input_is_refused_and_nothing_is_left(tmp_path, rng):
    src = tmp_path / "src.gguf"
    x = rng.standard_normal((4, 64)).astype(np.float32)
    x[2, 7] = np.nan
    write_tensors(src, {"blk.0.ffn_up.weight": rng.standard_normal((4, 64)).astype(np.float32),
                        "blk.3.attn_k.weight": x})
    out = tmp_path / "out.gguf"
    with pytest.raises(ValueError, match=r"blk\.3\.attn_k\.weight holds NaN or infinite values \(row 2\)"):
        kiln.io.quantize_gguf(src, out, "Q8_0")
    assert list(tmp_path.iterdir()) == [src]
    # Finite weights beyond what an f16 scale reaches would decode as infinity.
    big = tmp_path / "big.gguf"
    y = rng.standard_normal((3, 256)).astype(np.float32)
    y[1, 9] = 3e9
    write_tensors(big, {"blk.0.ffn_up.weight": y})
    for recipe in ("Q8_0", "Q4_K_M", "F16"):
        with pytest.raises(ValueError, match=r"ffn_up\.weight row 1 holds values too large for (Q8_0|Q4_K|F16)"):
            kiln.io.quantize_gguf(big, out, recipe)
    kiln.io.quantize_gguf(big, out, "BF16")
    assert np.isfinite(decoded(read(out)[1]["blk.0.ffn_up.weight"])).all()
    out.unlink()
    big.unlink()
    with pytest.raises(ValueError, match=r"unknown type 'Q3_K_XL' \(kiln writes F32, .*Q4_K_M"):
        kiln.io.quantize_gguf(src, out, "Q3_K_XL")
    with pytest.raises(ValueError, match="is the input"):
        kiln.io.quantize_gguf(src, src, "Q8_0")
    with pytest.raises(FileNotFoundError):
        kiln.io.quantize_gguf(tmp_path / "missing.gguf", out, "Q8_0")
    with pytest.raises(OSError):
        kiln.io.quantize_gguf(src, tmp_path / "no-dir" / "out.gguf", "F16")


def test_cli(tmp_path, rng):
    cli = kiln_cli()
    if cli is None:
        pytest.skip("kiln CLI not installed")
    src, out = tmp_path / "src.gguf", tmp_path / "out.gguf"
    write_model(src, rng, layers=2)
    r = subprocess.run([cli, "quantize", str(src), str(out), "--type", "q4_k"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"wrote {out}: ") and "bits per weight" in r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == len(read(src)[1]) and "blk.0.attn_v.weight" in r.stderr and "F16 -> Q6_K" in r.stderr
    assert read(out)[1]["blk.1.ffn_gate.weight"].tensor_type == Q.Q4_K
    # An existing output needs --force; bad types and requantizing exit 1 or 2 with one line.
    r = subprocess.run([cli, "quantize", str(src), str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and "exists; pass --force" in r.stderr
    r = subprocess.run([cli, "quantize", "-q", str(src), str(out), "--force", "-t", "Q8_0"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == ""
    r = subprocess.run([cli, "quantize", str(out), str(tmp_path / "b.gguf"), "-t", "Q4_0"], capture_output=True, text=True)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "--allow-requantize" in r.stderr
    # A directory is read as a Hugging Face checkpoint.
    r = subprocess.run([cli, "quantize", str(tmp_path), str(tmp_path / "b.gguf")], capture_output=True, text=True)
    assert r.returncode == 1 and "config.json" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = subprocess.run([cli, "quantize", str(tmp_path / "out.gguf.none"), str(tmp_path / "b.gguf")],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "not found" in r.stderr, r.stderr


# ---- from a Hugging Face checkpoint directory ----

GGUF_ARCH = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "qwen3-moe": "qwen3moe", "mixtral": "llama",
             "olmoe": "olmoe"}


@pytest.mark.parametrize("arch", list(GGUF_ARCH))
def test_checkpoint_converts_to_the_same_model(tmp_path, arch):
    # The committed tiny checkpoints (llama: Llama 3 rope scaling and permuted
    # Q/K rows; qwen2: tied, q/k/v biases; qwen3: q/k norms; the MoE ones with
    # per-expert tensors, stacked) written as GGUF run to the logits of the
    # checkpoint itself.
    import os
    ckpt = os.path.join(os.path.dirname(__file__), "..", "data", "models", f"tiny-{arch}")
    out = tmp_path / "m.gguf"
    kiln.io.quantize_gguf(ckpt, out, "F32")
    r, t = read(out)
    assert bytes(field_value(r, "general.architecture")) == GGUF_ARCH[arch].encode()
    if arch in ("qwen3-moe", "mixtral", "olmoe"):
        up = t["blk.0.ffn_up_exps.weight"]
        assert int(field_value(r, f"{GGUF_ARCH[arch]}.expert_count")[0]) == int(up.shape[2])
        assert "blk.0.ffn_gate_inp.weight" in t
    assert "tokenizer.ggml.tokens" not in r.fields  # the tiny checkpoints have no tokenizer
    assert ("rope_freqs.weight" in t) == (arch == "llama")
    ref = kiln.io.load_file(os.path.join(ckpt, "reference.safetensors"))
    ids = [int(v) for v in np.asarray(ref["input_ids"]).ravel()]
    want = np.asarray(kiln.llm.load(ckpt, dtype="f32").logits(ids))
    got = np.asarray(kiln.llm.load(str(out), dtype="f32").logits(ids))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    kiln.io.quantize_gguf(ckpt, out, "Q8_0")
    got = np.asarray(kiln.llm.load(str(out), dtype="native").logits(ids))
    # Native runs every matrix as its Q8_0 blocks, expert stacks included;
    # Q8_0's rounding can flip a near-tied routing choice of the tiny random
    # MoE routers, hence their looser bound.
    moe = arch in ("qwen3-moe", "mixtral", "olmoe")
    assert np.corrcoef(got.ravel(), want.ravel())[0, 1] > (0.98 if moe else 0.999)


MOE_ARCHS = ["qwen3-moe", "mixtral", "olmoe"]


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q4_K_M", "Q5_1"])
@pytest.mark.parametrize("arch", MOE_ARCHS)
def test_native_moe_runs_expert_stacks_as_their_blocks(tmp_path, arch, qtype):
    # GGUF's expert stacks (ffn_gate_exps / ffn_up_exps / ffn_down_exps) run
    # as stored under native: the logits are those of the file's own f32
    # dequantization to float32 rounding, through the block matrix-vector
    # kernel (6 tokens: 1-3 rows an expert) and the GEMM over widened panels
    # (37 tokens), and the load holds the blocks' bytes, not an FP8 copy.
    # Q4_K_M mixes types across layers (the tiny rows fall back to Q5_0, and
    # ffn_down to Q8_0 in some layers).
    import os
    ckpt = os.path.join(os.path.dirname(__file__), "..", "data", "models", f"tiny-{arch}")
    out = tmp_path / "m.gguf"
    kiln.io.quantize_gguf(ckpt, out, qtype)
    native = kiln.llm.load(str(out), dtype="native")
    ref = kiln.llm.load(str(out), dtype="f32")
    fp8 = kiln.llm.load(str(out), dtype="fp8")
    for ids in ([1, 5, 9, 33, 70, 2], list(range(3, 40))):
        got, want = np.asarray(native.logits(ids)), np.asarray(ref.logits(ids))
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
        # (FP8 experts, as native ran them before, were 6-54% of the largest logit off here.)
        far = np.abs(np.asarray(fp8.logits(ids)) - want).max()
        assert far > 10 * np.abs(got - want).max()
        for m in (native, ref, fp8):
            m.reset()
    _, t = read(out)
    stacks = sum(int(v.n_bytes) for k, v in t.items() if "_exps." in k)
    held = fp8.weight_bytes - native.weight_bytes
    # FP8 holds a byte and a float scale row per row where the blocks hold their bytes.
    assert held > 0 and native.weight_bytes >= stacks


def test_native_moe_refuses_a_non_finite_expert_block_scale(tmp_path):
    import os
    ckpt = os.path.join(os.path.dirname(__file__), "..", "data", "models", "tiny-qwen3-moe")
    out = tmp_path / "m.gguf"
    kiln.io.quantize_gguf(ckpt, out, "Q4_0")
    _, t = read(out)
    up = t["blk.1.ffn_up_exps.weight"]
    blob = bytearray(out.read_bytes())
    # Expert 2's first block of its first row: its f16 scale d made +inf.
    row_bytes = int(up.shape[0]) // 32 * 18
    at = int(up.data_offset) + 2 * int(up.shape[1]) * row_bytes
    blob[at:at + 2] = np.array([np.inf], dtype=np.float16).tobytes()
    out.write_bytes(bytes(blob))
    with pytest.raises(ValueError, match=r"layers\.1\.mlp\.experts\..*up_proj.*NaN or infinite block scale"):
        kiln.llm.load(str(out), dtype="native")
    kiln.llm.load(str(out), dtype="f32")  # dequantizing follows the reference (inf values), as before


def write_checkpoint(d, rng, tokenizer=True):
    """A small llama checkpoint with a byte-level BPE tokenizer of 256 bytes, 3 merges and one special token."""
    import json
    d.mkdir()
    alphabet = byte_to_unicode()
    vocab = {alphabet[b]: b for b in range(256)}
    merges = ["\u0120 t", "h e", "\u0120t he"]
    for m in merges:
        vocab["".join(m.split(" "))] = len(vocab)
    eot = len(vocab)
    V, h, ff, nh, nkv, hd, layers = eot + 1, 256, 512, 4, 2, 64, 2
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "normalizer": None,
        "added_tokens": [{"id": eot, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }
    if tokenizer:
        (d / "tokenizer.json").write_text(json.dumps(tok))
        (d / "tokenizer_config.json").write_text(json.dumps(
            {"eos_token": "<|endoftext|>", "bos_token": "<|endoftext|>", "add_bos_token": False,
             "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}"}))
    (d / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": h, "intermediate_size": ff,
        "num_hidden_layers": layers, "num_attention_heads": nh, "num_key_value_heads": nkv, "head_dim": hd,
        "vocab_size": V, "max_position_embeddings": 256, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
        "tie_word_embeddings": False, "bos_token_id": eot, "eos_token_id": eot, "torch_dtype": "bfloat16"}))
    w = lambda *shape: kiln.tensor((rng.standard_normal(shape) * 0.05).astype(np.float32)).to(kiln.bfloat16)
    ones = lambda n: kiln.tensor(np.ones(n, np.float32)).to(kiln.bfloat16)
    t = {"model.embed_tokens.weight": w(V, h), "lm_head.weight": w(V, h), "model.norm.weight": ones(h)}
    for i in range(layers):
        p = f"model.layers.{i}."
        t.update({p + "input_layernorm.weight": ones(h), p + "post_attention_layernorm.weight": ones(h),
                  p + "self_attn.q_proj.weight": w(nh * hd, h), p + "self_attn.k_proj.weight": w(nkv * hd, h),
                  p + "self_attn.v_proj.weight": w(nkv * hd, h), p + "self_attn.o_proj.weight": w(h, nh * hd),
                  p + "mlp.gate_proj.weight": w(ff, h), p + "mlp.up_proj.weight": w(ff, h),
                  p + "mlp.down_proj.weight": w(h, ff)})
    kiln.io.save_file(t, str(d / "model.safetensors"))
    return V


TEXT = "the other thesis: 12345 then\n\n  the end caf\u00e9 \u6771\u4eac <|endoftext|>"


def test_checkpoint_tokenizer_becomes_gguf_metadata(tmp_path, rng):
    d, out = tmp_path / "ckpt", tmp_path / "m.gguf"
    V = write_checkpoint(d, rng)
    kiln.io.quantize_gguf(d, out, "Q4_K_M")
    r, _ = read(out)
    assert bytes(field_value(r, "tokenizer.ggml.model")) == b"gpt2"
    assert bytes(field_value(r, "tokenizer.ggml.pre")) == b"gpt-2"  # a plain ByteLevel split
    f = r.fields["tokenizer.ggml.tokens"]
    assert len(f.data) == V and bytes(f.parts[f.data[V - 1]]) == b"<|endoftext|>"
    f = r.fields["tokenizer.ggml.token_type"]
    types = [int(f.parts[k][0]) for k in f.data]
    assert types[:V - 1] == [1] * (V - 1) and types[V - 1] == 3  # normal, control
    f = r.fields["tokenizer.ggml.merges"]
    assert [bytes(f.parts[k]).decode() for k in f.data] == ["\u0120 t", "h e", "\u0120t he"]
    assert int(field_value(r, "tokenizer.ggml.eos_token_id")[0]) == V - 1
    assert bool(field_value(r, "tokenizer.ggml.add_bos_token")[0]) is False
    assert bytes(field_value(r, "tokenizer.chat_template")).startswith(b"{% for m in messages")
    # The GGUF's tokenizer tokenizes as the checkpoint's.
    a, b = kiln.Tokenizer.from_file(str(d / "tokenizer.json")), kiln.Tokenizer.from_file(str(out))
    assert list(a.encode(TEXT)) == list(b.encode(TEXT))
    assert len(a.encode(TEXT)) < len(TEXT.encode())  # the merges and the special token took part


def test_qwen3_tokenizer_reads_as_qwen2_splitting(tmp_path):
    # Qwen3's real tokenizer (151k tokens, NFC, its own digit rule) on the tiny
    # qwen3 weights: llama.cpp's "qwen2" pre-tokenizer, and the same ids.
    import os, shutil, tarfile
    data = os.path.join(os.path.dirname(__file__), "..", "data")
    d, out = tmp_path / "ckpt", tmp_path / "m.gguf"
    shutil.copytree(os.path.join(data, "models", "tiny-qwen3"), d)
    with tarfile.open(os.path.join(data, "tokenizers", "qwen3", "tokenizer.json.tar.xz")) as tar:
        tar.extract("tokenizer.json", d, filter="data")
    shutil.copy(os.path.join(data, "tokenizers", "qwen3", "tokenizer_config.json"), d)
    kiln.io.quantize_gguf(d, out, "Q8_0")
    r, _ = read(out)
    assert bytes(field_value(r, "tokenizer.ggml.pre")) == b"qwen2"
    a, b = kiln.Tokenizer.from_file(str(d / "tokenizer.json")), kiln.Tokenizer.from_file(str(out))
    text = TEXT + " <|im_start|>user\nI'VE 2026 caf\u0065\u0301<|im_end|>"
    assert list(a.encode(text)) == list(b.encode(text))
    assert a.chat_template == b.chat_template and a.eos_token_id == b.eos_token_id is not None


def test_checkpoints_kiln_cannot_convert_are_refused(tmp_path, rng):
    import json, os
    import shutil
    moe = tmp_path / "moe"
    shutil.copytree(os.path.join(os.path.dirname(__file__), "..", "data", "models", "tiny-qwen3-moe"), moe)
    cfg = json.loads((moe / "config.json").read_text())
    cfg["mlp_only_layers"] = [1]
    (moe / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(NotImplementedError, match="dense layers"):
        kiln.io.quantize_gguf(moe, tmp_path / "x.gguf", "Q8_0")
    (moe / "model.safetensors").unlink()
    cfg["mlp_only_layers"] = []
    (moe / "config.json").write_text(json.dumps(cfg))
    t = kiln.io.load_file(os.path.join(os.path.dirname(__file__), "..", "data", "models", "tiny-qwen3-moe",
                                       "model.safetensors"))
    del t["model.layers.1.mlp.experts.2.up_proj.weight"]
    kiln.io.save_file(t, str(moe / "model.safetensors"))
    with pytest.raises(ValueError, match=r"experts\.up_proj\.weight: the checkpoint holds 3 of 4 experts"):
        kiln.io.quantize_gguf(moe, tmp_path / "x.gguf", "Q8_0")
    d = tmp_path / "ckpt"
    write_checkpoint(d, rng)
    tok = json.loads((d / "tokenizer.json").read_text())
    tok["model"]["byte_fallback"] = True
    (d / "tokenizer.json").write_text(json.dumps(tok))
    with pytest.raises(NotImplementedError, match="byte-fallback"):
        kiln.io.quantize_gguf(d, tmp_path / "x.gguf", "Q8_0")
    assert not (tmp_path / "x.gguf").exists()


def test_llama_cpp_runs_a_file_kiln_wrote(tmp_path, rng):
    # llama.cpp loads kiln's Q4_K_M of a checkpoint, tokenizes as kiln does,
    # and its logits follow kiln's native ones (llama.cpp rounds activations
    # to 8 bits for its K-quant dot products, so not bit for bit).
    llama_cpp = pytest.importorskip("llama_cpp")
    d, out = tmp_path / "ckpt", tmp_path / "m.gguf"
    write_checkpoint(d, rng)
    kiln.io.quantize_gguf(d, out, "Q4_K_M")
    llm = llama_cpp.Llama(model_path=str(out), n_ctx=64, logits_all=True, verbose=False, n_threads=2)
    ids = llm.tokenize(TEXT.encode(), add_bos=False, special=True)
    model = kiln.llm.load(str(out), dtype="native")
    assert ids == list(model.tokenizer.encode(TEXT))
    llm.eval(ids)
    theirs = np.asarray(llm.scores[: len(ids)], dtype=np.float32)
    ours = np.asarray(model.logits(ids))
    assert np.corrcoef(theirs.ravel(), ours.ravel())[0, 1] > 0.99
