// ddpbench: measures, on real GPUs, what ddpsim simulates (bench/README.md).
// Exit status: 0 success, 1 GPU/runtime error, 2 bad arguments or model file.
#include <cstdio>
#include <string>
#include <vector>

#include "commands.hpp"

int main(int argc, char** argv) {
  using namespace ddpbench;
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    const Command cmd = parse_command(args);
    if (const auto* h = std::get_if<HelpRequest>(&cmd)) {
      std::printf("%s", h->text.c_str());
      return 0;
    }
    if (const auto* a = std::get_if<AllreduceArgs>(&cmd))
      cmd_allreduce(*a, cmd);
    else if (const auto* l = std::get_if<LayersArgs>(&cmd))
      cmd_layers(*l, cmd);
    else if (const auto* k = std::get_if<ContentionArgs>(&cmd))
      cmd_contention(*k, cmd);
    else if (const auto* s = std::get_if<StepArgs>(&cmd))
      cmd_step(*s, cmd);
    return 0;
  } catch (const ArgError& e) {
    std::fprintf(stderr, "ddpbench: %s\n(see ddpbench %s--help)\n", e.what(),
                 args.empty() ? "" : (args[0] + " ").c_str());
    return 2;
  } catch (const ModelError& e) {
    std::fprintf(stderr, "ddpbench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddpbench: %s\n", e.what());
    return 1;
  }
}
