"""Errors at kiln's Python boundary: Python ints that do not fit, sizes past int64 and
allocations the system refuses, the kiln.Tensor constructor and str arguments
nanobind cannot convert, missing files. Every error names its op ("[op] ..."), and no
bare C++ exception text ("std::bad_cast") reaches the user.

The exception types follow one rule (see python/src/bind_util.h): a number that does
not fit where it goes is OverflowError (torch raises RuntimeError "value cannot be
converted to type uint8_t without overflow" for values outside a dtype, OverflowError
for ints past uint64; NumPy 2 raises OverflowError for both), an index past int64 is
IndexError, memory the system refuses is MemoryError, a missing file is the OSError
subclass Python picks for the errno (FileNotFoundError, PermissionError,
IsADirectoryError), a str with lone surrogates is ValueError (UnicodeEncodeError's base).
"""

import errno
import json
import math
import os
import pathlib

import ml_dtypes
import numpy as np
import pytest

import kiln

INT_DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64"]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2"]


def no_cpp_text(e):
    s = str(e)
    assert "std::" not in s and "incompatible function arguments" not in s, s
    return s


def int_fits(v, dtype):
    """torch's checked_convert rule from NumPy's integer limits: in [min, max], and an
    unsigned dtype also takes negatives down to -max (they wrap, as torch allows)."""
    info = np.iinfo(dtype)
    return info.min <= v <= info.max or (info.min == 0 and -int(info.max) <= v < 0)


def float_max(dtype):
    return float(ml_dtypes.finfo(getattr(ml_dtypes, dtype)).max if dtype in ("bfloat16", "float8_e4m3fn", "float8_e5m2")
                 else np.finfo(dtype).max)


def int_edge_values(dtype):
    info = np.iinfo(dtype)
    return sorted({int(info.min) - 1, int(info.min), -int(info.max), -int(info.max) - 1, -1, 0,
                   int(info.max), int(info.max) + 1, 2**63 - 1, 2**63, 2**64 - 1, -(2**63)})


# ---- 1. Python ints (and floats) that do not fit -------------------------------


def test_full_default_int64_overflows_instead_of_wrapping():
    with pytest.raises(OverflowError, match=r"^\[full\] fill_value 9223372036854775808 cannot be converted to int64"):
        kiln.full((2,), 2**63)
    assert kiln.full((2,), 2**63 - 1).tolist() == [2**63 - 1] * 2
    assert kiln.full((2,), -(2**63)).tolist() == [-(2**63)] * 2


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_full_and_fill_integer_range(dtype):
    d = getattr(kiln, dtype)
    for v in int_edge_values(dtype):
        if not -(2**63) <= v < 2**64:  # no kiln number holds it
            with pytest.raises(OverflowError, match=rf"^\[full\] Python integer {v} does not fit int64 or uint64"):
                kiln.full((3,), v, dtype=d)
            with pytest.raises(OverflowError, match=rf"^\[fill_\] Python integer {v} "):
                kiln.zeros(3, dtype=d).fill_(v)
        elif int_fits(v, dtype):
            want = v % 2 ** (8 * np.dtype(dtype).itemsize)  # two's complement wrap of negatives
            if np.iinfo(dtype).min < 0 and want > np.iinfo(dtype).max:
                want -= 2 ** (8 * np.dtype(dtype).itemsize)
            assert kiln.full((3,), v, dtype=d).tolist() == [want] * 3, (dtype, v)
            assert kiln.zeros(3, dtype=d).fill_(v).tolist() == [want] * 3, (dtype, v)
        else:
            with pytest.raises(OverflowError, match=rf"^\[full\] fill_value {v} "):
                kiln.full((3,), v, dtype=d)
            t = kiln.zeros(3, dtype=d)
            with pytest.raises(OverflowError, match=rf"^\[fill_\] value {v} "):
                t.fill_(v)
            assert t.tolist() == [0, 0, 0]  # untouched


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_full_float_range(dtype):
    d, top = getattr(kiln, dtype), float_max(dtype)
    assert kiln.full((1,), top, dtype=d).item() == top
    assert kiln.full((1,), -top, dtype=d).item() == -top
    assert math.isnan(kiln.full((1,), float("nan"), dtype=d).item())
    for v in (top * 1.5, -top * 1.5, 2**64 - 1 if top < 2**64 else None):
        if v is not None and not math.isinf(v):
            with pytest.raises(OverflowError, match=rf"^\[full\] fill_value .* cannot be converted to {dtype}"):
                kiln.full((1,), v, dtype=d)
    if dtype == "float8_e4m3fn":  # no infinity to hold
        with pytest.raises(OverflowError, match=r"^\[full\]"):
            kiln.full((1,), float("inf"), dtype=d)
    else:
        assert kiln.full((1,), float("-inf"), dtype=d).item() == float("-inf")


