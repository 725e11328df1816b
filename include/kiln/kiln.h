// Everything public in one include.
#pragma once

#include "kiln/allocator.h"
#include "kiln/binary.h"
#include "kiln/dtype.h"
#include "kiln/index.h"
#include "kiln/linalg.h"
#include "kiln/random.h"
#include "kiln/reduce.h"
#include "kiln/scalar.h"
#include "kiln/sort.h"
#include "kiln/tensor.h"
#include "kiln/thread_pool.h"
#include "kiln/unary.h"
#include "kiln/version.h"
