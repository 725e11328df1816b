// Loading and running the decoder-only transformer (attention, dense MLP, the
// token loop); the MoE block is in moe_block.cc.
#include "llm/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "kiln/allocator.h"
#include "kiln/attention.h"
#include "kiln/error.h"
#include "kiln/linear.h"
#include "kiln/nn.h"
#include "kiln/sysinfo.h"
#include "kiln/thread_pool.h"

namespace kiln::llm::detail {

namespace {

RopeScaling rope_scaling_of(const io::ModelConfig& c) {
  RopeScaling r;
  const auto& s = c.rope_scaling;
  if (s.type.empty() || s.type == "default") return r;
  if (s.type == "linear") {
    r.kind = RopeScaling::Kind::Linear;
    r.factor = s.factor;
    return r;
  }
  if (s.type == "llama3") {
    r.kind = RopeScaling::Kind::Llama3;
    r.factor = s.factor;
    r.low_freq_factor = s.low_freq_factor;
    r.high_freq_factor = s.high_freq_factor;
    if (s.original_max_position_embeddings > 0)
      r.original_max_position_embeddings = s.original_max_position_embeddings;
    return r;
  }
  KILN_CHECK(false, NotImplementedError,
             "[llm] rope scaling '" << s.type << "' is not supported (default, linear, llama3)");
  return r;
}

// "2.1 TiB": a byte count (possibly past int64) for messages.
std::string format_bytes(double b) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  int u = 0;
  while (b >= 1024 && u < 8) {
    b /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, kUnits[u]);
  return buf;
}

// The KV-cache positions: LoadOptions::max_context when given (refused, before
// anything is allocated, when its cache cannot fit in the memory available),
// else the length the model was trained for, lowered to what fits. A sliding
// window at least as long as the context never slides, so the context is at
// most the window.
int64_t choose_context(const io::ModelConfig& c, const LoadOptions& o, int64_t Hk, int64_t D) {
  KILN_CHECK(o.max_context >= 0, ValueError,
             "[llm] max_context must be >= 0 (0: the model's), got " << o.max_context);
  const int64_t trained = c.max_position_embeddings > 0 ? c.max_position_embeddings : kFallbackContext;
  int64_t ctx = o.max_context > 0 ? o.max_context : trained;
  if (c.sliding_window && *c.sliding_window > 0) ctx = std::min(ctx, *c.sliding_window);
  const int64_t per_token = KVCache::bytes_for(c.num_hidden_layers, 1, Hk, 1, D, o.kv_dtype);
  const int64_t avail = sys::available_memory_bytes();
  if (avail <= 0 || per_token <= 0) return ctx;  // the OS does not say: the cache commits as it fills
  const int64_t fits = avail / per_token;
  if (ctx <= fits) return ctx;
  if (o.max_context == 0 && fits >= 1) return fits >= 256 ? fits / 256 * 256 : fits;
  KILN_CHECK(false, ValueError,
             "[llm] a context of " << ctx << " tokens needs " << format_bytes(double(per_token) * double(ctx))
                                   << " for the KV cache (" << per_token
                                   << " bytes per token); this machine has " << format_bytes(double(avail))
                                   << " available (at most " << fits << " tokens fit)");
  return ctx;
}

// x[i] += y[i] over n floats.
void add_(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

// The MoE block of the layer whose names start with p ("model.layers.N.").
std::unique_ptr<MoEWeights> load_moe(WeightLoader& ld, const io::ModelConfig& c, const std::string& p,
                                     int64_t H, const std::string& model_name) {
  auto m = std::make_unique<MoEWeights>();
  m->E = c.num_experts;
  m->top_k = c.num_experts_per_tok;
  m->I = c.moe_intermediate_size > 0 ? c.moe_intermediate_size : c.intermediate_size;
  m->norm_topk_prob = c.norm_topk_prob;
  m->mixtral_names = c.architecture == "mixtral";
  m->prefix = p + (m->mixtral_names ? "block_sparse_moe" : "mlp");
  KILN_CHECK(
      m->top_k >= 1 && m->top_k <= m->E, ValueError,
      "[llm] " << model_name << ": num_experts_per_tok " << m->top_k << " outside [1, " << m->E << "]");
  m->router = ld.f32(m->prefix + ".gate.weight");
  auto x = ld.experts(m->prefix, m->E, m->I, H, m->mixtral_names);
  m->gate_up = x.gate_up;
  m->gate_up_scale = x.gate_up_scale;
  m->down = x.down;
  m->down_scale = x.down_scale;
  m->gate_up_blocks = x.gate_up_blocks;
  m->down_blocks = x.down_blocks;
  m->codes = x.codes;
  m->gate_up_subnormals = x.gate_up_subnormals;
  m->down_subnormals = x.down_subnormals;
  return m;
}

// RoPE inverse frequencies [rotary_dim / 2] for the config's scaling, divided
// by the checkpoint's rope_freqs when it has one.
Tensor rope_frequencies(WeightLoader& ld, const io::ModelConfig& c, int64_t D, const RopeScaling& rs,
                        const std::string& model_name) {
  Tensor inv = rope_inv_freq(D, c.rope_theta, rs);
  if (ld.has("rope_freqs.weight")) {
    // GGUF (llama.cpp): inv_freq[i] / rope_freqs[i], the llama3 scaling precomputed.
    const Tensor f = ld.f32("rope_freqs.weight");
    KILN_CHECK(
        f.numel() == inv.numel(), ValueError,
        "[llm] " << model_name << ": rope_freqs has " << f.numel() << " entries, expected " << inv.numel());
    inv = inv.contiguous().clone();
    for (int64_t i = 0; i < inv.numel(); ++i) inv.data<float>()[i] /= f.data<float>()[i];
  }
  return inv;
}

}  // namespace

int64_t MoEWeights::expert_bytes() const {
  int64_t b = (gate_up.nbytes() + down.nbytes()) / E;
  if (gate_up_scale.defined()) b += (gate_up_scale.nbytes() + down_scale.nbytes()) / E;
  return b;
}

Transformer::Transformer(io::ModelConfig cfg, const TensorSource& src, const LoadOptions& options,
                         std::optional<Tokenizer> tokenizer, std::string name)
    : cfg_(std::move(cfg)),
      format_(options.weights),
      tokenizer_(std::move(tokenizer)),
      name_(std::move(name)) {
  const auto& c = cfg_;
  H_ = c.hidden_size;
  Hq_ = c.num_attention_heads;
  Hk_ = c.num_key_value_heads > 0 ? c.num_key_value_heads : Hq_;
  D_ = c.head_dim > 0 ? c.head_dim : H_ / Hq_;
  V_ = c.vocab_size;
  KILN_CHECK(
      H_ > 0 && Hq_ > 0 && D_ > 0 && V_ > 0 && c.num_hidden_layers > 0 && Hq_ % Hk_ == 0 && D_ % 2 == 0,
      ValueError, "[llm] " << name_ << ": inconsistent config (" << c.summary() << ")");
  olmoe_qk_norm_ = c.architecture == "olmoe";
  const RopeScaling rs = rope_scaling_of(c);

  // Before the weights: a context that cannot fit is refused at once, and the
  // cache is only an address-space reservation (kv_cache.cc) that fills as used.
  max_ctx_ = choose_context(c, options, Hk_, D_);
  main_.cache = KVCache(c.num_hidden_layers, 1, Hk_, max_ctx_, D_, options.kv_dtype);

  WeightLoader ld(src, cfg_, options);
  embed_ = ld.embedding("model.embed_tokens.weight");
  KILN_CHECK(embed_.w.size(0) >= V_ && embed_.in_features() == H_, ValueError,
             "[llm] " << name_ << ": embedding table [" << embed_.w.size(0) << ", " << embed_.in_features()
                      << "] does not match vocab " << V_ << " x hidden " << H_);
  V_ = embed_.w.size(0);
  layers_.resize(size_t(c.num_hidden_layers));
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) load_layer(ld, l);
  final_norm_ = ld.f32("model.norm.weight");
  if (ld.has("lm_head.weight") && !c.tie_word_embeddings) lm_head_ = ld.linear("lm_head");
  const Tensor inv = rope_frequencies(ld, c, D_, rs, name_);
  ld.finish();
  inv_freq_ = inv.to(DType::Float32).contiguous();