def test_float_and_complex_into_other_kinds():
    with pytest.raises(OverflowError, match=r"^\[full\] fill_value 1e\+39 cannot be converted to float32"):
        kiln.full((2,), 1e39)
    for bad in (float("nan"), float("inf"), 2.0**63, -(2.0**63) * 1.01):
        with pytest.raises(OverflowError, match=r"^\[full\]"):
            kiln.full((1,), bad, dtype=kiln.int64)
    assert kiln.full((1,), -(2.0**63), dtype=kiln.int64).item() == -(2**63)
    assert kiln.full((1,), 255.0, dtype=kiln.uint8).item() == 255
    assert kiln.full((1,), -128.5 + 0.5, dtype=kiln.int8).item() == -128
    for bad in (255.5, -0.5, -128.5):  # torch: outside [lowest, max] before truncation
        with pytest.raises(OverflowError, match=r"^\[full\]"):
            kiln.full((1,), bad, dtype=kiln.uint8 if bad != -128.5 else kiln.int8)
    with pytest.raises(TypeError, match=r"^\[full\] cannot convert the complex fill_value \(1\+2j\) to float32"):
        kiln.full((1,), 1 + 2j, dtype=kiln.float32)
    with pytest.raises(TypeError, match=r"^\[fill_\] cannot convert the complex value \(0\+1j\) to int8"):
        kiln.zeros(1, dtype=kiln.int8).fill_(1j)
    assert kiln.full((1,), 3 + 0j, dtype=kiln.float32).item() == 3.0
    assert kiln.full((1,), 7, dtype=kiln.bool).item() is True  # anything converts to bool
    with pytest.raises(OverflowError, match=r"^\[full_like\]"):
        kiln.full_like(kiln.zeros(2, dtype=kiln.int8), 128)
    with pytest.raises(OverflowError, match=r"^\[full_like\] fill_value 100000\.0 cannot be converted to float16"):
        kiln.full_like(kiln.zeros(2), 1e5, dtype=kiln.float16)


def test_tensor_data_into_integer_dtypes():
    with pytest.raises(OverflowError, match=r"^\[tensor\] value 300 cannot be converted to uint8"):
        kiln.tensor([1, 300], dtype=kiln.uint8)
    with pytest.raises(OverflowError, match=r"^\[tensor\] value -129 cannot be converted to int8"):
        kiln.tensor([[1], [-129]], dtype=kiln.int8)
    with pytest.raises(OverflowError, match=r"^\[tensor\] value 1e\+20 cannot be converted to int64"):
        kiln.tensor([1e20], dtype=kiln.int64)
    assert kiln.tensor([-1, 255], dtype=kiln.uint8).tolist() == [255, 255]  # torch's wrap
    # As torch.tensor, a float dtype rounds (to inf) rather than raising.
    assert kiln.tensor([1e39], dtype=kiln.float32).item() == float("inf")
    # Past int64 without a dtype, and past uint64 always.
    with pytest.raises(OverflowError, match=r"^\[tensor\] 9223372036854775808 does not fit int64"):
        kiln.tensor([1, 2**63])
    assert kiln.tensor([2**63], dtype=kiln.uint64).tolist() == [2**63]
    with pytest.raises(OverflowError, match=r"^\[tensor\] Python integer 1180591620717411303424 does not fit"):
        kiln.tensor([2**70])


def test_scalar_operands_name_the_op():
    t = kiln.zeros(2)
    for expr, op in ((lambda: t + 2**70, "__add__"), (lambda: 2**70 * t, "__rmul__"),
                     (lambda: kiln.add(t, 2**64), "add"), (lambda: t == 2**70, "__eq__"),
                     (lambda: kiln.where(t > 0, t, -(2**64)), "where"), (lambda: t.lerp(t, 2**70), "lerp")):
        with pytest.raises(OverflowError, match=rf"^\[{op}\] Python integer -?\d+ does not fit int64 or uint64"):
            expr()
    with pytest.raises(OverflowError, match=r"^\[__iadd__\]"):
        t += 2**70
    # alpha (a Scalar parameter) used to be "incompatible function arguments".
    with pytest.raises(OverflowError) as e:
        kiln.add(t, t, alpha=2**70)
    assert no_cpp_text(e.value).startswith("[")
    # Representable operands keep torch's wrapped-number semantics.
    assert (kiln.zeros(2) + 2**63).tolist() == [2.0**63] * 2


