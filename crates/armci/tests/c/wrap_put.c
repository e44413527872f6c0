/* A profiling library as the PARMCI interface is meant for: it defines ARMCI_Put,
 * counts the calls and forwards them to PARMCI_Put. Linked before libarmci (tests/
 * abi.rs), its ARMCI_Put is the one programs and libarmci's users reach. */
#include <armci.h>

static int puts_seen;

int ARMCI_Put(void *src, void *dst, int bytes, int proc) {
    puts_seen++;
    return PARMCI_Put(src, dst, bytes, proc);
}

/* How many ARMCI_Put calls went through the wrapper. */
int wrap_put_calls(void) {
    return puts_seen;
}
