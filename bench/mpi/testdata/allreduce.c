/* The peer of BenchmarkAllReduce and BenchmarkAllReduceInPlace
 * (bench/mpi): MPI_Allreduce of float32 sums from 1 KB to 64 MB, out of
 * place (src to dst) and in place (MPI_IN_PLACE on dst), timed on rank 0
 * after a barrier, printed as Go benchmark lines (ns/op and GB/s of the
 * buffer). Built and run by bench/mpi/run.sh. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (long bytes = 1 << 10; bytes <= 64L << 20; bytes *= 4) {
		long n = bytes / 4;
		float *src = malloc(bytes), *dst = malloc(bytes);
		for (long i = 0; i < n; i++) src[i] = (float)(i % 7);
		int iters = (int)(256L * 1024 * 1024 / bytes);
		if (iters < 5) iters = 5;
		if (iters > 2000) iters = 2000;
		MPI_Allreduce(src, dst, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* warm */
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++)
			MPI_Allreduce(src, dst, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		double t = (MPI_Wtime() - t0) / iters;
		if (rank == 0)
			printf("BenchmarkCAllReduce/%ldKB-%d\t%d\t%.1f ns/op\t%.3f GB/s\n", bytes >> 10, size, iters, t * 1e9, bytes / t / 1e9);
		MPI_Allreduce(MPI_IN_PLACE, dst, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* warm */
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++)
			MPI_Allreduce(MPI_IN_PLACE, dst, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		t = (MPI_Wtime() - t0) / iters;
		if (rank == 0)
			printf("BenchmarkCAllReduceInPlace/%ldKB-%d\t%d\t%.1f ns/op\t%.3f GB/s\n", bytes >> 10, size, iters, t * 1e9, bytes / t / 1e9);
		free(src);
		free(dst);
	}
	MPI_Finalize();
	return 0;
}
