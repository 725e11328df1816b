// libFuzzer target: tokenizer.json parsing, then encode/decode/streaming with
// whatever tokenizer the input describes, over text that includes invalid UTF-8
// and special-token fragments.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/error.h"
#include "kiln/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    const kiln::Tokenizer tok = kiln::Tokenizer::from_json(json);
    // Text drawn from the input's tail exercises the pre-tokenizer on hostile bytes.
    const std::string text = std::string("Hello, world! 123 \xe2\x82\xac \xf0\x9f\x98\x80 <|endoftext|>\xff\xc3 ") +
                             std::string(json.substr(size > 64 ? size - 64 : 0));
    for (bool special : {false, true}) {
      const std::vector<int32_t> ids = tok.encode(text, special);
      (void)tok.decode(ids, false);
      (void)tok.decode(ids, true);
      kiln::StreamDecoder stream(tok);
      for (int32_t id : ids) (void)stream.push(id);
      (void)stream.flush();
    }
    // Ids the vocabulary does not have must be refused, not read.
    const int32_t odd[] = {-1, tok.vocab_size(), 1 << 30};
    for (int32_t id : odd) {
      try {
        (void)tok.decode(std::vector<int32_t>{id});
      } catch (const kiln::Error&) {
      }
    }
  } catch (const kiln::Error&) {
  }
  return 0;
}
