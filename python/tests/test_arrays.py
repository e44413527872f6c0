"""Global arrays, matmul and counters against numpy, and beside mpi4py."""

import pytest


@pytest.mark.parametrize("n", [1, 2, 4])
def test_global_arrays_under_nf_run(job, n):
    job.run(n, "arrays")


@pytest.mark.parametrize("n", [1, 2, 4])
def test_matmul_matches_numpy(job, n):
    job.run(n, "matmul")


def test_global_arrays_under_mpirun(job):
    job.run(2, "arrays", launcher="mpirun")


@pytest.mark.parametrize("n", [2, 4])
def test_a_mpi4py_program_uses_global_arrays(job, n):
    import mpi4py  # noqa: F401 - scripts/test-python.sh installs it; missing is a failure
    job.run(n, "mpi_interop", launcher="mpirun")