def test_clamp_bounds_checked_in_the_compute_dtype():
    x = kiln.tensor([1, 2, 3], dtype=kiln.int8)
    with pytest.raises(OverflowError, match=r"^\[clamp\] max 300 cannot be converted to int8"):
        x.clamp(0, 300)
    with pytest.raises(OverflowError, match=r"^\[clamp_\] min -129 cannot be converted to int8"):
        x.clamp_(min=-129)
    with pytest.raises(OverflowError, match=r"^\[clamp\] Python integer"):
        kiln.clamp(kiln.zeros(2), 0, 2**70)
    assert x.clamp(0, 2).tolist() == [1, 2, 2]
    assert x.clamp(0.5, 2.5).tolist() == [1.0, 2.0, 2.5]  # float bounds promote: no overflow


def test_stored_values_masked_fill_setitem_scatter():
    x = kiln.zeros(3, dtype=kiln.int8)
    with pytest.raises(OverflowError, match=r"^\[__setitem__\] value 300 cannot be converted to int8"):
        x[0] = 300
    with pytest.raises(OverflowError, match=r"^\[__setitem__\] Python integer"):
        x[0] = 2**70
    with pytest.raises(OverflowError, match=r"^\[masked_fill\] value 128 cannot be converted to int8"):
        x.masked_fill(x == 0, 128)
    with pytest.raises(OverflowError, match=r"^\[masked_fill_\] value -1000000000\.0 cannot be converted to float16"):
        kiln.zeros(2, dtype=kiln.float16).masked_fill_(kiln.tensor([True, False]), -1e9)
    with pytest.raises(OverflowError, match=r"^\[scatter_\] value 256 cannot be converted to uint8"):
        kiln.zeros(3, dtype=kiln.uint8).scatter_(0, kiln.tensor([0]), value=256)
    assert x.tolist() == [0, 0, 0]
    x[1] = 127
    assert x.masked_fill(x == 0, -128).tolist() == [-128, 127, -128]


def test_ranges_and_random_bounds():
    with pytest.raises(OverflowError, match=r"^\[arange\] Python integer 1180591620717411303424"):
        kiln.arange(2**70)
    with pytest.raises(OverflowError, match=r"^\[arange\] end 9223372036854775808 cannot be converted to int64"):
        kiln.arange(0, 2**63, 2**62)
    assert kiln.arange(2**63 - 3, 2**63 - 1).tolist() == [2**63 - 3, 2**63 - 2]
    with pytest.raises(OverflowError, match=r"^\[linspace\] steps 1180591620717411303424 does not fit int64"):
        kiln.linspace(0, 1, 2**70)
    with pytest.raises(OverflowError, match=r"^\[logspace\] Python integer"):
        kiln.logspace(0, 2**70, 3)
    with pytest.raises(OverflowError, match=r"^\[randint\] high 1180591620717411303424 does not fit int64"):
        kiln.randint(0, 2**70, (2,))
    with pytest.raises(OverflowError, match=r"^\[randint\] high - 1 = 299 cannot be converted to uint8"):
        kiln.randint(0, 300, (2,), dtype=kiln.uint8)
    assert kiln.randint(0, 256, (64,), dtype=kiln.uint8).max().item() > 127  # all below: p = 2**-64
    with pytest.raises(OverflowError, match=r"^\[eye\] n 1180591620717411303424 does not fit int64"):
        kiln.eye(2**70)
    with pytest.raises(TypeError, match=r"^\[linspace\] steps must be an int, got float"):
        kiln.linspace(0, 1, 2.5)


def test_seeds_take_torchs_range():
    seed = kiln.initial_seed()
    g = kiln.Generator(2**64 - 1)
    assert g.initial_seed() == 2**64 - 1
    assert kiln.manual_seed(-1).initial_seed() == 2**64 - 1  # negative seeds wrap, as torch
    with pytest.raises(OverflowError, match=r"^\[manual_seed\] Python integer 18446744073709551616"):
        kiln.manual_seed(2**64)
    with pytest.raises(OverflowError, match=r"^\[Generator\]"):
        kiln.Generator(-(2**63) - 1)
    kiln.manual_seed(seed)


