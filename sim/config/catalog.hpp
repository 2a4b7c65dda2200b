#pragma once
// Finds and loads the bundled inputs (models/, configs/{gpus,links,clusters}/, scenarios/) and
// user files, into validated specs. Every problem of a file is reported in one ConfigError.
#include <filesystem>
#include <string>
#include <vector>

#include "config/specs.hpp"
#include "core/json_reader.hpp"

namespace ddpsim::config {

enum class Kind { MODEL, GPU, LINK, CLUSTER, SCENARIO };
std::string to_string(Kind k);

class Catalog {
 public:
  explicit Catalog(std::filesystem::path root);
  // $DDPSIM_DATA_DIR if set, else the source tree the binary was built from.
  static std::filesystem::path default_root();
  const std::filesystem::path& root() const { return root_; }

  std::filesystem::path dir(Kind k) const;
  std::vector<std::string> names(Kind k) const;  // sorted bundled names (file stems)
  // A bundled name, or a path to a file (absolute, relative to the working directory, or relative
  // to `relative_to`). Throws ConfigError naming what was asked and what exists.
  std::filesystem::path resolve(Kind k, const std::string& name_or_path,
                                const std::filesystem::path& relative_to = {}) const;

  ModelSpec load_model(const std::filesystem::path& file) const;
  GpuSpec load_gpu(const std::filesystem::path& file) const;
  LinkSpec load_link(const std::filesystem::path& file) const;
  ClusterSpec load_cluster(const std::filesystem::path& file) const;
  // `overrides` are "a.b.c=value" strings (--set), applied to the scenario JSON before validation.
  Scenario load_scenario(const std::filesystem::path& file, const std::vector<std::string>& overrides = {}) const;
  // Builds a scenario from an already-parsed JSON document (sweeps and validation use this).
  Scenario scenario_from_json(const core::Json& doc, const std::string& label,
                              const std::filesystem::path& base_dir) const;

 private:
  // Reads a reference that is either a bundled name/path string or an inline object.
  GpuSpec gpu_ref(core::ObjectReader& r, const std::string& key, const std::filesystem::path& base) const;
  LinkSpec link_ref(core::ObjectReader& r, const std::string& key, const std::filesystem::path& base, bool required,
                    bool* present) const;
  ClusterSpec cluster_ref(core::ObjectReader& r, const std::string& key, const std::filesystem::path& base) const;
  std::filesystem::path root_;
};

// Parsers for one object (used for files and for inline objects in scenarios).
ModelSpec parse_model(const core::Json& j, core::Diagnostics& d);
GpuSpec parse_gpu(const core::Json& j, const std::string& path, core::Diagnostics& d);
LinkSpec parse_link(const core::Json& j, const std::string& path, core::Diagnostics& d);

}  // namespace ddpsim::config