  allocate_scratch();
  // The per-tensor conversion temporaries (a dequantized f32 embedding table
  // can be 100+ MB) go back to the system rather than stay in the cache.
  empty_cache();
}

// Layer l's weights, checked against the config: attention (q|k|v fused when
// they qualify), norms, and the MoE block or dense MLP (gate|up fused).
void Transformer::load_layer(WeightLoader& ld, int64_t l) {
  const auto& c = cfg_;
  auto& L = layers_[size_t(l)];
  const std::string p = "model.layers." + std::to_string(l) + ".";
  L.attn_norm = ld.f32(p + "input_layernorm.weight");
  L.q = ld.linear(p + "self_attn.q_proj");
  L.k = ld.linear(p + "self_attn.k_proj");
  L.v = ld.linear(p + "self_attn.v_proj");
  L.o = ld.linear(p + "self_attn.o_proj");
  L.qkv = fuse_rows({&L.q, &L.k, &L.v});
  KILN_CHECK(L.q.w.size(0) == Hq_ * D_ && L.k.w.size(0) == Hk_ * D_ && L.v.w.size(0) == Hk_ * D_ &&
                 L.q.in_features() == H_ && L.o.w.size(0) == H_ && L.o.in_features() == Hq_ * D_,
             ValueError,
             "[llm] " << name_ << ": attention weights of layer " << l << " do not match the config");
  if (c.qk_norm || ld.has(p + "self_attn.q_norm.weight")) {
    L.q_norm = ld.f32(p + "self_attn.q_norm.weight");
    L.k_norm = ld.f32(p + "self_attn.k_norm.weight");
  }
  L.mlp_norm = ld.f32(p + "post_attention_layernorm.weight");
  if (c.is_moe() && c.layer_is_moe(l)) {
    L.moe = load_moe(ld, c, p, H_, name_);
  } else {
    L.gate = ld.linear(p + "mlp.gate_proj");
    L.up = ld.linear(p + "mlp.up_proj");
    L.down = ld.linear(p + "mlp.down_proj");
    L.gate_up = fuse_rows({&L.gate, &L.up});
  }
}

