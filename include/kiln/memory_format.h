// torch's memory formats: the dense layouts a 4-d (NCHW) or 5-d (NCDHW) tensor
// may have, and the rules that tell them apart from strides.
//   Contiguous:     row-major; [N, C, H, W] has strides [C*H*W, H*W, W, 1]
//   ChannelsLast:   NHWC in memory; [N, C, H, W] has strides [H*W*C, 1, W*C, C]
//   ChannelsLast3d: NDHWC in memory; [N, C, D, H, W] has [D*H*W*C, 1, H*W*C, W*C, C]
//   Preserve:       keep the input's layout (clone, to, empty_like and the *_like
//                   factories: a dense input's strides, else its dims' order).
#pragma once

#include <cstdint>
#include <span>

#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln {

enum class MemoryFormat : uint8_t { Contiguous, ChannelsLast, ChannelsLast3d, Preserve };

// torch's Python names: "contiguous_format", "channels_last", "channels_last_3d",
// "preserve_format".
const char* memory_format_name(MemoryFormat memory_format);

// The strides of a fresh tensor of `shape` in `memory_format` (in elements).
// ValueError naming `op` for ChannelsLast on a shape that is not 4-d,
// ChannelsLast3d on one not 5-d, and Preserve (which needs a tensor).
Shape memory_format_strides(std::span<const int64_t> shape, MemoryFormat memory_format,
                            const char* op = "empty");

// torch's is_channels_last_strides_2d / _3d: whether strides order the dims of
// a 4-d (5-d) shape as channels last does. Ambiguous layouts (a channel stride
// of 0, a size 0, [N, 1, 1, 1]-like strides that read either way) answer false,
// so they count as contiguous.
bool is_channels_last_strides_2d(std::span<const int64_t> sizes, std::span<const int64_t> strides);
bool is_channels_last_strides_3d(std::span<const int64_t> sizes, std::span<const int64_t> strides);

// torch's suggest_memory_format: ChannelsLast(3d) when t's strides order its
// dims as channels last (exactly channels-last strides when exact_match),
// else Contiguous.
MemoryFormat suggest_memory_format(const Tensor& t, bool channels_last_strides_exact_match = false);

// torch's Tensor.is_contiguous(memory_format): ChannelsLast asks for
// channels-last strides (size-1 dims skipped) and is false unless t is 4-d,
// ChannelsLast3d likewise for 5-d; Contiguous and Preserve ask is_contiguous().
bool is_contiguous(const Tensor& t, MemoryFormat memory_format);
// torch's Tensor.contiguous(memory_format): t itself when already laid out so,
// else a copy in that format; ValueError for a rank the format does not fit,
// and for Preserve on a non-contiguous t.
Tensor contiguous(const Tensor& t, MemoryFormat memory_format);
// torch's Tensor.clone(memory_format): a copy in that layout (Tensor::clone()
// is clone(t, Preserve): a channels-last t gives a channels-last copy).
Tensor clone(const Tensor& t, MemoryFormat memory_format);
// torch's Tensor.to(dtype, memory_format=): t itself when the dtype matches and
// t already is in that layout (always for Preserve), else a copy laid out so.
// Tensor::to(dtype) is to(t, dtype, Preserve).
Tensor to(const Tensor& t, DType dtype, MemoryFormat memory_format);

// A new tensor in `memory_format` (Contiguous, ChannelsLast, ChannelsLast3d;
// ValueError for Preserve and for a rank the format does not fit).
Tensor empty(const Shape& shape, DType dtype, Device device, MemoryFormat memory_format);

// A new tensor of t's shape with the given dtype and device, laid out as
// memory_format says; Preserve (torch's default) keeps a dense t's strides and
// gives a non-dense t the dense layout with its dims in the same order.
// empty_like(t) and zeros_like(t) of kiln/tensor.h are the Preserve forms.
Tensor empty_like(const Tensor& t, DType dtype, Device device,
                  MemoryFormat memory_format = MemoryFormat::Preserve);
Tensor empty_like(const Tensor& t, MemoryFormat memory_format);
Tensor zeros_like(const Tensor& t, MemoryFormat memory_format);

}  // namespace kiln