def test_indices_and_dims_past_int64():
    x = kiln.zeros(2, 3)
    with pytest.raises(IndexError, match=r"^\[__getitem__\] index 1180591620717411303424 is out of range"):
        x[2**70]
    with pytest.raises(IndexError, match=r"^\[__getitem__\] index -9223372036854775809"):
        x[0, -(2**63) - 1]
    for call, op in ((lambda: x.sum(2**70), "sum"), (lambda: x.amax(dim=(0, 2**40)), "amax"),
                     (lambda: x.max(2**70), "max"), (lambda: x.var(2**33), "var"),
                     (lambda: x.squeeze(2**40), "squeeze")):
        with pytest.raises(IndexError, match=rf"^\[{op}\] dimension \d+ is out of range") as e:
            call()
        no_cpp_text(e.value)
    # 2**32 used to be cut to a C int (0) and permute(0, 1) ran.
    with pytest.raises(IndexError, match=r"^\[permute\] dimension 4294967296 is out of range"):
        x.permute(2**32, 0)
    with pytest.raises(OverflowError, match=r"^\[round\] ndigits"):
        round(x, 2**40)


# ---- 2. sizes past int64, allocations the system refuses ------------------------


def test_sizes_past_int64_name_the_op():
    t = kiln.zeros(4)
    cases = [
        (lambda: kiln.empty(2**63), "empty", 2**63),
        (lambda: kiln.zeros((2**63,)), "zeros", 2**63),
        (lambda: kiln.ones([3, 2**64]), "ones", 2**64),
        (lambda: kiln.rand(2**63), "rand", 2**63),
        (lambda: kiln.randint(5, (2**63,)), "randint", 2**63),
        (lambda: kiln.full((2**63,), 1.0), "full", 2**63),
        (lambda: t.reshape(2**63), "reshape", 2**63),
        (lambda: t.view(-1, 2**64), "view", 2**64),
        (lambda: t.expand(2**63, 4), "expand", 2**63),
        (lambda: kiln.Tensor(2**63), "Tensor", 2**63),
    ]
    for call, op, n in cases:
        with pytest.raises(OverflowError, match=rf"^\[{op}\] size {n} does not fit int64"):
            call()
    with pytest.raises(OverflowError, match=r"^\[as_strided\] stride 9223372036854775808 does not fit int64"):
        t.as_strided((2,), (2**63,))


def test_element_count_past_int64():
    with pytest.raises(OverflowError, match=r"^\[ones\] shape \[1099511627776, 1099511627776\] has more elements"):
        kiln.ones(2**40, 2**40)
    with pytest.raises(ValueError, match=r"^\[zeros\] negative dimension in shape \[2, -1\]"):
        kiln.zeros(2, -1)


def test_huge_allocations_raise_memory_error_with_op_shape_dtype():
    n = 2**50  # 4 PiB of float32: more than any address space offers
    with pytest.raises(MemoryError, match=r"^\[empty\] cannot allocate 4503599627370496 bytes "
                                          r"\(shape \[1125899906842624\], dtype float32\): out of memory$"):
        kiln.empty(n)
    with pytest.raises(MemoryError, match=r"^\[zeros\] cannot allocate 9007199254740992 bytes "
                                          r"\(shape \[1024, 1099511627776\], dtype float64\)"):
        kiln.zeros(1024, 2**40, dtype=kiln.float64)
    # Past 2^62 bytes the request is refused before the allocator sees it.
    with pytest.raises(MemoryError, match=r"^\[randn\] cannot allocate 36893488147419103232 bytes "
                                          r"\(shape \[2305843009213693952\], dtype complex128\): larger than"):
        kiln.randn(2**61, dtype=kiln.complex128)
    big = kiln.zeros(1).expand(n)  # a view: no memory
    for call, op in ((lambda: kiln.zeros_like(big), "zeros_like"), (lambda: kiln.rand_like(big), "rand_like"),
                     (lambda: kiln.full_like(big, 2.0), "full_like"), (lambda: kiln.Tensor(n), "Tensor"),
                     (lambda: kiln.arange(float(n)), "arange"), (lambda: kiln.eye(2**25), "eye")):
        with pytest.raises(MemoryError, match=rf"^\[{op}\] cannot allocate \d+ bytes \(shape \[[\d, ]+\], dtype \w+\)"):
            call()
    # Any other op: the size, the tensor and the reason (no "std::bad_alloc").
    with pytest.raises(MemoryError, match=r"^\[allocate\] cannot allocate 4503599627370496 bytes for a float32 "
                                          r"tensor of shape \[\d+(, \d+)*\]: out of memory$"):
        big.contiguous()


