/*===- whale/whale.h - the C embedding API ------------------------*- C -*-===*
 *
 * A C interface over whale::Interpreter for hosts that are not C++. Every
 * function takes an explicit handle; nothing prints, exits or aborts.
 * Threads: a handle may be used from any thread; calls on one handle take
 * turns (a lock), and separate handles run side by side.
 *
 *   whale_interp *w = whale_interp_create();
 *   if (whale_interp_load_file(w, "model.whl") != WHALE_OK)
 *     fputs(whale_interp_diagnostics(w), stderr);
 *   char *ir = whale_interp_emit(w, "whale");
 *   ...
 *   whale_string_free(ir);
 *   whale_interp_destroy(w);
 *
 *===----------------------------------------------------------------------===*/

#ifndef WHALE_WHALE_H
#define WHALE_WHALE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct whale_interp whale_interp;

typedef enum whale_status {
  WHALE_OK = 0,
  WHALE_ERROR_SCRIPT = 1,   /* the script has errors: see diagnostics */
  WHALE_ERROR_ARGUMENT = 2, /* a null handle or argument, an unknown stage */
} whale_status;

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

#ifdef __cplusplus
}
#endif

#endif /* WHALE_WHALE_H */
