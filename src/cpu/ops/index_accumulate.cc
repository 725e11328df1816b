// The typed half of the scatter kernels: dst += alpha * src, for scatter_add,
// index_add, put_ and index_put_ with accumulate.
#include "core/cast.h"
#include "cpu/ops/index_common.h"

namespace kiln::index_detail {

void scatter_accumulate(const Tensor& dst_base, const Tensor& src, const Tensor& idx, int64_t K,
                        int64_t dim_stride_b, int64_t src_k_stride_b, int64_t idx_k_stride_b,
                        const Scalar& alpha, const char* op) {
  dispatch<kAllSet>(dst_base.dtype(), op, [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      const bool a = alpha.to<bool>();
      auto elem = [a](char* d, const char* s) {
        const bool r = (*d != 0) || (a && *s != 0);
        *d = r ? 1 : 0;
      };
      scatter_columns(dst_base, src, idx, K, dim_stride_b, src_k_stride_b, idx_k_stride_b, elem,
                      [&](char* d, const char* s, int64_t n) {
                        for (int64_t i = 0; i < n; ++i) elem(d + i, s + i);
                      });
    } else {
      using C = compute_t<T>;
      const C a = alpha.to<C>();
      const bool unit = alpha.to_double() == 1.0 && !alpha.is_complex();
      auto add = [a, unit](T dv, T sv) -> T {
        const C inc = unit ? cast<C>(sv) : C(cast<C>(sv) * a);
        return cast<T>(C(cast<C>(dv) + inc));
      };
      scatter_columns(
          dst_base, src, idx, K, dim_stride_b, src_k_stride_b, idx_k_stride_b,
          [&](char* d, const char* s) {
            T dv, sv;
            std::memcpy(&dv, d, sizeof(T));
            std::memcpy(&sv, s, sizeof(T));
            const T r = add(dv, sv);
            std::memcpy(d, &r, sizeof(T));
          },
          [&](char* d, const char* s, int64_t n) {
            // d and s are T-aligned: storage is 64-byte aligned and offsets are whole elements.
            T* dp = reinterpret_cast<T*>(d);
            const T* sp = reinterpret_cast<const T*>(s);
            if (unit) {
              for (int64_t i = 0; i < n; ++i) dp[i] = cast<T>(C(cast<C>(dp[i]) + cast<C>(sp[i])));
            } else {
              for (int64_t i = 0; i < n; ++i) dp[i] = add(dp[i], sp[i]);
            }
          });
    }
  });
}

}  // namespace kiln::index_detail
