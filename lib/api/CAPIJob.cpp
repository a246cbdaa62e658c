//===- CAPIJob.cpp - the C API over whale::Job
//-----------------------------===//

#include "lib/api/CAPIInternal.h"

#include "whale/Job.h"

#include <cstdio>
#include <new>

/// A job and its last error, behind one lock like an interpreter handle.
struct whale_job {
  std::unique_ptr<whale::Job> job;
  std::string lastError;
  std::mutex lock;

  whale_status outcome(bool ok, std::string error) {
    lastError = ok ? "" : std::move(error);
    return ok ? WHALE_OK : WHALE_ERROR_RUN;
  }
};

namespace {

const whale::TensorInfo *inputAt(whale_job *j, size_t i) {
  if (!j)
    return nullptr;
  const std::vector<whale::TensorInfo> &in = j->job->inputs();
  return i < in.size() ? &in[i] : nullptr;
}

} // namespace

extern "C" {

whale_status whale_job_create(whale_interp *w, const char *model,
                              long long batch, int threads, whale_job **out) {
  if (!w || !out || batch < 0 || threads < 0)
    return WHALE_ERROR_ARGUMENT;
  *out = nullptr;
  std::lock_guard<std::mutex> guard(w->lock);
  whale::JobOptions options;
  if (model)
    options.model = model;
  if (batch > 0)
    options.batch = batch;
  options.threads = threads;
  std::string error;
  std::unique_ptr<whale::Job> job =
      whale::Job::create(*w->interp, options, error);
  if (!job)
    return w->outcome(error);
  auto *j = new (std::nothrow) whale_job();
  if (!j)
    return w->outcome("out of memory");
  j->job = std::move(job);
  *out = j;
  return w->outcome("");
}

void whale_job_destroy(whale_job *j) { delete j; }

const char *whale_job_last_error(whale_job *j) {
  if (!j)
    return "";
  std::lock_guard<std::mutex> guard(j->lock);
  return j->lastError.c_str();
}

size_t whale_job_num_inputs(whale_job *j) {
  return j ? j->job->inputs().size() : 0;
}

const char *whale_job_input_name(whale_job *j, size_t i) {
  const whale::TensorInfo *in = inputAt(j, i);
  return in ? in->name.c_str() : nullptr;
}

int whale_job_input_dtype(whale_job *j, size_t i) {
  const whale::TensorInfo *in = inputAt(j, i);
  return !in ? -1 : in->dtype == "f32" ? WHALE_F32 : WHALE_I32;
}

int whale_job_input_rank(whale_job *j, size_t i) {
  const whale::TensorInfo *in = inputAt(j, i);
  return in ? static_cast<int>(in->shape.size()) : -1;
}

long long whale_job_input_dim(whale_job *j, size_t i, int d) {
  const whale::TensorInfo *in = inputAt(j, i);
  if (!in || d < 0 || static_cast<size_t>(d) >= in->shape.size())
    return 0;
  return in->shape[d];
}

whale_status whale_job_step(whale_job *j, const void *const *inputs,
                            double *loss) {
  if (!j || !inputs)
    return WHALE_ERROR_ARGUMENT;
  std::lock_guard<std::mutex> guard(j->lock);
  std::string error;
  bool ok = j->job->step(inputs, error);
  if (ok && loss)
    *loss = j->job->lastStep().loss;
  return j->outcome(ok, error);
}

long long whale_job_steps_done(whale_job *j) {
  if (!j)
    return 0;
  std::lock_guard<std::mutex> guard(j->lock);
  return j->job->stepsDone();
}

char *whale_job_metrics(whale_job *j) {
  if (!j)
    return nullptr;
  std::lock_guard<std::mutex> guard(j->lock);
  const whale::StepReport &r = j->job->lastStep();
  char line[256];
  std::snprintf(line, sizeof line,
                "{\"step\": %lld, \"loss\": %.9g, \"samples_per_s\": %.6g, "
                "\"seconds\": %.6g}",
                static_cast<long long>(r.step), r.loss, r.samplesPerSecond,
                r.elapsedSeconds);
  return whale::capi::newString(line);
}

size_t whale_job_num_params(whale_job *j) {
  return j ? j->job->parameters().size() : 0;
}

const char *whale_job_param_name(whale_job *j, size_t i) {
  if (!j || i >= j->job->parameters().size())
    return nullptr;
  return j->job->parameters()[i].name.c_str();
}

long long whale_job_param_numel(whale_job *j, const char *name) {
  if (!j || !name)
    return -1;
  for (const whale::TensorInfo &p : j->job->parameters())
    if (p.name == name)
      return p.elements();
  return -1;
}

whale_status whale_job_read_param(whale_job *j, const char *name, float *out,
                                  size_t count) {
  if (!j || !name || (!out && count > 0))
    return WHALE_ERROR_ARGUMENT;
  std::lock_guard<std::mutex> guard(j->lock);
  std::string error;
  bool ok =
      j->job->readParameter(name, out, static_cast<int64_t>(count), error);
  return j->outcome(ok, error);
}

whale_status whale_job_write_param(whale_job *j, const char *name,
                                   const float *values, size_t count) {
  if (!j || !name || (!values && count > 0))
    return WHALE_ERROR_ARGUMENT;
  std::lock_guard<std::mutex> guard(j->lock);
  std::string error;
  bool ok =
      j->job->writeParameter(name, values, static_cast<int64_t>(count), error);
  return j->outcome(ok, error);
}

whale_status whale_job_save(whale_job *j, const char *path) {
  if (!j || !path)
    return WHALE_ERROR_ARGUMENT;
  std::lock_guard<std::mutex> guard(j->lock);
  std::string error;
  bool ok = j->job->save(path, error);
  return j->outcome(ok, error);
}

whale_status whale_job_load(whale_job *j, const char *path) {
  if (!j || !path)
    return WHALE_ERROR_ARGUMENT;
  std::lock_guard<std::mutex> guard(j->lock);
  std::string error;
  bool ok = j->job->load(path, error);
  return j->outcome(ok, error);
}

} // extern "C"
