// ddpsim: predicts PyTorch DDP step time and communication/computation overlap.
// Each subcommand registers itself (register_<name> in its cmd_*.cpp, listed in kCommands); only
// main() turns exceptions into messages and exit codes: 0 ok, 2 bad input, 1 failure.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "app/commands.hpp"
#include "core/error.hpp"

namespace {
// In `ddpsim --help` order.
constexpr ddpsim::app::Registrar kCommands[] = {
    ddpsim::app::register_run,        ddpsim::app::register_buckets,      ddpsim::app::register_sweep,
    ddpsim::app::register_compare,    ddpsim::app::register_merge,        ddpsim::app::register_list,
    ddpsim::app::register_show,       ddpsim::app::register_import_trace, ddpsim::app::register_bench,
    ddpsim::app::register_collective, ddpsim::app::register_calibrate,    ddpsim::app::register_validate,
};
}  // namespace

int main(int argc, char** argv) {
  using namespace ddpsim::app;
  CLI::App app{"ddpsim: a discrete-event simulator of PyTorch DistributedDataParallel training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ddpsim 0.1.0");
  CommonOptions common;
  std::string log_level = "warn";  // debug: files loaded, scenarios resolved, child processes
  app.add_option("--data-dir", common.data_dir,
                 "folder holding models/, configs/ and scenarios/ (default: $DDPSIM_DATA_DIR or the source tree)");
  app.add_option("--log-level", log_level, "messages on stderr: trace, debug, info, warn (default), error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  std::vector<Command> commands;
  for (const auto reg : kCommands) commands.push_back(reg(app, common));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  // Log lines go to stderr so that `--json -` output on stdout stays parseable.
  spdlog::set_default_logger(spdlog::stderr_color_mt("ddpsim"));
  spdlog::set_pattern("ddpsim: %l: %v");
  spdlog::set_level(spdlog::level::from_str(log_level));
  try {
    for (const auto& c : commands)
      if (*c.cli) return c.run();
  } catch (const ddpsim::core::ConfigError& e) {
    std::cerr << "ddpsim: error:\n";
    for (const auto& p : e.problems()) std::cerr << "  " << p << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "ddpsim: failed: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
