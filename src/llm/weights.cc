// Per-tensor weight preparation: fused rows, FP8/bf16 conversion, native blocks, expert stacks.
#include "llm/weights.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/quant_layout.h"
#include "kiln/error.h"
#include "kiln/linear.h"
#include "kiln/quantize.h"

namespace kiln::llm::detail {

int64_t Linear::bytes() const {
  int64_t b = 0;
  for (const Tensor* t : {&w, &scale, &bias})
    if (t->defined()) b += int64_t(t->nbytes());
  return b;
}

void Linear::apply(const Tensor& x, const Tensor& out) const {
  if (blocks) return block_linear_out(x, w, *blocks, bias, out);
  linear_out(x, w, bias, scale, out, codes, subnormals.get());
}

Fp8Codes scanned_codes(const Tensor& w, bool owned) {
  if (!owned || w.dtype() != DType::Float8_e4m3fn || fp8_has_nan_code(w)) return Fp8Codes::Unchecked;
  return Fp8Codes::NoNan;
}

std::shared_ptr<const Fp8Subnormals> scanned_subnormals(const Tensor& w, bool owned) {
  if (!owned || w.dtype() != DType::Float8_e4m3fn || w.dim() < 2) return nullptr;
  return std::make_shared<const Fp8Subnormals>(fp8_find_subnormals(w));
}

Linear fuse_rows(std::vector<Linear*> parts) {
  Linear f;
  int64_t N = 0;
  const Linear& a = *parts[0];
  for (const Linear* p : parts) {
    const bool row_scale = !p->scale.defined() || (p->scale.numel() == p->w.size(0) && p->w.size(0) > 1);
    if (!p->owned || !row_scale || p->blocks != a.blocks || p->w.dtype() != a.w.dtype() ||
        p->w.size(1) != a.w.size(1) || p->scale.defined() != a.scale.defined() ||
        p->bias.defined() != a.bias.defined())
      return f;
    N += p->w.size(0);
  }
  const int64_t K = a.w.size(1);
  f.w = empty({N, K}, a.w.dtype());
  if (a.scale.defined()) f.scale = empty({N, 1}, DType::Float32);
  if (a.bias.defined()) f.bias = empty({N}, DType::Float32);
  f.owned = true;
  f.blocks = a.blocks;
  f.codes = Fp8Codes::NoNan;
  for (const Linear* p : parts)
    if (p->codes != Fp8Codes::NoNan) f.codes = Fp8Codes::Unchecked;
  int64_t r = 0;
  for (Linear* p : parts) {
    const int64_t n = p->w.size(0);
    Tensor w = f.w.narrow(0, r, n);
    w.copy_(p->w);
    p->w = w;
    if (f.scale.defined()) {
      Tensor sc = f.scale.narrow(0, r, n);
      sc.copy_(p->scale.reshape({n, 1}));
      p->scale = sc;
    }
    if (f.bias.defined()) {
      Tensor b = f.bias.narrow(0, r, n);
      b.copy_(p->bias);
      p->bias = b;
    }
    r += n;
  }
  f.subnormals = scanned_subnormals(f.w, true);
  return f;
}

namespace {

bool same_storage(const Tensor& a, const Tensor& b) { return a.storage() == b.storage(); }

DType linear_dtype(WeightFormat f) {
  return f == WeightFormat::FP8 || f == WeightFormat::Native ? DType::Float8_e4m3fn
         : f == WeightFormat::BF16                           ? DType::BFloat16
                                                             : DType::Float32;
}

// Row scales [N] for a native FP8 weight [N, K] with its checkpoint scale, or
// undefined when the scale varies along K (block scales with several K blocks).
Tensor row_scale_of(const Tensor& scale, int64_t N, int64_t K) {
  const Tensor s = scale.to(DType::Float32).contiguous();
  Tensor r = empty({N}, DType::Float32);
  float* rp = r.data<float>();
  const float* sp = s.data<float>();
  if (s.numel() == 1) {
    std::fill(rp, rp + N, sp[0]);
  } else if (s.numel() == N) {
    std::copy(sp, sp + N, rp);
  } else if (s.dim() == 2 && s.size(0) == (N + 127) / 128 && s.size(1) == 1 && K <= 128 * s.size(1)) {
    for (int64_t n = 0; n < N; ++n) rp[n] = sp[n / 128];
  } else {
    return Tensor();
  }
  return r;
}

}  // namespace

WeightLoader::WeightLoader(const TensorSource& src, const io::ModelConfig& cfg, const LoadOptions& opt)
    : src_(src), cfg_(cfg), opt_(opt), total_bytes_(src.total_bytes()) {}

void WeightLoader::done(const std::string& name, bool converted) {
  done_bytes_ += src_.stored_bytes(name);
  if (converted) src_.release(name);
  if (opt_.progress) opt_.progress(std::min(done_bytes_, total_bytes_), total_bytes_);
}

void WeightLoader::finish() {
  done_bytes_ = total_bytes_;
  if (opt_.progress) opt_.progress(total_bytes_, total_bytes_);
}

Tensor WeightLoader::f32(const std::string& name) {
  const Tensor t = src_.get(name);
  Tensor r = t.to(DType::Float32).contiguous();
  done(name, !same_storage(r, t));
  return r;
}

Tensor WeightLoader::convert_by_rows(const std::string& name, DType d, Tensor* scale) {
  const Shape shape = src_.shape_of(name);
  KILN_CHECK(shape.size() == 2, ValueError, "[llm] " << name << " must be 2-D, got " << shape_to_string(shape));
  const int64_t N = shape[0], K = shape[1];
  Tensor out = empty({N, K}, d);
  if (d == DType::Float8_e4m3fn) *scale = empty({N, 1}, DType::Float32);
  const int64_t chunk = quantize_chunk_rows(K);
  for (int64_t r0 = 0; r0 < N; r0 += chunk) {
    const int64_t n = std::min(chunk, N - r0);
    const Tensor part = src_.get_rows(name, r0, n);
    if (d == DType::Float8_e4m3fn) {
      // Per row: chunking changes nothing. Straight into place, no copy of the codes.
      quantize_fp8_into(part, QuantGranularity::Row, out.narrow(0, r0, n), scale->narrow(0, r0, n));
    } else {
      out.narrow(0, r0, n).copy_(part);
    }
  }
  done(name, true);
  return out;
}

std::optional<Linear> WeightLoader::native_blocks(const std::string& wn) {
  if (opt_.weights != WeightFormat::Native) return std::nullopt;
  const std::optional<BlockType> bt = src_.block_type(wn);
  if (!bt) return std::nullopt;
  // As stored: the blocks, copied out of the mapped file (whose pages are
  // then dropped) so that q/k/v and gate/up can be fused into one weight.
  Linear L;
  L.w = src_.blocks(wn).contiguous().clone();
  L.blocks = bt;
  L.owned = true;
  KILN_CHECK(block_scales_finite(L.w, *bt), ValueError,
             "[llm] " << wn << " (" << block_type_info(*bt).name << ") in " << src_.describe()
                      << " has a NaN or infinite block scale; the file is damaged");
  done(wn, true);
  return L;
}

Linear WeightLoader::embedding(const std::string& name) {
  if (std::optional<Linear> L = native_blocks(name)) return *L;
  const DType d = opt_.weights == WeightFormat::F32 ? DType::Float32 : DType::BFloat16;
  if (src_.dequantizes()) return Linear{convert_by_rows(name, d, nullptr)};
  const Tensor t = src_.get(name);
  KILN_CHECK(t.dim() == 2, ValueError, "[llm] " << name << " must be 2-D, got " << t.shape_str());
  Tensor r = is_fp8(t.dtype()) ? t.to(DType::Float32).to(d) : t.to(d).contiguous();
  done(name, !same_storage(r, t));
  return Linear{r};
}

Linear WeightLoader::linear(const std::string& prefix) {
  const std::string wn = prefix + ".weight";
  if (std::optional<Linear> L = native_blocks(wn)) {
    if (src_.contains(prefix + ".bias")) L->bias = f32(prefix + ".bias");
    return *L;
  }
  if (src_.dequantizes()) {
    Linear L;
    L.w = convert_by_rows(wn, linear_dtype(opt_.weights), &L.scale);
    L.owned = true;
    L.codes = scanned_codes(L.w, true);
    L.subnormals = scanned_subnormals(L.w, true);
    if (src_.contains(prefix + ".bias")) L.bias = f32(prefix + ".bias");
    return L;
  }
  const Tensor t = src_.get(wn);
  KILN_CHECK(t.dim() == 2, ValueError, "[llm] " << wn << " must be 2-D, got " << t.shape_str());
  Linear L;
  if (is_fp8(t.dtype())) {
    // A native FP8 checkpoint: used as it is, with its scale.
    std::string sn;
    for (const char* suffix : {".weight_scale_inv", ".weight_scale"})
      if (src_.contains(prefix + suffix)) sn = prefix + suffix;
    KILN_CHECK(
        !sn.empty(), ValueError,
        "[llm] FP8 weight " << wn << " has no weight_scale or weight_scale_inv in " << src_.describe());
    Tensor s = src_.get(sn);
    if (cfg_.quant.scheme == io::QuantScheme::Fp8Block)
      KILN_CHECK((cfg_.quant.block_n == 0 || cfg_.quant.block_n == 128) &&
                     (cfg_.quant.block_k == 0 || cfg_.quant.block_k == 128),
                 NotImplementedError,
                 "[llm] FP8 block size [" << cfg_.quant.block_n << ", " << cfg_.quant.block_k
                                          << "] is not supported (only [128, 128])");
    const DType d = linear_dtype(opt_.weights);
    if (d != DType::Float8_e4m3fn) {
      // --dtype bf16 / f32: the checkpoint's FP8 weights, dequantized at load.
      L.w = dequantize(t, s, d);
      L.owned = true;
      done(wn, true);
      done(sn, true);
    } else {
      L.w = t;
      L.scale = s.to(DType::Float32).contiguous();
      done(wn, false);
      done(sn, !same_storage(L.scale, s));
    }
  } else {
    const DType d = linear_dtype(opt_.weights);
    if (d == DType::Float8_e4m3fn) {
      auto [q, s] = quantize_fp8(t, QuantGranularity::Row);
      L.w = q;
      L.scale = s;
    } else {
      L.w = t.to(d).contiguous();
    }
    L.owned = !same_storage(L.w, t);
    L.codes = scanned_codes(L.w, L.owned);
    L.subnormals = scanned_subnormals(L.w, L.owned);
    done(wn, L.owned);
  }
  if (src_.contains(prefix + ".bias")) L.bias = f32(prefix + ".bias");
  return L;
}

namespace {

// The per-expert projection names of a layout.
struct ExpertNames {
  const char *gate, *up, *down;
};
ExpertNames expert_names(bool mixtral_names) {
  return mixtral_names ? ExpertNames{"w1", "w3", "w2"} : ExpertNames{"gate_proj", "up_proj", "down_proj"};
}

// Expert stacks' FP8 codes and subnormals, as scanned_codes / scanned_subnormals.
void scan_experts(WeightLoader::Experts& x, bool owned) {
  x.codes =
      scanned_codes(x.gate_up, owned) == Fp8Codes::NoNan && scanned_codes(x.down, owned) == Fp8Codes::NoNan
          ? Fp8Codes::NoNan
          : Fp8Codes::Unchecked;
  x.gate_up_subnormals = scanned_subnormals(x.gate_up, owned);
  x.down_subnormals = scanned_subnormals(x.down, owned);
}

// One expert's projection as a checkpoint stores it: weight [N, K] and its
// native scale (if any).
struct ExpertProj {
  Tensor w, s;
  std::string wn, sn;
};

// New expert stacks in dtype d, filled one projection at a time:
// gate_up [E, 2I, H] (gate rows first), down [E, H, I], and the row scales
// [E, 2I] / [E, H] when d is FP8.
class ExpertStack {
 public:
  ExpertStack(int64_t E, int64_t I, int64_t H, DType d, const std::string& prefix)
      : I_(I), H_(H), d_(d), prefix_(prefix) {
    x_.gate_up = empty({E, 2 * I, H}, d);
    x_.down = empty({E, H, I}, d);
    if (d == DType::Float8_e4m3fn) {
      x_.gate_up_scale = empty({E, 2 * I}, DType::Float32);
      x_.down_scale = empty({E, H}, DType::Float32);
    }
  }
  // Expert e's gate [I, H], up [I, H] and down [H, I], each with its native
  // scale (undefined: none).
  void gate(int64_t e, const Tensor& w, const Tensor& s = Tensor()) {
    put(w, s, x_.gate_up.select(0, e).narrow(0, 0, I_), scale_rows(x_.gate_up_scale, e, 0, I_));
  }
  void up(int64_t e, const Tensor& w, const Tensor& s = Tensor()) {
    put(w, s, x_.gate_up.select(0, e).narrow(0, I_, I_), scale_rows(x_.gate_up_scale, e, I_, I_));
  }
  void down(int64_t e, const Tensor& w, const Tensor& s = Tensor()) {
    put(w, s, x_.down.select(0, e), scale_rows(x_.down_scale, e, 0, H_));
  }
  // The filled stacks, scanned (converted at load, so owned); call once.
  WeightLoader::Experts finish() {
    scan_experts(x_, true);
    return std::move(x_);
  }

