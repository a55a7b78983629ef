# SPDX-License-Identifier: GPL-3.0-or-later
# fig5.gp - Figure 5: theoretical speedup of packed trees over rings per GPU count (DIR/fig5.dat).
# Usage: gnuplot -e "dir='figures'" fig5.gp  -> DIR/fig5.svg and DIR/fig5.png
if (!exists("dir")) dir = 'figures'
dat = dir.'/fig5.dat'
set datafile missing '-'
set key top left
set grid ytics
set xlabel 'GPUs in the allocation'
set ylabel 'trees algbw / rings algbw'
set xrange [2.5:8.5]
set yrange [0.9:2.3]
sel(box, col) = (strcol(1) eq box ? column(col) : NaN)
draw = "set multiplot layout 1,2 title 'Figure 5: packed trees over NCCL rings (planner rates; classes with an NVLink ring)';\
set title 'Broadcast (worst root)';\
plot dat u 2:(sel('dgx1v',7)) w lp lw 2 pt 7 t 'DGX-1V max', '' u 2:(sel('dgx1v',8)) w lp lw 2 pt 6 t 'DGX-1V geomean',\
     '' u 2:(sel('dgx1p',7)) w lp lw 2 dt 2 pt 5 t 'DGX-1P max', '' u 2:(sel('dgx1p',8)) w lp lw 2 dt 2 pt 4 t 'DGX-1P geomean';\
set title 'AllReduce';\
plot dat u 2:(sel('dgx1v',9)) w lp lw 2 pt 7 t 'DGX-1V max', '' u 2:(sel('dgx1v',10)) w lp lw 2 pt 6 t 'DGX-1V geomean',\
     '' u 2:(sel('dgx1p',9)) w lp lw 2 dt 2 pt 5 t 'DGX-1P max', '' u 2:(sel('dgx1p',10)) w lp lw 2 dt 2 pt 4 t 'DGX-1P geomean';\
unset multiplot"
set terminal svg size 1000,450 dynamic font 'sans,12'
set output dir.'/fig5.svg'
eval draw
set terminal pngcairo size 1000,450 font 'sans,10'
set output dir.'/fig5.png'
eval draw
set output