// Scratch for chunks of up to min(kMaxChunk, max context) rows; the MLP
// buffers are as wide as the widest dense layer (at least intermediate_size).
void Transformer::allocate_scratch() {
  const auto& c = cfg_;
  int64_t max_I = c.intermediate_size;
  for (const auto& L : layers_)
    if (!L.moe) max_I = std::max(max_I, L.gate.w.size(0));
  const int64_t R = std::min(kMaxChunk, max_ctx_);
  s_.rows = R;
  // cos/sin of a chunk's positions, computed per chunk rather than as a table
  // of every position: a long context costs nothing until it is used.
  s_.cos = empty({R, inv_freq_.numel()});
  s_.sin = empty({R, inv_freq_.numel()});
  s_.x = empty({R, H_});
  s_.xn = empty({R, H_});
  s_.tmp = empty({R, H_});
  s_.q = empty({R, Hq_ * D_});
  s_.attn = empty({R, Hq_ * D_});
  s_.k = empty({R, Hk_ * D_});
  s_.v = empty({R, Hk_ * D_});
  s_.gate = empty({R, max_I});
  s_.up = empty({R, max_I});
  s_.act = empty({R, max_I});
  s_.last = empty({1, H_});
  s_.fused_rows = std::min(R, kMaxFusedRows);
  s_.qkv1 = empty({s_.fused_rows, (Hq_ + 2 * Hk_) * D_});
  s_.gate_up1 = empty({s_.fused_rows, 2 * max_I});
  s_.logits1 = empty({1, V_});
  s_.ids = empty({R}, DType::Int32);
  if (c.is_moe()) {
    const int64_t E = c.num_experts, k = c.num_experts_per_tok;
    const int64_t I = c.moe_intermediate_size > 0 ? c.moe_intermediate_size : c.intermediate_size;
    s_.router_logits = empty({R, E});
    s_.route_w = empty({R, k});
    s_.route_ids = empty({R, k}, DType::Int32);
    s_.perm = empty({R * k}, DType::Int32);
    s_.offs = empty({E}, DType::Int32);
    s_.xp = empty({R * k, H_});
    s_.h = empty({R * k, 2 * I});
    s_.mact = empty({R * k, I});
    s_.yp = empty({R * k, H_});
    s_.probs.resize(size_t(R * E));
    s_.order.resize(size_t(R * E));
    s_.inv.resize(size_t(R * k));
    s_.counts.resize(size_t(E) + 1);
  }
}

