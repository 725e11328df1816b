// A ModelConfig as the Python dict kiln.io.load_config returns (and
// LanguageModel.config): the config.json field names, rope_scaling and
// quantization as nested dicts.
#pragma once
#include <nanobind/nanobind.h>

#include "kiln/io/model_config.h"

nanobind::dict config_dict(const kiln::io::ModelConfig& c);