 private:
  static Tensor scale_rows(const Tensor& s, int64_t e, int64_t r0, int64_t n) {
    return s.defined() ? s.select(0, e).narrow(0, r0, n) : Tensor();
  }
  // Writes one [N, K] projection (with its native scale, if any) into dst [N, K] / dscale [N].
  void put(const Tensor& w, const Tensor& s, Tensor dst, Tensor dscale) const {
    KILN_CHECK(w.dim() == 2 && w.size(0) == dst.size(0) && w.size(1) == dst.size(1), ValueError,
               "[llm] expert weight in " << prefix_ << " has shape " << w.shape_str() << ", expected "
                                         << dst.shape_str());
    if (d_ != DType::Float8_e4m3fn) {  // --dtype bf16 / f32; an FP8 checkpoint's experts dequantized
      dst.copy_(is_fp8(w.dtype()) && s.defined() ? dequantize(w, s) : w);
      return;
    }
    if (is_fp8(w.dtype())) {
      const Tensor rs = s.defined() ? row_scale_of(s, w.size(0), w.size(1)) : ones({w.size(0)});
      if (rs.defined() && w.dtype() == d_) {
        dst.copy_(w);
        dscale.copy_(rs);
        return;
      }
      // Block scales that vary along K cannot drive the per-row grouped
      // kernel: these experts alone are re-quantized per row.
      quantize_fp8_into(dequantize(w, s), QuantGranularity::Row, dst, dscale.view({-1, 1}));
      return;
    }
    quantize_fp8_into(w, QuantGranularity::Row, dst, dscale.view({-1, 1}));
  }