const Tokenizer& Transformer::tokenizer() const {
  KILN_CHECK(tokenizer_.has_value(), ValueError,
             "[llm] " << name_ << " has no tokenizer (no tokenizer.json beside the weights)");
  return *tokenizer_;
}

void Transformer::run_reset(int64_t position) {
  KILN_CHECK(position >= 0 && position <= main_.position, ValueError,
             "[llm] reset position " << position << " outside [0, " << main_.position << "]");
  main_.truncate(position);
  ++resets_;
}

int64_t Transformer::weight_bytes() const {
  int64_t b = embed_.bytes() + int64_t(final_norm_.nbytes()) + lm_head_.bytes();
  for (const auto& L : layers_) {
    b += int64_t(L.attn_norm.nbytes() + L.mlp_norm.nbytes());
    for (const Linear* x : {&L.q, &L.k, &L.v, &L.o, &L.gate, &L.up, &L.down}) b += x->bytes();
    if (L.q_norm.defined()) b += int64_t(L.q_norm.nbytes() + L.k_norm.nbytes());
    if (L.moe) {
      const auto& m = *L.moe;
      for (const Tensor* t : {&m.router, &m.gate_up, &m.gate_up_scale, &m.down, &m.down_scale})
        if (t->defined()) b += int64_t(t->nbytes());
    }
  }
  return b;
}

int64_t Transformer::kv_cache_bytes() const { return main_.cache.capacity_bytes(); }

void KVSequence::copy_prefix(const Model::Sequence& src, int64_t positions) {
  const auto& s = static_cast<const KVSequence&>(src);
  cache.truncate(0);
  if (positions > 0)
    for (int64_t l = 0; l < s.cache.layers(); ++l)
      cache.append(l, s.cache.keys(l, positions), s.cache.values(l, positions));
  position = positions;
}

std::unique_ptr<Model::Sequence> Transformer::new_sequence() {
  auto s = std::make_unique<KVSequence>();
  s->cache = KVCache(main_.cache.layers(), 1, Hk_, max_ctx_, D_, main_.cache.dtype());
  return s;
}

Tensor Transformer::run_forward_batch(std::span<Sequence* const> seqs, std::span<const BatchItem> items) {
  const int64_t B = int64_t(items.size());
  batch_ids_.clear();
  batch_segs_.clear();
  for (int64_t i = 0; i < B; ++i) {
    const auto& it = items[size_t(i)];
    for (int32_t t : it.tokens)
      KILN_CHECK(t >= 0 && t < V_, ValueError,
                 "[llm] token id " << t << " of sequence " << it.sequence << " is outside the vocabulary [0, "
                                   << V_ << ")");
    batch_segs_.push_back(
        {static_cast<KVSequence*>(seqs[size_t(i)]), int64_t(batch_ids_.size()), int64_t(it.tokens.size())});
    batch_ids_.insert(batch_ids_.end(), it.tokens.begin(), it.tokens.end());
  }
  bytes_read_ = 0;
  forward_rows(batch_ids_.data(), int64_t(batch_ids_.size()), batch_segs_);
  // The last row of each item -> tmp [B, H] -> normed xn [B, H] -> logits [B, V].
  if (!batch_logits_.defined() || batch_logits_.size(0) < B)
    batch_logits_ = empty({std::max<int64_t>(B, 16), V_});
  Tensor last = s_.tmp.narrow(0, 0, B), xn = s_.xn.narrow(0, 0, B), out = batch_logits_.narrow(0, 0, B);
  for (int64_t i = 0; i < B; ++i) {
    const Segment& g = batch_segs_[size_t(i)];
    last.narrow(0, i, 1).copy_(s_.x.narrow(0, g.row0 + g.T - 1, 1));
  }
  rms_norm_out(last, final_norm_, cfg_.rms_norm_eps, xn);
  const Linear& head = lm_head_.defined() ? lm_head_ : embed_;
  head.apply(xn, out);
  bytes_read_ += head.bytes() + int64_t(final_norm_.nbytes());
  return out;
}

