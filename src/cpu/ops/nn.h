// The nn family's CPU kernel files (ops/registry/nn.h), one registration
// function each; register_nn_kernels() (nn.cc) calls them all.
#pragma once

namespace kiln::cpu {

void register_norm_kernels();        // norm.cc
void register_batch_norm_kernels();  // batch_norm.cc
void register_swiglu_kernels();      // swiglu.cc
void register_embedding_kernels();   // embedding.cc
void register_rope_kernels();        // rope.cc
void register_attention_kernels();   // attention.cc
void register_sampling_kernels();    // sampling.cc

}  // namespace kiln::cpu
