// The reduce and sort families' CPU registrations, one per kernel file;
// joined by register_reduce_kernels() and register_sort_kernels()
// (cpu/ops/register.h).
#pragma once

namespace kiln::cpu {

void register_reduce_sum_kernels();      // reduce_sum.cc
void register_reduce_minmax_kernels();   // reduce_minmax.cc
void register_reduce_moments_kernels();  // reduce_moments.cc
void register_reduce_norm_kernels();     // reduce_norm.cc
void register_reduce_scan_kernels();     // reduce_scan.cc
void register_bincount_kernel();         // bincount.cc
void register_searchsorted_kernel();     // searchsorted.cc
void register_unique_kernel();           // unique.cc
void register_select_kernels();          // select.cc

}  // namespace kiln::cpu