Tensor Transformer::run_forward(std::span<const int32_t> tokens, bool all_logits) {
  const int64_t n = int64_t(tokens.size());
  KILN_CHECK(n > 0, ValueError, "[llm] forward needs at least one token");
  KILN_CHECK(main_.position + n <= max_ctx_, ValueError,
             "[llm] " << n << " tokens at position " << main_.position << " do not fit the context of "
                      << max_ctx_ << " tokens");
  for (int64_t i = 0; i < n; ++i)
    KILN_CHECK(tokens[size_t(i)] >= 0 && tokens[size_t(i)] < V_, ValueError,
               "[llm] token id " << tokens[size_t(i)] << " at index " << i
                                 << " is outside the vocabulary [0, " << V_ << ")");
  bytes_read_ = 0;
  if (all_logits && (!all_logits_.defined() || all_logits_.size(0) < n)) all_logits_ = empty({n, V_});
  for (int64_t i = 0; i < n; i += s_.rows) {
    const int64_t T = std::min(s_.rows, n - i);
    Tensor out = all_logits ? all_logits_.narrow(0, i, T) : Tensor();
    forward_chunk(tokens.data() + i, T, all_logits ? &out : (i + T == n ? &s_.logits1 : nullptr));
  }
  return all_logits ? all_logits_.narrow(0, 0, n) : s_.logits1;
}

void Transformer::forward_rows(const int32_t* ids, int64_t T, std::span<const Segment> segs) {
  // x [T, H] = embedding rows.
  Tensor x = s_.x.narrow(0, 0, T);
  for (int64_t t = 0; t < T; ++t) {
    if (embed_.blocks)
      dequantize_blocks_out(embed_.w.narrow(0, ids[t], 1), *embed_.blocks, x.narrow(0, t, 1));
    else
      x.narrow(0, t, 1).copy_(embed_.w.narrow(0, ids[t], 1));
  }
  bytes_read_ += T * int64_t(embed_.w.nbytes()) / embed_.w.size(0);
  // cos/sin [T, rotary_dim / 2] of each segment's positions.
  for (const Segment& g : segs)
    rope_cos_sin_out(g.seq->position, inv_freq_, s_.cos.narrow(0, g.row0, g.T),
                     s_.sin.narrow(0, g.row0, g.T));
  for (int64_t l = 0; l < int64_t(layers_.size()); ++l) {
    attention(l, T, segs);
    if (layers_[size_t(l)].moe)
      moe(l, T);
    else
      mlp(l, T);
  }
  for (const Segment& g : segs) g.seq->position += g.T;
}

void Transformer::forward_chunk(const int32_t* ids, int64_t T, Tensor* logits_out) {
  const Segment seg{&main_, 0, T};
  forward_rows(ids, T, std::span<const Segment>(&seg, 1));
  if (!logits_out) return;
  Tensor x = s_.x.narrow(0, 0, T);
  const Linear& head = lm_head_.defined() ? lm_head_ : embed_;
  bytes_read_ += head.bytes() + int64_t(final_norm_.nbytes());
  if (logits_out->size(0) == T) {
    Tensor xn = s_.xn.narrow(0, 0, T);
    rms_norm_out(x, final_norm_, cfg_.rms_norm_eps, xn);
    head.apply(xn, *logits_out);
  } else {  // the last token only: [1, V]
    rms_norm_out(x.narrow(0, T - 1, 1), final_norm_, cfg_.rms_norm_eps, s_.last);
    head.apply(s_.last, *logits_out);
  }
}