  WeightLoader::Experts x_;
  int64_t I_, H_;
  DType d_;
  const std::string& prefix_;
};

}  // namespace

WeightLoader::Experts WeightLoader::experts(const std::string& prefix, int64_t E, int64_t I, int64_t H,
                                            bool mixtral_names) {
  const std::string st = prefix + ".experts.";
  if (src_.contains(st + "gate_up_proj.weight")) return experts_kiln_layout(prefix, E, I, H);
  const ExpertNames n = expert_names(mixtral_names);
  // Stacked layouts: GGUF (experts.gate_proj.weight [E, I, H]) and
  // transformers 5's fused experts (experts.gate_up_proj [E, 2I, H], experts.down_proj [E, H, I]).
  const bool stacked = src_.contains(st + n.gate + ".weight");
  const bool fused = src_.contains(st + "gate_up_proj");
  if (!stacked && !fused) return experts_per_expert(prefix, E, I, H, mixtral_names);
  if (stacked)
    if (std::optional<Experts> x = experts_native_blocks(prefix, E, I, H, mixtral_names)) return *x;
  const bool fp8_src = stacked ? is_fp8(src_.get_slice(st + n.gate + ".weight", 0).dtype())
                               : is_fp8(src_.get(st + "gate_up_proj").dtype());
  KILN_CHECK(!fp8_src, NotImplementedError,
             "[llm] stacked FP8 experts in " << prefix << " are not supported; store them per expert");
  return stacked ? experts_stacked(prefix, E, I, H, mixtral_names) : experts_fused(prefix, E, I, H);
}

// kiln's own stacked layout (named_weights): gate_up_proj.weight [E, 2I, H],
// down_proj.weight [E, H, I], FP8 with weight_scale [E, N, 1]; used as it is
// when already in the held dtype.
WeightLoader::Experts WeightLoader::experts_kiln_layout(const std::string& prefix, int64_t E, int64_t I,
                                                        int64_t H) {
  const std::string st = prefix + ".experts.";
  Experts x;
  kiln_expert_stack(st + "gate_up_proj.weight", E, 2 * I, H, x.gate_up, x.gate_up_scale);
  kiln_expert_stack(st + "down_proj.weight", E, H, I, x.down, x.down_scale);
  scan_experts(x, !same_storage(x.gate_up, src_.get(st + "gate_up_proj.weight")) &&
                      !same_storage(x.down, src_.get(st + "down_proj.weight")));
  return x;
}

// One stack wn [E, N, K] of kiln's layout into w (and its row scales [E, N] in sc when FP8).
void WeightLoader::kiln_expert_stack(const std::string& wn, int64_t E, int64_t N, int64_t K, Tensor& w,
                                     Tensor& sc) {
  const Tensor t = src_.get(wn);
  KILN_CHECK(t.dim() == 3 && t.size(0) == E && t.size(1) == N && t.size(2) == K, ValueError,
             "[llm] " << wn << " has shape " << t.shape_str() << ", expected [" << E << ", " << N << ", " << K
                      << "]");
  if (is_fp8(t.dtype())) {
    const std::string sn = wn + "_scale";
    const Tensor s = src_.get(sn);
    KILN_CHECK(
        s.numel() == E * N, ValueError,
        "[llm] " << sn << " has shape " << s.shape_str() << ", expected [" << E << ", " << N << ", 1]");
    const DType d = linear_dtype(opt_.weights);
    if (d != DType::Float8_e4m3fn) {  // --dtype bf16 / f32: dequantized at load
      w = dequantize(t, s.reshape({E, N, 1}), d);
      done(wn, true);
      done(sn, true);
      return;
    }
    w = t;
    sc = s.to(DType::Float32).contiguous().view({E, N});
    done(wn, false);
    done(sn, !same_storage(sc, s));
  } else if (linear_dtype(opt_.weights) == DType::Float8_e4m3fn) {
    auto [q, qs] = quantize_fp8(t, QuantGranularity::Row);
    w = q;
    sc = qs.view({E, N});
    done(wn, true);
  } else {
    w = t.to(linear_dtype(opt_.weights)).contiguous();
    done(wn, !same_storage(w, t));
  }
}

// GGUF's stacks experts.<gate|up|down>.weight, expert by expert (a GGUF slice
// is dequantized alone, not the whole stack).
WeightLoader::Experts WeightLoader::experts_stacked(const std::string& prefix, int64_t E, int64_t I,
                                                    int64_t H, bool mixtral_names) {
  const ExpertNames n = expert_names(mixtral_names);
  const std::string st = prefix + ".experts.";
  const std::string names[] = {st + n.gate + ".weight", st + n.up + ".weight", st + n.down + ".weight"};
  ExpertStack x(E, I, H, linear_dtype(opt_.weights), prefix);
  for (int64_t e = 0; e < E; ++e) {
    x.gate(e, src_.get_slice(names[0], e));
    x.up(e, src_.get_slice(names[1], e));
    x.down(e, src_.get_slice(names[2], e));
  }
  for (const auto& nm : names) done(nm, true);
  return x.finish();
}

// Under native, GGUF's stacks as stored when all three are in block types,
// gate and up in the same one: gate and up rows copied into one stack of
// blocks per expert (rows are whole blocks, so rows move as bytes). Else
// nullopt, and the experts are converted to FP8 as under fp8.
std::optional<WeightLoader::Experts> WeightLoader::experts_native_blocks(const std::string& prefix, int64_t E,
                                                                         int64_t I, int64_t H,
                                                                         bool mixtral_names) {
  if (opt_.weights != WeightFormat::Native) return std::nullopt;
  const ExpertNames n = expert_names(mixtral_names);
  const std::string st = prefix + ".experts.";
  const std::string names[] = {st + n.gate + ".weight", st + n.up + ".weight", st + n.down + ".weight"};
  const std::optional<BlockType> g = src_.block_type(names[0]), u = src_.block_type(names[1]),
                                 d = src_.block_type(names[2]);
  if (!g || !u || !d || *g != *u) return std::nullopt;
  const Tensor gate = src_.blocks(names[0]), up = src_.blocks(names[1]), down = src_.blocks(names[2]);
  const int64_t gate_bytes = block_row_bytes(*g, H), down_bytes = block_row_bytes(*d, I);
  auto expect = [&](const std::string& nm, const Tensor& t, int64_t N, int64_t bytes) {
    KILN_CHECK(t.dim() == 3 && t.size(0) == E && t.size(1) == N && t.size(2) == bytes, ValueError,
               "[llm] " << nm << " in " << src_.describe() << " holds " << t.shape_str()
                        << " bytes of blocks, expected [" << E << ", " << N << ", " << bytes << "]");
  };
  expect(names[0], gate, I, gate_bytes);
  expect(names[1], up, I, gate_bytes);
  expect(names[2], down, H, down_bytes);
  Experts x;
  x.gate_up = empty({E, 2 * I, gate_bytes}, DType::UInt8);
  x.gate_up.narrow(1, 0, I).copy_(gate);
  x.gate_up.narrow(1, I, I).copy_(up);
  x.down = down.contiguous().clone();
  x.gate_up_blocks = g;
  x.down_blocks = d;
  auto finite = [&](const Tensor& t, BlockType bt, const std::string& what) {
    KILN_CHECK(block_scales_finite(t.view({-1, t.size(2)}), bt), ValueError,
               "[llm] " << what << " (" << block_type_info(bt).name << ") in " << src_.describe()
                        << " has a NaN or infinite block scale; the file is damaged");
  };
  finite(x.gate_up, *g, names[0] + " / " + names[1]);
  finite(x.down, *d, names[2]);
  for (const auto& nm : names) done(nm, true);
  return x;
}

// transformers 5's fused experts: experts.gate_up_proj [E, 2I, H] and
// experts.down_proj [E, H, I], either possibly stored transposed.
WeightLoader::Experts WeightLoader::experts_fused(const std::string& prefix, int64_t E, int64_t I,
                                                  int64_t H) {
  const std::string st = prefix + ".experts.";
  const std::string names[] = {st + "gate_up_proj", st + "down_proj"};
  ExpertStack x(E, I, H, linear_dtype(opt_.weights), prefix);
  Tensor gu = src_.get(names[0]);
  // [E, H, 2I] (transposed) only when it cannot be the expected [E, 2I, H].
  if (gu.dim() == 3 && !(gu.size(1) == 2 * I && gu.size(2) == H) && gu.size(1) == H && gu.size(2) == 2 * I)
    gu = gu.transpose(1, 2);
  const Tensor g = gu.narrow(1, 0, I), u = gu.narrow(1, I, I);
  Tensor dn = src_.get(names[1]);
  if (dn.dim() == 3 && !(dn.size(1) == H && dn.size(2) == I) && dn.size(1) == I && dn.size(2) == H)
    dn = dn.transpose(1, 2);
  KILN_CHECK(g.dim() == 3 && g.size(0) == E && dn.dim() == 3 && dn.size(0) == E, ValueError,
             "[llm] stacked experts in " << prefix << " have shapes " << g.shape_str() << " / "
                                         << dn.shape_str() << ", expected " << E << " experts");
  for (int64_t e = 0; e < E; ++e) {
    x.gate(e, g.select(0, e));
    x.up(e, u.select(0, e));
    x.down(e, dn.select(0, e));
  }
  for (const auto& nm : names) done(nm, true);
  return x.finish();
}

// One tensor per expert: experts.<e>.<gate|up|down>.weight, each with its
// native FP8 scale (weight_scale or weight_scale_inv) if any.
WeightLoader::Experts WeightLoader::experts_per_expert(const std::string& prefix, int64_t E, int64_t I,
                                                       int64_t H, bool mixtral_names) {
  const ExpertNames n = expert_names(mixtral_names);
  auto proj = [&](int64_t e, const char* p) {
    ExpertProj r;
    const std::string base = prefix + ".experts." + std::to_string(e) + "." + p;
    r.wn = base + ".weight";
    r.w = src_.get(r.wn);
    for (const char* suffix : {".weight_scale_inv", ".weight_scale"})
      if (src_.contains(base + suffix)) r.sn = base + suffix;
    if (!r.sn.empty()) r.s = src_.get(r.sn);
    return r;
  };
  ExpertStack x(E, I, H, linear_dtype(opt_.weights), prefix);
  for (int64_t e = 0; e < E; ++e) {
    const ExpertProj g = proj(e, n.gate), u = proj(e, n.up), dn = proj(e, n.down);
    x.gate(e, g.w, g.s);
    x.up(e, u.w, u.s);
    x.down(e, dn.w, dn.s);
    for (const ExpertProj* p : {&g, &u, &dn}) {
      done(p->wn, true);
      if (!p->sn.empty()) done(p->sn, true);
    }
  }
  return x.finish();
}

}  // namespace kiln::llm::detail