# ---- 3. kiln.Tensor(...) and str arguments --------------------------------------


def test_tensor_constructor_follows_torch():
    t = kiln.Tensor([1, 2])
    assert t.dtype == kiln.float32 and t.tolist() == [1.0, 2.0]
    nested = kiln.Tensor([[1, 2.5], [3, True]])
    np.testing.assert_array_equal(nested.numpy(), np.array([[1, 2.5], [3, 1]], dtype=np.float32))
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    from_np = kiln.Tensor(a)
    assert from_np.dtype == kiln.float32
    np.testing.assert_array_equal(from_np.numpy(), a.astype(np.float32))
    e = kiln.Tensor(2, 3)
    assert e.shape == (2, 3) and e.dtype == kiln.float32
    assert kiln.Tensor().shape == (0,) and kiln.Tensor().dtype == kiln.float32
    src = kiln.arange(4)
    alias = kiln.Tensor(src)
    assert alias.data_ptr() == src.data_ptr() and alias.dtype == kiln.int64
    assert kiln.Tensor((1, 2), device="cpu").tolist() == [1.0, 2.0]


def test_tensor_constructor_errors_are_kiln_messages():
    for args in (("abc",), (1.5,), (None,), ({"a": 1},), (kiln.zeros(1), 2)):
        with pytest.raises(TypeError, match=r"^\[Tensor\] expected data .* use kiln.tensor\(data, dtype=\.\.\.\)"):
            kiln.Tensor(*args)
    with pytest.raises(TypeError, match=r"^\[Tensor\] unexpected keyword argument 'dtype'"):
        kiln.Tensor([1], dtype=kiln.int64)
    with pytest.raises(ValueError, match=r"^\[tensor\] expected sequence of length 2"):
        kiln.Tensor([[1, 2], [3]])
    with pytest.raises(ValueError, match=r"^\[Tensor\] negative dimension in shape \[2, -3\]"):
        kiln.Tensor(2, -3)


def byte_level_vocab():
    # GPT-2's byte -> printable character map: printable Latin-1 bytes stand for
    # themselves, the rest are shifted past 255 in byte order.
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    out, shift = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + shift)
            shift += 1
    return {out[b]: b for b in range(256)}


@pytest.fixture(scope="module")
def tok_json():
    return json.dumps({"version": "1.0", "added_tokens": [], "normalizer": None,
                       "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
                       "post_processor": None, "decoder": {"type": "ByteLevel"},
                       "model": {"type": "BPE", "vocab": byte_level_vocab(), "merges": []}})


@pytest.fixture(scope="module")
def tok(tok_json):
    return kiln.Tokenizer.from_str(tok_json)


def test_lone_surrogates_in_tokenizer_text(tok, tok_json):
    assert tok.encode("ab") == [ord("a"), ord("b")]
    with pytest.raises(ValueError, match=r"^\[encode\] text is not valid Unicode \(lone surrogate U\+D800 at index 0\)"):
        tok.encode("\ud800")
    with pytest.raises(ValueError, match=r"^\[encode\] text is not valid Unicode \(lone surrogate U\+DCFF at index 2\)"):
        tok.encode("ab\udcff")
    with pytest.raises(ValueError, match=r"^\[encode_batch\] texts\[1\] is not valid Unicode"):
        tok.encode_batch(["ok", "x\udfff"])
    assert tok.encode_batch(("a", "b")) == [[ord("a")], [ord("b")]]
    with pytest.raises(TypeError, match=r"^\[encode_batch\] texts must be a list or tuple of str"):
        tok.encode_batch("ab")
    with pytest.raises(ValueError, match=r"^\[token_to_id\] token is not valid Unicode"):
        tok.token_to_id("\ud800")
    with pytest.raises(TypeError, match=r"^\[encode\] text must be a str, got int"):
        tok.encode(5)
    with pytest.raises(ValueError, match=r"^\[tokenizer\] json is not valid Unicode"):
        kiln.Tokenizer.from_str(tok_json[:-1] + "\ud800")