void Transformer::attention(int64_t l, int64_t T, std::span<const Segment> segs) {
  auto& L = layers_[size_t(l)];
  const double eps = cfg_.rms_norm_eps;
  Tensor x = s_.x.narrow(0, 0, T), xn = s_.xn.narrow(0, 0, T);
  Tensor q = s_.q.narrow(0, 0, T), k = s_.k.narrow(0, 0, T), v = s_.v.narrow(0, 0, T);
  Tensor attn = s_.attn.narrow(0, 0, T), tmp = s_.tmp.narrow(0, 0, T);
  rms_norm_out(x, L.attn_norm, eps, xn);
  // xn [T, H] -> q [T, Hq*D], k/v [T, Hk*D]
  if (T <= s_.fused_rows && L.qkv.defined()) {
    // Decode (one token, or a batch's few): one call; q/k/v are column ranges of its [T, N] output.
    const Tensor qkv = s_.qkv1.narrow(0, 0, T);
    L.qkv.apply(xn, qkv);
    q = qkv.narrow(1, 0, Hq_ * D_);
    k = qkv.narrow(1, Hq_ * D_, Hk_ * D_);
    v = qkv.narrow(1, (Hq_ + Hk_) * D_, Hk_ * D_);
  } else {
    L.q.apply(xn, q);
    L.k.apply(xn, k);
    L.v.apply(xn, v);
  }
  bytes_read_ += L.q.bytes() + L.k.bytes() + L.v.bytes() + int64_t(L.attn_norm.nbytes());
  const Tensor q3 = q.view({T, Hq_, D_}), k3 = k.view({T, Hk_, D_}), v3 = v.view({T, Hk_, D_});
  if (L.q_norm.defined()) {
    // qwen3: RMSNorm over each head; olmoe: over the whole projection.
    // Contiguous [T, Hk*D] scratch for k's norm output (the first T*Hk*D floats of attn).
    Tensor ak = s_.attn.view({-1}).narrow(0, 0, T * Hk_ * D_).view({T, Hk_ * D_});
    if (olmoe_qk_norm_) {
      rms_norm_out(q, L.q_norm, eps, attn);
      q.copy_(attn);
      rms_norm_out(k, L.k_norm, eps, ak);
      k.copy_(ak);
    } else {
      rms_norm_out(q3, L.q_norm, eps, attn.view({T, Hq_, D_}));
      q.copy_(attn);
      rms_norm_out(k3, L.k_norm, eps, ak.view({T, Hk_, D_}));
      k.copy_(ak);
    }
    bytes_read_ += int64_t(L.q_norm.nbytes() + L.k_norm.nbytes());
  }
  const Tensor cos = s_.cos.narrow(0, 0, T), sin = s_.sin.narrow(0, 0, T);  // each row's position
  apply_rotary_emb_(q3, cos, sin);
  apply_rotary_emb_(k3, cos, sin);
  const Tensor attn3 = attn.view({T, Hq_, D_});
  // Segment g: its [t, Hk, D] keys/values -> its cache [Hk, S, D]; its queries attend to that cache.
  auto attend = [&](const Segment& g) {
    KVCache& cache = g.seq->cache;
    const int64_t S =
        cache.append(l, k3.narrow(0, g.row0, g.T).transpose(0, 1), v3.narrow(0, g.row0, g.T).transpose(0, 1));
    AttentionOptions opt;
    opt.is_causal = true;
    opt.causal_offset = S - g.T;
    opt.enable_gqa = true;
    scaled_dot_product_attention_out(q3.narrow(0, g.row0, g.T).transpose(0, 1), cache.keys(l).select(0, 0),
                                     cache.values(l).select(0, 0), opt,
                                     attn3.narrow(0, g.row0, g.T).transpose(0, 1));
  };
  if (segs.size() == 1) {
    attend(segs[0]);  // forward(), or one sequence: the op parallelises inside
  } else {
    // A batch: the one-token segments (decoding sequences) split across the
    // threads, each run whole on one (a pool dispatch per sequence costs more
    // than one token's attention); prompt chunks then use every thread each.
    parallel_for(0, int64_t(segs.size()), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        if (segs[size_t(i)].T == 1) attend(segs[size_t(i)]);
    });
    for (const Segment& g : segs)
      if (g.T > 1) attend(g);
  }
  L.o.apply(attn, tmp);
  bytes_read_ += L.o.bytes();
  add_(x.data<float>(), tmp.data<float>(), T * H_);
}

