#include "cli/model_options.h"

#include <cstdio>

#include "util/error.h"
#include "cpu/helper_threads.h"

namespace translution::cli {

std::set<std::string> model_flags(std::set<std::string> extra) {
  extra.insert("no-lor-shared");
  return extra;
}

std::set<std::string> model_options(std::set<std::string> extra) {
  for (const char* o : {"model", "preset", "image", "patch", "depth", "dim", "heads", "head-dim", "mlp-dim", "channels",
                        "classes", "lor-dim", "first-model", "first-blocks"})
    extra.insert(o);
  return extra;
}

ViTConfig config_from_args(const Args& args) {
  ViTConfig c = preset_config(args.get("preset", "A"), args.require("model"));
  if (args.has("image")) {
    const std::string image = args.get("image");
    long long h = 0, w = 0;
    char x = 0, extra = 0;
    const int n = std::sscanf(image.c_str(), "%lld%c%lld%c", &h, &x, &w, &extra);
    if (n == 1) w = h;
    else if (n != 3 || x != 'x') throw Error("--image expects a size like 84 or 84x64, got '" + image + "'");
    c.image_height = h;
    c.image_width = w;
  }
  c.patch = args.get_int("patch", c.patch);
  c.depth = args.get_int("depth", c.depth);
  c.dim = args.get_int("dim", c.dim);  // widths override the preset's, for models sized to a budget
  c.heads = args.get_int("heads", c.heads);
  c.head_dim = args.get_int("head-dim", c.head_dim);
  c.mlp_dim = args.get_int("mlp-dim", c.mlp_dim);
  c.channels = args.get_int("channels", c.channels);
  c.classes = args.get_int("classes", c.classes);
  c.lor_c1 = c.lor_c2 = args.get_int("lor-dim", c.lor_c1);
  if (args.flag("no-lor-shared")) c.lor_shared = false;
  c.first_model = args.get("first-model", "");
  c.first_blocks = args.get_int("first-blocks", c.first_model.empty() ? 0 : 1);
  c.validate();
  return c;
}

int matrix_threads_option(const Args& args, int fallback) {
  int threads = fallback;
  if (args.has("matrix-threads")) {
    threads = args.get("matrix-threads") == "auto" ? 0 : int(args.get_int("matrix-threads", 0));
    if (threads < 0 || (threads == 0 && args.get("matrix-threads") != "auto"))
      throw Error("--matrix-threads must be auto or at least 1, got '" + args.get("matrix-threads") + "'");
  }
  return threads;
}

}  // namespace translution::cli
