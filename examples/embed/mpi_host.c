/* A host in C that is itself an MPI program: it splits its world, and the
 * first two processes train the MLP example together on their own
 * communicator (one rank each, whale_interp_train_mpi), while the others do
 * their own work. Whale works on a duplicate of the communicator it is
 * given, so its messages never meet the host's.
 *
 *   mpirun -np 3 whale-embed-mpi-host-c MLP.whl
 */
#include "whale/whale.h"

#include <mpi.h>

#include <stdio.h>

int main(int argc, char **argv) {
  int provided = 0, rank = 0, status = 0, worst = 0;
  MPI_Comm trainers;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 2) {
    fprintf(stderr, "usage: mpi_host MLP.whl\n");
    MPI_Finalize();
    return 2;
  }
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : 1, rank, &trainers);
  if (rank < 2) {
    whale_interp *w = whale_interp_create();
    double loss = 0;
    if (whale_interp_load_file(w, argv[1]) != WHALE_OK) {
      fputs(whale_interp_diagnostics(w), stderr);
      status = 1;
    } else if (whale_interp_train_mpi(w, "cpu:2@threads=1", 5, NULL,
                                      &trainers, &loss) != WHALE_OK) {
      fprintf(stderr, "host %d: %s\n", rank, whale_interp_last_error(w));
      status = 1;
    } else {
      printf("process %d of the C trainers: final loss %.5f\n", rank, loss);
    }
    whale_interp_destroy(w);
  }
  /* Everyone meets again on the host's own world. */
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 2)
    printf("process 2 did its own work; the C trainers %s\n",
           worst ? "failed" : "finished");
  MPI_Comm_free(&trainers);
  MPI_Finalize();
  return worst;
}
