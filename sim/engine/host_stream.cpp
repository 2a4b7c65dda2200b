// The host-thread actor of a process plan (engine/executor.hpp): a thread of the process that
// drives the GPUs (DataParallel's Python main thread, its parallel_apply and autograd device
// threads). It does host work, marks and joins; the kernels and copies it issues are tasks of the
// GPU streams that follow its tasks.
#include <algorithm>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "engine/executor.hpp"

namespace sg4 = simgrid::s4u;

namespace ddpsim::engine {
namespace {

using plan::TaskKind;

class HostStream {
 public:
  HostStream(ExecContext& ctx, int stream) : ctx_(ctx), stream_(stream), track_(ctx.track(stream)) {}

  void run() {
    for (int ti : ctx_.programs[static_cast<size_t>(stream_)]) {
      const plan::Task& t = ctx_.plan.tasks[static_cast<size_t>(ti)];
      follow(ctx_, t.after, stream_);
      switch (t.kind) {
        case TaskKind::HOST: host(t); break;
        case TaskKind::MARK: mark(t); break;
        case TaskKind::WAIT: break;  // its `after`, followed above
        case TaskKind::KERNEL:
        case TaskKind::COLLECTIVE: throw core::SimulationError("a host thread's plan holds GPU work: " + t.name);
      }
      phase_point(ctx_, t);
      task_done(ctx_, ti);
      start_threads(ctx_, ti);
    }
  }

 private:
  void trace(const std::string& name, const std::string& category, double start, double dur) {
    if (ctx_.collect_trace && track_ && dur > 0)
      ctx_.timeline.trace.push_back({name, category, track_->tid, start, dur, nullptr, track_->pid});
  }

  // Host work: its `locked` share under the process lock (waiting for it when another thread
  // holds it), the rest without. Each eager op's cost ("op") is too fine for the trace: the
  // dispatch spans around them show it.
  void host(const plan::Task& t) {
    auto& p = ctx_.timeline.process;
    double start = sg4::Engine::get_clock();
    if (t.locked > 0) {
      const double w0 = start;
      ctx_.lock->lock();
      const double waited = sg4::Engine::get_clock() - w0;
      p.lock_wait_s += waited;
      trace("GIL wait", "gil wait", w0, waited);
      start = sg4::Engine::get_clock();
      sg4::this_actor::sleep_for(t.locked * t.seconds);
      p.locked_s[static_cast<size_t>(stream_)] += t.locked * t.seconds;
      ctx_.lock->unlock();
    }
    if (t.locked < 1) sg4::this_actor::sleep_for((1 - t.locked) * t.seconds);
    if (t.category != "op") trace(t.name, t.category, start, t.seconds);
  }

  void mark(const plan::Task& t) {
    if (t.mark == plan::Mark::SPAN_BEGIN) {
      spans_.push_back(sg4::Engine::get_clock());
    } else if (t.mark == plan::Mark::SPAN_END && !spans_.empty()) {
      const double t0 = spans_.back();
      spans_.pop_back();
      trace(t.name, t.category, t0, sg4::Engine::get_clock() - t0);
    }
  }

  ExecContext& ctx_;
  int stream_;
  const report::TraceTrack* track_;
  std::vector<double> spans_;  // open spans' start times
};

}  // namespace

void run_host_stream(ExecContext& ctx, int stream) { HostStream(ctx, stream).run(); }

void start_first_threads(ExecContext& ctx) {
  const auto& plan = ctx.plan;
  ctx.starts.assign(plan.tasks.size(), {});
  std::vector<int> first;
  for (size_t s = 0; s < plan.streams.size(); ++s) {
    if (plan.streams[s].kind != plan::StreamKind::HOST || ctx.programs[s].empty()) continue;
    // Started by the last host task its first task follows (what else it follows it waits for);
    // at time 0 when it follows none.
    int by = -1;
    for (int a : plan.tasks[static_cast<size_t>(ctx.programs[s].front())].after)
      if (plan.streams[static_cast<size_t>(plan.tasks[static_cast<size_t>(a)].stream)].kind == plan::StreamKind::HOST)
        by = std::max(by, a);
    if (by < 0)
      first.push_back(static_cast<int>(s));
    else
      ctx.starts[static_cast<size_t>(by)].push_back(static_cast<int>(s));
  }
  for (int s : first)
    sg4::Actor::create("host-thread-" + std::to_string(s), ctx.host, [&ctx, s] { run_host_stream(ctx, s); });
}

void start_threads(ExecContext& ctx, int ti) {
  for (int s : ctx.starts[static_cast<size_t>(ti)])
    sg4::Actor::create("host-thread-" + std::to_string(s), ctx.host, [&ctx, s] { run_host_stream(ctx, s); });
}

}  // namespace ddpsim::engine
