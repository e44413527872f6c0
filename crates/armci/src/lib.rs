//! libarmci: ARMCI for C programs (and Debian's prebuilt Global Arrays) over ninefold.
