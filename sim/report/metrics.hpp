#pragma once
// The report's quantities from the engine's Timeline, each computed in one place (DESIGN.md,
// "Definitions the reports use"). SimGrid-free; unit-tested on hand-made timelines.
#include "report/report.hpp"
#include "report/timeline.hpp"

namespace ddpsim::report {

// The optimizer step `report` (all its micro-steps) as rank 0 saw it.
IterationReport iteration_report(const Timeline& t, int report);
// Iteration 1 (when simulated) and the steady state: with several steady steps (explicit ranks)
// their mean, with the step-time distribution. Fills iteration1, steady, steady_iteration,
// has_iteration1 of `into`; the caller fills the case fields.
void fill_iterations(const Timeline& t, StepReport& into);

// Derived quantities of an iteration from its sums: exposed communication, overlap ratio (unclamped,
// undefined without communication), hidden communication, per-micro-step and per-sample figures.
void derive(IterationReport& it);

}  // namespace ddpsim::report
