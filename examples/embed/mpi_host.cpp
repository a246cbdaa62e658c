// A host that is itself an MPI program: it splits its world, and the first
// two processes train the MLP example together on their own communicator
// (each runs one rank), while the others do their own work. Whale works on
// a duplicate of the communicator it is given, so its messages never meet
// the host's.
//
//   mpirun -np 3 whale-embed-mpi-host MLP.whl
#include "whale/Train.h"

#include <mpi.h>

#include <cstdio>

int main(int argc, char **argv) {
  int provided = 0, rank = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 2) {
    std::fprintf(stderr, "usage: mpi_host MLP.whl\n");
    MPI_Finalize();
    return 2;
  }
  MPI_Comm trainers;
  const bool trains = rank < 2;
  MPI_Comm_split(MPI_COMM_WORLD, trains ? 0 : 1, rank, &trainers);
  int status = 0;
  if (trains) {
    whale::Interpreter interp;
    if (!interp.loadFile(argv[1])) {
      std::fputs(interp.renderDiagnostics().c_str(), stderr);
      status = 1;
    } else {
      whale::TrainOptions options;
      options.cluster = "cpu:2@threads=1";
      options.steps = 5;
      options.processes = true;
      options.mpiCommunicator = &trainers;
      whale::TrainResult r = whale::train(interp, options);
      if (!r.ok) {
        std::fprintf(stderr, "host %d: %s\n", rank, r.error.c_str());
        status = 1;
      } else {
        std::printf("process %d of the trainers: loss %.5f -> %.5f\n", rank,
                    r.losses.front(), r.losses.back());
      }
    }
  }
  // Everyone meets again on the host's own world.
  int worst = 0;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 2)
    std::printf("process 2 did its own work; the trainers %s\n",
                worst ? "failed" : "finished");
  MPI_Comm_free(&trainers);
  MPI_Finalize();
  return worst;
}
