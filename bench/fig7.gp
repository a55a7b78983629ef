# SPDX-License-Identifier: GPL-3.0-or-later
# fig7.gp - Figure 7: hybrid PCIe + NVLink broadcast against NVLink alone, mean per GPU count
# (DIR/fig7.dat). Usage: gnuplot -e "dir='figures'" fig7.gp
if (!exists("dir")) dir = 'figures'
dat = dir.'/fig7.dat'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set key top left
set grid ytics
set xlabel 'GPUs in the allocation (DGX-1V, every allocation, root rank 0)'
set ylabel 'mean broadcast algbw, GB/s (500 MB)'
set yrange [0:*]
draw = "set title 'Figure 7: hybrid PCIe + NVLink against NVLink alone, simulated';\
plot dat u 5:xticlabels(1) t 'NVLink trees alone' lc rgb '#1f77b4', '' u 6 t 'NVLink + PCIe trees (hybrid)' lc rgb '#2ca02c'"
set terminal svg size 800,450 dynamic font 'sans,12'
set output dir.'/fig7.svg'
eval draw
set terminal pngcairo size 800,450 font 'sans,10'
set output dir.'/fig7.png'
eval draw
set output
