#pragma once
// What every plan builder does to write a rank's program: tasks appended in stream order, each
// belonging to the micro-step being written (si_). DdpBuilder and FsdpBuilder derive from it.
#include <string>
#include <utility>

#include "plan/step_plan.hpp"

namespace ddpsim::plan {

class ProgramWriter {
 protected:
  int task(TaskKind kind, std::string name, std::string category = "") {
    Task t;
    t.kind = kind;
    t.micro_step = si_;
    t.name = std::move(name);
    t.category = std::move(category);
    return p_.add(std::move(t));
  }
  int mark(Mark m, int bucket = -1) {
    const int i = task(TaskKind::MARK, "");
    p_.tasks[static_cast<size_t>(i)].mark = m;
    p_.tasks[static_cast<size_t>(i)].bucket = bucket;
    return i;
  }
  // A kernel of zero time is not issued (-1).
  int kernel(const gpu::Kernel& k, std::string name, std::string category, Slot slot = Slot::NONE, bool scaled = true) {
    if (k.seconds <= 0) return -1;
    const int i = task(TaskKind::KERNEL, std::move(name), std::move(category));
    Task& t = p_.tasks[static_cast<size_t>(i)];
    t.kernel = k;
    t.slot = slot;
    t.scaled = scaled;
    return i;
  }

  Plan p_;
  int si_ = 0;  // the micro-step being written
};

}  // namespace ddpsim::plan
