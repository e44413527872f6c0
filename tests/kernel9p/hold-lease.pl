#!/usr/bin/perl
# hold-lease.pl FILE SECONDS
# Takes a write lease (fcntl F_SETLEASE, F_WRLCK) on FILE, prints "leased", and holds it
# for at most SECONDS. While the lease is held, any other open() of FILE blocks in the
# kernel until the lease holder gives the lease up, which this script never does: the
# kernel breaks the lease itself after /proc/sys/fs/lease-break-time seconds. A
# passthrough 9P server that opens FILE for a client therefore has a request that really
# blocks inside a system call, which is what the harness's flush check needs.
use strict;
use warnings;
use Fcntl qw(F_WRLCK);

use constant F_SETLEASE => 1024;    # F_LINUX_SPECIFIC_BASE + 0

my ($file, $secs) = @ARGV;
die "usage: hold-lease.pl FILE SECONDS\n" unless defined $secs && $secs =~ /^\d+$/;
$SIG{IO} = 'IGNORE';    # the lease-break notice; ignoring it keeps the lease held
open(my $fh, '<', $file) or die "hold-lease: open $file: $!\n";
fcntl($fh, F_SETLEASE, F_WRLCK)
    or die "hold-lease: F_SETLEASE on $file: $! (no lease support on this filesystem, or not the file's owner)\n";
$| = 1;
print "leased\n";
sleep $secs;
