#pragma once
// `ddpsim calibrate`: the cluster's NCCL figures fitted to a real all_reduce_perf log
// (collectives::calibrate), with every row's error before and after the fit.
#include <string>
#include <vector>

#include "collectives/nccl_model.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "config/specs.hpp"
#include "report/rendered.hpp"

namespace ddpsim::validate {

struct CalibrationRequest {
  const config::ClusterSpec& cluster;
  const collectives::NcclTestsLog& log;
  std::string log_name;
  std::vector<int> run_g;    // nccl-tests -g of each run of the log
  int version = 0;           // NCCL version the fit assumes
  std::string version_from;  // where `version` came from ("log", "cluster file", ...)
  std::string times;         // which times to fit: "out-of-place", "in-place" or "both"
  bool holdout = false;      // every second size of a run held out of the fit
  collectives::NcclSettings settings;
};

struct Calibration {
  core::Json knobs;       // the cluster file's "nccl_calibration" object
  report::Rendered view;  // the rows, medians and fitted factors
};

// Throws core::ConfigError naming the log when it has nothing to fit or the fit is refused.
Calibration calibrate_from_log(const CalibrationRequest& request);

}  // namespace ddpsim::validate
