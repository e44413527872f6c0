//! Where a rank learns who it is: a [`Bootstrap`] — `nf run`'s PMI, PMIx (Open MPI's
//! `mpirun`), the PMI-2 wire protocol (`srun --mpi=pmi2`, MPICH's hydra), or a
//! singleton. The trait and the launchers' clients live in `nf-pmi`; [`from_env`]
//! picks one from the environment (order and rules in [`nf_pmi::bootstrap`]). A layer
//! with wire-up of its own implements [`Bootstrap`] and passes it to
//! [`crate::World::init_from`].

pub use nf_pmi::bootstrap::{from_env, Bootstrap, Singleton};
