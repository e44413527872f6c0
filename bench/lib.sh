# Pieces shared by the comparison scripts in bench/ (source it; bash only).
#
#   die MESSAGE              print "<script>: MESSAGE" to stderr and exit 1
#   usage                    print the script's header comment (up to `set -euo`)
#   need TOOL HINT           die with HINT unless TOOL is on PATH
#   check_int NAME VALUE     die unless VALUE is a positive integer
#   check_sizes VALUE        die unless VALUE is a list like 8,64,4096

die() {
    echo "$(basename "$0" .sh): $*" >&2
    exit 1
}

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
}

need() {
    command -v "$1" >/dev/null 2>&1 || die "$1 not found: $2"
}

check_int() {
    [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, not '$2'"
}

check_sizes() {
    [[ $1 =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "size lists look like 8,64,4096, not '$1'"
}
