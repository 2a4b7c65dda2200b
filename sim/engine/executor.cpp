#include "engine/executor.hpp"

namespace ddpsim::engine {

void size_timeline(const plan::Plan& plan, report::Timeline& t) {
  // Sized once: actors hold references into it.
  t.report_iteration = plan.report_iteration;
  for (const auto& st : plan.steps) {
    report::MicroStepInfo info;
    info.report = st.report;
    info.sync = st.sync;
    info.bucket_bytes = st.bucket_bytes;
    info.bucket_tensors = st.bucket_tensors;
    t.steps.push_back(std::move(info));
    t.jobs.emplace_back(static_cast<size_t>(st.records));
  }
  t.ranks.assign(static_cast<size_t>(plan.ranks), std::vector<report::RankStepRecord>(plan.steps.size()));
}

}  // namespace ddpsim::engine
