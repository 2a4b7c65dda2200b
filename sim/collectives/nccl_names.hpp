#pragma once
// NCCL's names as the NCCL model uses them. They are defined in config/ (config/nccl_names.hpp),
// which validates the spellings of scenarios and clusters, so the dependency runs one way:
// collectives -> config.
#include "config/nccl_names.hpp"

namespace ddpsim::collectives {

using config::Algo;
using config::algo_names;
using config::allreduce_algos;
using config::allreduce_protos;
using config::aws_ofi_version_code;
using config::check_buffsize;
using config::check_nthreads;
using config::nccl_version_string;
using config::parse_algo;
using config::parse_nccl_version;
using config::parse_proto;
using config::Proto;
using config::proto_names;
using config::to_string;

}  // namespace ddpsim::collectives
