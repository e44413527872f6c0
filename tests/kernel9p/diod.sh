#!/usr/bin/env bash
# The harness run against the reference server, Debian's diod (the proof that the
# harness works, and the baseline to compare a new server with). Extra arguments go to
# run.sh (e.g. --msize 8192, --timeout 300, --keep).
#   --aname '{dir}'   diod attaches by export path
#   --allsquash --squashuser root
#                     the kernel attaches as "nobody" (access=client, the 9P2000.L
#                     default); diod maps every attach to root so the guest can write
#                     into {dir}, which the harness created
#   --flush-wait 60   diod answers Tflush of a request in progress only after the
#                     request finishes (diod builds with SRV_FLAGS_FLUSHSIG off), here
#                     when the kernel breaks the lease after lease-break-time (45 s)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/run.sh" --aname '{dir}' --flush-wait 60 \
    --server 'diod --foreground --no-auth --allsquash --squashuser root --config-file /dev/null --logdest stderr --export {dir} --listen {sock}' \
    "$@"