def test_lone_surrogates_in_chat_templates(tok):
    with pytest.raises(ValueError, match=r"^\[chat_template\] source is not valid Unicode"):
        kiln.ChatTemplate("{{ x }}\ud800")
    t = kiln.ChatTemplate("{% for m in messages %}{{ m.content }}{% endfor %}")
    assert t.render(messages=[{"content": "hi"}]) == "hi"
    with pytest.raises(ValueError, match=r"^\[chat_template\] text is not valid Unicode \(lone surrogate U\+D83D at index 1\)"):
        t.render(messages=[{"content": "a\ud83d"}])
    with pytest.raises(ValueError, match=r"^\[chat_template\] key is not valid Unicode"):
        t.render(messages=[{"\udc00": "a"}])
    with pytest.raises(OverflowError, match=r"^\[chat_template\] integer"):
        t.render(messages=[], n=2**64)


def test_str_options_and_dtype_names():
    x = kiln.ones(2)
    with pytest.raises(ValueError, match=r"^\[div\] rounding_mode is not valid Unicode"):
        kiln.div(x, x, rounding_mode="\ud800")
    with pytest.raises(ValueError, match=r"^\[gelu\] approximate is not valid Unicode"):
        kiln.gelu(x, approximate="\ud800")
    with pytest.raises(ValueError, match=r"^\[dtype\] dtype name is not valid Unicode"):
        kiln.zeros(2, dtype="\ud800")
    # A bad dtype used to be "incompatible function arguments" for every factory.
    with pytest.raises(TypeError, match=r"^\[dtype\] unknown dtype 'floot32'"):
        kiln.zeros(2, dtype="floot32")
    with pytest.raises(TypeError, match=r"^\[dtype\] expected a kiln dtype, got 5"):
        kiln.ones(2, dtype=5)
    with pytest.raises(TypeError, match=r"^\[dtype\] unknown dtype"):
        x.sum(dtype="nope")
    assert kiln.zeros(2, dtype="float16").dtype == kiln.float16
    with pytest.raises(ValueError, match=r"^\[to\] argument is not valid Unicode"):
        x.to("\ud800")


def test_paths_are_encoded_as_open_does(tmp_path):
    tensors = {"w": kiln.arange(3, dtype=kiln.float32)}
    # "\udcff" is how Python spells the file-name byte 0xff (surrogateescape).
    odd = tmp_path / "\udcff.safetensors"
    kiln.io.save_file(tensors, str(odd))
    assert os.path.exists(os.fsencode(str(odd)))
    assert kiln.io.load_file(str(odd))["w"].tolist() == [0.0, 1.0, 2.0]
    # Bytes and os.PathLike paths too.
    assert kiln.io.load_file(os.fsencode(str(odd)))["w"].tolist() == [0.0, 1.0, 2.0]
    assert kiln.io.load_file(odd)["w"].tolist() == [0.0, 1.0, 2.0]
    assert kiln.io.load_metadata(pathlib.Path(odd)) == {}
    with pytest.raises(ValueError, match=r"^\[tokenizer\] path cannot be encoded for the file system "
                                         r"\(lone surrogate U\+D800 at index 1\)"):
        kiln.Tokenizer.from_file("a\ud800.json")
    with pytest.raises(TypeError, match=r"^\[io.load_file\] expected a path \(str, bytes or os.PathLike\), got int"):
        kiln.io.load_file(3)
    with pytest.raises(ValueError, match=r"^\[gguf\] path .* contains a NUL byte"):
        kiln.io.GGUFFile("a\0b")


# ---- 4. missing files -------------------------------------------------------------


def check_os_error(e, cls, code, op, path):
    s = no_cpp_text(e.value)
    assert type(e.value) is cls and e.value.errno == code, (type(e.value), e.value.errno, s)
    assert s.startswith(f"[{op}] ") and str(path) in s and os.strerror(code) in s, s


