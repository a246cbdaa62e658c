/*===- whale/whale.h - the C embedding API ------------------------*- C -*-===*
 *
 * A C interface over whale::Interpreter and whale::Job for hosts that are
 * not C++. Every function takes an explicit handle; nothing prints, exits
 * or aborts. Threads: a handle may be used from any thread; calls on one
 * handle take turns (a lock), and separate handles run side by side.
 *
 *   whale_interp *w = whale_interp_create();
 *   if (whale_interp_load_file(w, "model.whl") != WHALE_OK)
 *     fputs(whale_interp_diagnostics(w), stderr);
 *   whale_job *job = NULL;
 *   if (whale_job_create(w, NULL, 0, 0, &job) != WHALE_OK)
 *     fputs(whale_interp_last_error(w), stderr);
 *   const void *batch[2] = {x, y};   (one buffer per model input)
 *   double loss;
 *   if (whale_job_step(job, batch, &loss) != WHALE_OK)
 *     fputs(whale_job_last_error(job), stderr);
 *   ...
 *   whale_job_destroy(job);
 *   whale_interp_destroy(w);
 *
 * docs/embedding.md lists every function with its errors.
 *
 *===----------------------------------------------------------------------===*/

#ifndef WHALE_WHALE_H
#define WHALE_WHALE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct whale_interp whale_interp;
typedef struct whale_job whale_job;

typedef enum whale_status {
  WHALE_OK = 0,
  WHALE_ERROR_SCRIPT = 1,   /* the script has errors: see diagnostics */
  WHALE_ERROR_ARGUMENT = 2, /* a null handle or argument, an unknown stage */
  WHALE_ERROR_RUN = 3,      /* planning, compiling, a step or a file failed: see
                               the handle's last error */
} whale_status;

/* Element types of model inputs. */
enum { WHALE_F32 = 0, WHALE_I32 = 2 };

/* A new interpreter; NULL only when out of memory. */
whale_interp *whale_interp_create(void);
void whale_interp_destroy(whale_interp *w);

/* Binds a symbolic input dimension (such as the batch B) for later loads. */
whale_status whale_interp_set_dim(whale_interp *w, const char *name,
                                  long long value);

whale_status whale_interp_load_file(whale_interp *w, const char *path);
whale_status whale_interp_load_string(whale_interp *w, const char *source,
                                      const char *name);

/* Diagnostics of the last load: how many, and all of them rendered as the
 * CLI prints them. The string is owned by the interpreter and valid until
 * the next load, set_dim or destroy of this handle (by any thread). */
size_t whale_interp_num_diagnostics(const whale_interp *w);
const char *whale_interp_diagnostics(whale_interp *w);

/* The loaded program at a stage ("ast", "whale"), as a new string the caller
 * frees with whale_string_free; NULL after an error. */
char *whale_interp_emit(whale_interp *w, const char *stage);
void whale_string_free(char *s);

/* What the last plan, simulate, train or job_create on this handle
 * reported when it failed ("" after a success); valid until the next call
 * on the handle. */
const char *whale_interp_last_error(whale_interp *w);

/* Plans the loaded script's trained model over `cluster` (a spec such as
 * "cpu:4" or a cluster file, as `--cluster` takes) and gives the plan as
 * `whale plan --json` prints it, in a new string for whale_string_free. */
whale_status whale_interp_plan(whale_interp *w, const char *cluster,
                               char **json);

/* Predicts the plan's iteration (`whale sim --json`), from the profile
 * database at `profile` when not NULL, else from the device model. */
whale_status whale_interp_simulate(whale_interp *w, const char *cluster,
                                   const char *profile, char **json);

/* Trains the loaded script's model with its own data for `steps` steps
 * (0: the train block's), on one CPU device when `cluster` is NULL, else
 * under a plan; one JSON line per step goes to `metrics` when not NULL.
 * `final_loss` (may be NULL) receives the last step's loss. */
whale_status whale_interp_train(whale_interp *w, const char *cluster,
                                long long steps, const char *metrics,
                                double *final_loss);

/* As whale_interp_train, with the plan's ranks the processes of an MPI
 * communicator, one rank each (docs/distributed.md): `mpi_comm` points to
 * the host's MPI_Comm (NULL: MPI_COMM_WORLD), and `cluster` must have as
 * many devices as it has processes. Every process of it calls this with
 * the same script and arguments. The host initializes MPI (with
 * MPI_THREAD_SERIALIZED at least) and finalizes it; Whale works on a
 * duplicate of the communicator, so its messages never meet the host's.
 * Only process 0 writes `metrics`; every process gets the same
 * `final_loss`. WHALE_ERROR_RUN, saying so, where Whale was built without
 * MPI. */
whale_status whale_interp_train_mpi(whale_interp *w, const char *cluster,
                                    long long steps, const char *metrics,
                                    const void *mpi_comm, double *final_loss);

/* A job: the model's train step compiled for this CPU, its parameters made
 * with their initial values, fed batches by the host. `model` NULL: the
 * first model with a train block; `batch` 0: the train block's; `threads`
 * 0: every core. The job keeps its own copy of the program: the
 * interpreter may load another script or be destroyed while it lives. */
whale_status whale_job_create(whale_interp *w, const char *model,
                              long long batch, int threads, whale_job **out);
void whale_job_destroy(whale_job *j);
/* Why the last call on this job failed ("" after a success). */
const char *whale_job_last_error(whale_job *j);

/* The model's inputs, in order: name, WHALE_F32 or WHALE_I32, rank and
 * extents. A bad index gives NULL, -1 or 0. */
size_t whale_job_num_inputs(whale_job *j);
const char *whale_job_input_name(whale_job *j, size_t i);
int whale_job_input_dtype(whale_job *j, size_t i);
int whale_job_input_rank(whale_job *j, size_t i);
long long whale_job_input_dim(whale_job *j, size_t i, int d);

/* One training step on the host's batch: one buffer per input, row-major
 * in its shape, read during the call only (in place when aligned to 64
 * bytes, else copied first). `loss` (may be NULL) receives the loss. */
whale_status whale_job_step(whale_job *j, const void *const *inputs,
                            double *loss);
/* Steps taken, counting a loaded checkpoint's. */
long long whale_job_steps_done(whale_job *j);
/* The last step as JSON ({"step", "loss", "samples_per_s", "seconds"}), in
 * a new string for whale_string_free. */
char *whale_job_metrics(whale_job *j);

/* The trained parameters: how many, each name (NULL past the end), and a
 * parameter's element count (-1 when there is none of that name). */
size_t whale_job_num_params(whale_job *j);
const char *whale_job_param_name(whale_job *j, size_t i);
long long whale_job_param_numel(whale_job *j, const char *name);
/* Copies a parameter's `count` f32 elements out of the job or into it. */
whale_status whale_job_read_param(whale_job *j, const char *name, float *out,
                                  size_t count);
whale_status whale_job_write_param(whale_job *j, const char *name,
                                   const float *values, size_t count);

/* Saves the parameters, optimizer state and step to a checkpoint, or
 * resumes from one of this model. */
whale_status whale_job_save(whale_job *j, const char *path);
whale_status whale_job_load(whale_job *j, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* WHALE_WHALE_H */
