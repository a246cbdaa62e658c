//===- CAPI.cpp - the C embedding API over whale::Interpreter -------------===//

#include "lib/api/CAPIInternal.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

extern "C" {

whale_interp *whale_interp_create(void) {
  auto *w = new (std::nothrow) whale_interp();
  if (w)
    w->interp = std::make_unique<whale::Interpreter>(w->options);
  return w;
}

void whale_interp_destroy(whale_interp *w) { delete w; }

whale_status whale_interp_set_dim(whale_interp *w, const char *name,
                                  long long value) {
  if (!w || !name || value < 1)
    return WHALE_ERROR_ARGUMENT;
  std::lock_guard<std::mutex> guard(w->lock);
  w->options.dims[name] = value;
  // Options apply to the loads that follow.
  w->interp = std::make_unique<whale::Interpreter>(w->options);
  w->rendered.clear();
  return WHALE_OK;
}

whale_status whale_interp_load_file(whale_interp *w, const char *path) {
  if (!w || !path)
    return WHALE_ERROR_ARGUMENT;
  std::lock_guard<std::mutex> guard(w->lock);
  return w->loaded(w->interp->loadFile(path)) ? WHALE_OK : WHALE_ERROR_SCRIPT;
}

whale_status whale_interp_load_string(whale_interp *w, const char *source,
                                      const char *name) {
  if (!w || !source)
    return WHALE_ERROR_ARGUMENT;
  std::lock_guard<std::mutex> guard(w->lock);
  return w->loaded(w->interp->loadString(source, name ? name : "<string>"))
             ? WHALE_OK
             : WHALE_ERROR_SCRIPT;
}

size_t whale_interp_num_diagnostics(const whale_interp *w) {
  if (!w)
    return 0;
  std::lock_guard<std::mutex> guard(w->lock);
  return w->interp->diagnostics().size();
}

const char *whale_interp_diagnostics(whale_interp *w) {
  if (!w)
    return "";
  std::lock_guard<std::mutex> guard(w->lock);
  return w->rendered.c_str();
}

char *whale_interp_emit(whale_interp *w, const char *stage) {
  if (!w || !stage)
    return nullptr;
  std::optional<whale::Stage> s = whale::parseStage(stage);
  if (!s)
    return nullptr;
  std::lock_guard<std::mutex> guard(w->lock);
  std::optional<std::string> text = w->interp->emit(*s);
  return text ? whale::capi::newString(*text) : nullptr;
}

void whale_string_free(char *s) { std::free(s); }

} // extern "C"
