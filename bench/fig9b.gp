# SPDX-License-Identifier: GPL-3.0-or-later
# fig9b.gp - Figure 9b: allreduce throughput across DGX-1V servers as the NIC rate varies
# (DIR/fig9b.dat). Usage: gnuplot -e "dir='figures'" fig9b.gp
if (!exists("dir")) dir = 'figures'
dat = dir.'/fig9b.dat'
set key top left
set grid
set logscale x 2
set xtics (10, 25, 50, 100, 200, 400, 800)
set xlabel 'NIC rate, Gb/s (four NICs per server)'
set ylabel 'allreduce algbw, GB/s (500 MB)'
set yrange [0:*]
sel(s, v) = (column(1) == s ? v : NaN)
draw = "set title 'Figure 9b: multi-server allreduce (2 servers simulated; 4 servers: plan rates)';\
plot dat u 4:(sel(2,$6)) w lp lw 2 pt 7 lc rgb '#1f77b4' t '2 servers, blinkc',\
     '' u 4:(sel(2,($8 > $7 ? $8 : $7))) w lp lw 2 pt 5 lc rgb '#ff7f0e' t '2 servers, NCCL',\
     '' u 4:(sel(4,$6)) w lp lw 2 dt 2 pt 6 lc rgb '#1f77b4' t '4 servers, blinkc (fluid)',\
     '' u 4:(sel(4,$7)) w lp lw 2 dt 2 pt 4 lc rgb '#ff7f0e' t '4 servers, NCCL rings (fluid)'"
set terminal svg size 800,450 dynamic font 'sans,12'
set output dir.'/fig9b.svg'
eval draw
set terminal pngcairo size 800,450 font 'sans,10'
set output dir.'/fig9b.png'
eval draw
set output
