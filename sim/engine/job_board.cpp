#include "engine/job_board.hpp"

namespace sg4 = simgrid::s4u;

namespace ddpsim::engine {

JobBoard::JobBoard(const plan::Plan& plan, int ranks)
    : plan_(plan), ranks_(ranks), jobs_(plan.tasks.size()), queues_(plan.streams.size()) {
  mutex_ = sg4::Mutex::create();
  for (size_t i = 0; i < plan.tasks.size(); ++i)
    if (plan.tasks[i].kind == plan::TaskKind::COLLECTIVE) jobs_[i].changed = sg4::ConditionVariable::create();
  for (size_t s = 0; s < plan.streams.size(); ++s) stream_cv_.push_back(sg4::ConditionVariable::create());
}

bool JobBoard::arrive(int task) {
  JobState& j = job(task);
  const int stream = plan_.tasks[static_cast<size_t>(task)].stream;
  const bool first = j.arrived == 0;
  if (first) queues_[static_cast<size_t>(stream)].push_back(task);
  if (++j.arrived == ranks_) stream_cv_[static_cast<size_t>(stream)]->notify_all();
  return first;
}

int JobBoard::next(int stream) {
  auto& q = queues_[static_cast<size_t>(stream)];
  std::unique_lock lock(*mutex_);
  while (!(finished_ == ranks_ && q.empty()) && (q.empty() || job(q.front()).arrived < ranks_))
    stream_cv_[static_cast<size_t>(stream)]->wait(lock);
  if (q.empty()) return -1;
  const int t = q.front();
  q.pop_front();
  return t;
}

void JobBoard::started(int task) {
  JobState& j = job(task);
  j.started = true;
  j.changed->notify_all();
}

void JobBoard::done(int task) {
  JobState& j = job(task);
  j.done = true;
  j.changed->notify_all();
}

void JobBoard::rank_finished() {
  if (++finished_ == ranks_)
    for (auto& cv : stream_cv_) cv->notify_all();
}

}  // namespace ddpsim::engine
