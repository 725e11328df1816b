#include <cstdio>
#include "kiln/kiln.h"
#include "cpu/convert.h"
int main() { std::printf("kiln %s %s\n", kiln::kVersion, kiln::cpu::simd_target_name()); }
