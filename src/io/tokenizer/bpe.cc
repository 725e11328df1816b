// The BPE model: merge table, the merge loop of one pre-token, the word cache,
// and the encode path for text without added tokens.
#include <algorithm>
#include <queue>

#include "io/tokenizer/impl.h"

namespace kiln::tok {

void MergeTable::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  if (cap <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  count_ = 0;
  for (const Slot& s : old)
    if (s.key != kEmpty) insert(int32_t(s.key >> 32), int32_t(uint32_t(s.key)), s.rank, s.merged);
}

void MergeTable::grow() { reserve(std::max<size_t>(16, count_ * 2 + 2)); }

void MergeTable::insert(int32_t a, int32_t b, int32_t rank, int32_t merged) {
  if ((count_ + 1) * 2 > slots_.size()) grow();
  const uint64_t key = pack(a, b);
  size_t i = hash(key) & mask_;
  while (slots_[i].key != kEmpty) {
    if (slots_[i].key == key) return;  // the first (lowest-rank) merge of a pair wins, as in HF
    i = (i + 1) & mask_;
  }
  slots_[i] = Slot{key, rank, merged};
  ++count_;
}

void StringIndex::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  if (cap <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  count_ = 0;
  for (const Slot& s : old)
    if (s.id >= 0) put(s.id, false);
}

void StringIndex::insert(int32_t id) { put(id, false); }
void StringIndex::assign(int32_t id) { put(id, true); }

void StringIndex::put(int32_t id, bool overwrite) {
  if ((count_ + 1) * 2 > slots_.size()) reserve(std::max<size_t>(16, count_ * 2 + 2));
  const std::string& key = (*keys_)[size_t(id)];
  const uint64_t h = std::hash<std::string_view>{}(key);
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    Slot& x = slots_[i];
    if (x.id < 0) {
      x = {uint32_t(h >> 32), id};
      ++count_;
      return;
    }
    if (x.tag == uint32_t(h >> 32) && (*keys_)[size_t(x.id)] == key) {
      if (overwrite) x.id = id;
      return;
    }
  }
}

namespace {

struct Sym {
  int32_t id;
  int32_t prev, next;  // -1 at the ends
  bool alive;
};

struct Cand {
  int32_t rank, pos, left, right, merged;
  bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

void Impl::bpe_word(std::string_view word, std::vector<int32_t>& out) const {
  if (ignore_merges) {
    const int32_t id = bpe_vocab.find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  if (word.size() == 1) {
    if (byte_ids[uint8_t(word[0])] >= 0) out.push_back(byte_ids[uint8_t(word[0])]);
    return;
  }
  const bool cacheable = word.size() <= 64;
  if (cacheable) {
    std::shared_lock lock(cache_mu);
    auto it = cache.find(std::string(word));
    if (it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }

  // Every byte is a symbol; the lowest-ranked adjacent pair merges first, the
  // leftmost among equals (HF's order).
  thread_local std::vector<Sym> syms;
  thread_local std::vector<Cand> heap_store;
  syms.clear();
  for (char c : word) {
    const int32_t id = byte_ids[uint8_t(c)];
    if (id < 0) continue;  // no token for this byte and no unk: dropped, as HF does
    syms.push_back({id, int32_t(syms.size()) - 1, int32_t(syms.size()) + 1, true});
  }
  if (!syms.empty()) syms.back().next = -1;
  heap_store.clear();
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap(std::greater<Cand>{},
                                                                        std::move(heap_store));
  auto consider = [&](int32_t i) {
    const int32_t j = syms[i].next;
    if (j < 0) return;
    int32_t rank, merged;
    if (merges.find(syms[i].id, syms[j].id, &rank, &merged)) heap.push({rank, i, syms[i].id, syms[j].id, merged});
  };
  for (int32_t i = 0; i + 1 < int32_t(syms.size()); ++i) consider(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& a = syms[c.pos];
    if (!a.alive || a.id != c.left || a.next < 0) continue;
    Sym& b = syms[a.next];
    if (b.id != c.right) continue;  // stale: a neighbour merged since
    a.id = c.merged;
    b.alive = false;
    a.next = b.next;
    if (b.next >= 0) syms[b.next].prev = c.pos;
    if (a.prev >= 0) consider(a.prev);
    consider(c.pos);
  }
  const size_t start = out.size();
  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);

  if (cacheable) {
    std::unique_lock lock(cache_mu);
    if (cache.size() >= kCacheCap) cache.clear();
    cache.emplace(std::string(word), std::vector<int32_t>(out.begin() + start, out.end()));
  }
}

void Impl::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::string norm;
  if (normalize(normalization, text, norm)) text = norm;
  thread_local std::vector<std::string_view> pieces;
  std::deque<std::string> arena;
  pre_tokenize(pre_steps, text, pieces, arena);
  for (std::string_view p : pieces) bpe_word(p, out);
}

}  // namespace kiln::tok
