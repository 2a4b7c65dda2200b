// `ddpsim show`: a model's layers with their parameters, FLOPs and measured times.
#include "app/commands.hpp"
#include "config/catalog.hpp"
#include "report/views.hpp"

namespace ddpsim::app {

int cmd_show(const CommonOptions& common, const std::string& name, const std::string& json_out) {
  check_outputs({json_out});
  auto cat = common.catalog();
  auto m = cat.load_model(cat.resolve(config::Kind::MODEL, name));
  return emit(report::model_layers_view(m), json_out, "show");
}

}  // namespace ddpsim::app