def test_missing_files_raise_file_not_found(tmp_path):
    nope = tmp_path / "nope"
    calls = [
        (lambda p: kiln.io.load_file(p), ".safetensors", "safetensors"),
        (lambda p: kiln.io.load_metadata(p), ".safetensors", "safetensors"),
        (lambda p: kiln.io.load_file(p), ".index.json", "safetensors"),
        (lambda p: kiln.Tokenizer.from_file(p), ".json", "tokenizer"),
        (lambda p: kiln.io.GGUFFile(p), ".gguf", "gguf"),
        (lambda p: kiln.io.load_config(p), ".json", "config"),
        (lambda p: kiln.llm.load(p), ".gguf", "llm"),
        (lambda p: kiln.llm.load(p), "", "llm"),
    ]
    for call, suffix, op in calls:
        path = str(nope) + suffix
        with pytest.raises(FileNotFoundError) as e:
            call(path)
        check_os_error(e, FileNotFoundError, errno.ENOENT, op, path)
    # A model directory without config.json: the file it looked for.
    with pytest.raises(FileNotFoundError) as e:
        kiln.io.load_config(str(tmp_path))
    check_os_error(e, FileNotFoundError, errno.ENOENT, "config", tmp_path / "config.json")


def test_directories_where_files_belong(tmp_path):
    for call, op in ((kiln.Tokenizer.from_file, "tokenizer"), (kiln.io.GGUFFile, "gguf")):
        with pytest.raises(IsADirectoryError) as e:
            call(str(tmp_path))
        check_os_error(e, IsADirectoryError, errno.EISDIR, op, tmp_path)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").mkdir()
    with pytest.raises(IsADirectoryError) as e:
        kiln.io.load_config(str(tmp_path / "m"))
    check_os_error(e, IsADirectoryError, errno.EISDIR, "config", tmp_path / "m" / "config.json")
    (tmp_path / "w.safetensors").mkdir()
    (tmp_path / "w.safetensors" / "model.safetensors").mkdir()
    with pytest.raises(IsADirectoryError):
        kiln.io.load_file(str(tmp_path / "w.safetensors"))


def unreadable_file(tmp_path):
    if os.geteuid() != 0:
        p = tmp_path / "locked.json"
        p.write_text("{}")
        p.chmod(0)
        return str(p)
    # root reads any file; a write-only sysctl is still refused to it.
    p = "/proc/sys/vm/drop_caches"
    try:
        os.close(os.open(p, os.O_RDONLY))
    except PermissionError:
        return p
    except OSError:
        pass
    pytest.skip("no unreadable file available")


def test_permission_denied(tmp_path):
    p = unreadable_file(tmp_path)
    for call, op in ((kiln.Tokenizer.from_file, "tokenizer"), (kiln.io.GGUFFile, "gguf"),
                     (kiln.io.load_file, "safetensors"), (kiln.io.load_config, "config")):
        with pytest.raises(PermissionError) as e:
            call(p)
        check_os_error(e, PermissionError, errno.EACCES, op, p)


def test_non_utf8_path_in_message(tmp_path):
    p = str(tmp_path / "\udcfe.safetensors")  # the byte 0xfe
    with pytest.raises(FileNotFoundError) as e:
        kiln.io.load_file(p)
    assert "\\xfe.safetensors: No such file or directory" in no_cpp_text(e.value)


def test_save_file_reports_the_os_reason(tmp_path):
    tensors = {"w": kiln.zeros(2)}
    missing_dir = tmp_path / "no" / "w.safetensors"
    with pytest.raises(FileNotFoundError) as e:
        kiln.io.save_file(tensors, str(missing_dir))
    check_os_error(e, FileNotFoundError, errno.ENOENT, "safetensors.save", missing_dir)
    (tmp_path / "d.safetensors").mkdir()  # a directory where the file would go
    with pytest.raises(IsADirectoryError) as e:
        kiln.io.save_file(tensors, str(tmp_path / "d.safetensors"))
    check_os_error(e, IsADirectoryError, errno.EISDIR, "safetensors.save", tmp_path / "d.safetensors")
    assert not (tmp_path / "d.safetensors.tmp").exists()  # the partial file is removed


def test_gguf_path_round_trips_non_utf8_names(tmp_path):
    src = pathlib.Path(__file__).resolve().parents[1] / "data" / "models" / "tiny-llama.gguf"
    odd = tmp_path / "\udcff.gguf"  # the file name byte 0xff
    with open(os.fsencode(str(odd)), "wb") as f:
        f.write(src.read_bytes())
    g = kiln.io.GGUFFile(odd)
    assert g.path == str(odd)
    assert len(g) == len(kiln.io.GGUFFile(str(src)))