void Transformer::mlp(int64_t l, int64_t T) {
  auto& L = layers_[size_t(l)];
  const int64_t I = L.gate.w.size(0);
  Tensor x = s_.x.narrow(0, 0, T), xn = s_.xn.narrow(0, 0, T), tmp = s_.tmp.narrow(0, 0, T);
  // Contiguous [T, I] views of the [rows, max I] buffers.
  auto rows = [&](const Tensor& b) { return b.view({-1}).narrow(0, 0, T * I).view({T, I}); };
  Tensor g = rows(s_.gate), u = rows(s_.up), a = rows(s_.act);
  rms_norm_out(x, L.mlp_norm, cfg_.rms_norm_eps, xn);
  if (T <= s_.fused_rows && L.gate_up.defined()) {
    Tensor gu = s_.gate_up1.narrow(0, 0, T).narrow(1, 0, 2 * I);
    L.gate_up.apply(xn, gu);
    g = gu.narrow(1, 0, I);
    u = gu.narrow(1, I, I);
  } else {
    L.gate.apply(xn, g);
    L.up.apply(xn, u);
  }
  swiglu_out(g, u, a);
  L.down.apply(a, tmp);
  bytes_read_ += L.gate.bytes() + L.up.bytes() + L.down.bytes() + int64_t(L.mlp_norm.nbytes());
  add_(x.data<float>(), tmp.data<float>(), T * H_);
}

std::vector<std::pair<std::string, Tensor>> Transformer::named_weights() const {
  std::vector<std::pair<std::string, Tensor>> out;
  auto lin = [&](const std::string& p, const Linear& L) {
    if (!L.defined()) return;
    out.emplace_back(p + ".weight", L.w);
    if (L.blocks) out.emplace_back(p + ".weight_block_type", full({}, double(int(*L.blocks)), DType::Int64));
    if (L.scale.defined()) {
      const bool row = L.scale.numel() == L.w.size(0) && L.w.size(0) != 1;
      out.emplace_back(p + (row || L.scale.numel() == 1 ? ".weight_scale" : ".weight_scale_inv"),
                       row ? L.scale.view({L.w.size(0), 1}) : L.scale);
    }
    if (L.bias.defined()) out.emplace_back(p + ".bias", L.bias);
  };
  out.emplace_back("model.embed_tokens.weight", embed_.w);
  if (embed_.blocks)
    out.emplace_back("model.embed_tokens.weight_block_type",
                     full({}, double(int(*embed_.blocks)), DType::Int64));
  for (size_t l = 0; l < layers_.size(); ++l) {
    const auto& L = layers_[l];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    out.emplace_back(p + "input_layernorm.weight", L.attn_norm);
    out.emplace_back(p + "post_attention_layernorm.weight", L.mlp_norm);
    lin(p + "self_attn.q_proj", L.q);
    lin(p + "self_attn.k_proj", L.k);
    lin(p + "self_attn.v_proj", L.v);
    lin(p + "self_attn.o_proj", L.o);
    if (L.q_norm.defined()) {
      out.emplace_back(p + "self_attn.q_norm.weight", L.q_norm);
      out.emplace_back(p + "self_attn.k_norm.weight", L.k_norm);
    }
    lin(p + "mlp.gate_proj", L.gate);
    lin(p + "mlp.up_proj", L.up);
    lin(p + "mlp.down_proj", L.down);
    if (L.moe) {
      const auto& m = *L.moe;
      const std::string e = m.prefix + ".experts.";
      out.emplace_back(m.prefix + ".gate.weight", m.router);
      out.emplace_back(e + "gate_up_proj.weight", m.gate_up);
      out.emplace_back(e + "down_proj.weight", m.down);
      if (m.gate_up_blocks) {
        out.emplace_back(e + "gate_up_proj.weight_block_type",
                         full({}, double(int(*m.gate_up_blocks)), DType::Int64));
        out.emplace_back(e + "down_proj.weight_block_type",
                         full({}, double(int(*m.down_blocks)), DType::Int64));
      }
      if (m.gate_up_scale.defined()) {
        out.emplace_back(e + "gate_up_proj.weight_scale", m.gate_up_scale.view({m.E, 2 * m.I, 1}));
        out.emplace_back(e + "down_proj.weight_scale", m.down_scale.view({m.E, H_, 1}));
      }
    }
  }
  out.emplace_back("model.norm.weight", final_norm_);
  lin("lm_head", lm_head_);
  return out;
}

}  // namespace kiln::llm::detail
