#pragma once
// Rank rendezvous and the collective streams' queues (SimGrid). Every COLLECTIVE task of a plan
// on a collective stream is a job: the simulated ranks reach it in their own time; the first
// arrival queues it on its stream; the stream starts it once every simulated rank has arrived and
// one of its workers is free (Plan::Stream::workers; one worker: the jobs queued before it are
// done). Waits are on condition variables under one mutex; nothing here yields before a count is
// updated (a simcall would hand the CPU to the other actors).
#include <deque>
#include <mutex>
#include <simgrid/s4u.hpp>
#include <vector>

#include "plan/step_plan.hpp"

namespace ddpsim::engine {

struct JobState {
  int arrived = 0;
  bool started = false, done = false;
  double start = 0;                            // a joint job (run_joint_job): when its last participant started it
  simgrid::s4u::ConditionVariablePtr changed;  // notified when it starts and when it is done
};

class JobBoard {
 public:
  // Creates the condition variables up front (creating one is a simcall).
  JobBoard(const plan::Plan& plan, int ranks);

  JobState& job(int task) { return jobs_[static_cast<size_t>(task)]; }
  // A rank reaches job `task`; returns true on the first arrival (the caller fills its record).
  bool arrive(int task);
  // Blocks the calling actor until `pred()` holds; `cv` is notified when it may have changed.
  template <class Pred>
  void wait_until(const simgrid::s4u::ConditionVariablePtr& cv, Pred pred) {
    std::unique_lock lock(*mutex_);
    while (!pred()) cv->wait(lock);
  }
  // The stream's next job once every rank reached it (to whichever of its workers asks first); -1
  // once every rank has finished and the queue is empty.
  int next(int stream);
  void started(int task);
  void done(int task);
  // A rank's compute stream has run its whole program.
  void rank_finished();
  bool all_finished() const { return finished_ == ranks_; }

 private:
  const plan::Plan& plan_;
  int ranks_;
  int finished_ = 0;
  std::vector<JobState> jobs_;  // per task (only COLLECTIVE tasks are used)
  std::vector<std::deque<int>> queues_;
  std::vector<simgrid::s4u::ConditionVariablePtr> stream_cv_;
  simgrid::s4u::MutexPtr mutex_;
};

}  // namespace ddpsim::engine
