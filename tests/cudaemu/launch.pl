#!/usr/bin/perl
# cudaemu: CUDA source -> host C++. Rewrites each kernel launch
#   kernel<<<grid, block[, shared[, stream]]>>>(args);
# as
#   cudaemu_launch("kernel", cudaemu_cfg{grid, block, shared, stream}, kernel, args);
# keeping the line numbers of the original (#line, and as many newlines as
# the launch spanned). Usage: launch.pl FILE.cu > FILE.cc
use strict;
use warnings;

my $file = shift or die "usage: $0 FILE.cu\n";
open(my $in, '<', $file) or die "$0: $file: $!\n";
local $/;
my $src = <$in>;
close $in;

my $n = 0;
$src =~ s{\b(\w+(?:<[^<>;()]*>)?)<<<(.*?)>>>(\((?:[^()]++|(?-1))*+\));}{
	my ($k, $cfg, $args) = ($1, $2, $3);
	my $lines = () = "$k$cfg$args" =~ /\n/g;
	$args =~ s/^\(//;
	$args =~ s/\)$//;
	$n++;
	"cudaemu_launch(\"$k\", cudaemu_cfg{$cfg}, $k, $args);" . ("\n" x $lines);
}gse;
die "$0: $file: no kernel launch found\n" if $n == 0 && $src =~ /<<</;
print "#line 1 \"$file\"\n", $src;
