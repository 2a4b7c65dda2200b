// `ddpsim merge`: joins the row journals of `sweep --shard K/N` runs into exactly what the
// unsharded sweep writes (the same journal, CSV, JSON and table bytes, given the sweep's own
// --metric, --group-by and --tolerance).
#include <iostream>
#include <set>

#include "app/commands.hpp"
#include "app/sweep.hpp"
#include "core/error.hpp"

namespace ddpsim::app {

int cmd_merge(const CommonOptions&, const MergeArgs& args) {
  if (args.inputs.empty()) throw core::ConfigError("merge: give the shards' --out files (FILE.jsonl ...)");
  warn_if_nothing_written("merge", args.quiet, {args.out, args.csv_out, args.json_out});
  std::vector<SweepJournal> parts;
  for (const auto& f : args.inputs) parts.push_back(read_journal(f));
  std::vector<std::string> problems;
  SweepHeader header = parts[0].header;
  header.shard = Shard{};
  // The ranking flags are checked before anything is read further (a bad one: exit 2, nothing written).
  const SweepDecide decide = parse_decide(args.decide.metric, args.decide.group_by, args.decide.tolerance);
  group_path(header, decide);
  std::set<int> shards;
  std::map<size_t, core::Json> rows;
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& h = parts[i].header;
    if (!h.same_sweep(header)) {
      problems.push_back(args.inputs[i] + ": another sweep (" + h.to_json().dump() + ") than " + args.inputs[0] + " (" +
                         parts[0].header.to_json().dump() + ")");
      continue;
    }
    if (h.shard.n != parts[0].header.shard.n)
      problems.push_back(args.inputs[i] + ": shard " + std::to_string(h.shard.k) + "/" + std::to_string(h.shard.n) +
                         " is not one of " + std::to_string(parts[0].header.shard.n) + " like " + args.inputs[0]);
    else if (!shards.insert(h.shard.k).second)
      problems.push_back(args.inputs[i] + ": shard " + std::to_string(h.shard.k) + "/" + std::to_string(h.shard.n) +
                         " given twice");
    for (const auto& [point, row] : parts[i].rows) {
      if (static_cast<int>(point % static_cast<size_t>(h.shard.n)) + 1 != h.shard.k)
        problems.push_back(args.inputs[i] + ": point " + std::to_string(point) + " does not belong to shard " +
                           std::to_string(h.shard.k) + "/" + std::to_string(h.shard.n));
      else
        rows.emplace(point, row);
    }
  }
  if (problems.empty()) {
    std::vector<size_t> missing;
    for (size_t p = 0; p < header.points; ++p)
      if (!rows.count(p)) missing.push_back(p);
    if (!missing.empty()) {
      std::string list;
      for (size_t k = 0; k < missing.size() && k < 20; ++k) list += (k ? ", " : "") + std::to_string(missing[k]);
      if (missing.size() > 20) list += ", ...";
      problems.push_back("merge: " + std::to_string(missing.size()) + " of " + std::to_string(header.points) +
                         " points have no row (points " + list +
                         "): a shard is missing or unfinished; rerun it with sweep --shard K/N --resume");
    }
  }
  if (!problems.empty()) throw core::ConfigError(problems);
  std::string table = finish_sweep(header, rows, SweepOutputs{args.out, args.csv_out, args.json_out}, decide);
  if (args.json_out != "-" && args.csv_out != "-" && !args.quiet) std::cout << table;
  for (const auto& [p, r] : rows)
    if (r.contains("error")) return 4;
  return 0;
}

Command register_merge(CLI::App& app, CommonOptions& common) {
  auto args = std::make_shared<MergeArgs>();
  auto* cmd = app.add_subcommand("merge", "join sweep --shard outputs into what the unsharded sweep writes");
  cmd->add_option("inputs", args->inputs, "the shards' --out FILE.jsonl")->required();
  cmd->add_option("--out", args->out, "write the merged rows (JSONL) to FILE");
  cmd->add_option("--csv", args->csv_out, "write the rows as CSV to FILE or -");
  cmd->add_option("--json", args->json_out, "write {rows, best} JSON to FILE or -");
  cmd->add_flag("-q,--quiet", args->quiet, "do not print the table");
  add_decide_flags(*cmd, args->decide);
  return {cmd, [&common, args] { return cmd_merge(common, *args); }};
}
}  // namespace ddpsim::app
