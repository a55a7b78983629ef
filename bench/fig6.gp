# SPDX-License-Identifier: GPL-3.0-or-later
# fig6.gp - Figure 6: simulated broadcast throughput per DGX-1V allocation class, blinkc trees
# against NCCL rings (DIR/fig6.dat). Usage: gnuplot -e "dir='figures'" fig6.gp
if (!exists("dir")) dir = 'figures'
dat = dir.'/fig6.dat'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set key top left
set grid ytics
set ylabel 'broadcast algbw, GB/s (500 MB, worst root)'
set xlabel "allocation class (its first GPU set; '*': no NVLink ring, NCCL falls back to PCIe/CPU)"
set xtics rotate by 90 right font ',8' nomirror
set yrange [0:*]
label(c) = strcol(3).(column(4) == 0 ? '*' : '')
draw = "set title 'Figure 6: broadcast on every DGX-1V allocation class, simulated';\
plot dat u 6:xticlabels(label(0)) t 'blinkc trees' lc rgb '#1f77b4', '' u 7 t 'NCCL rings' lc rgb '#ff7f0e'"
set terminal svg size 1600,550 dynamic font 'sans,12'
set output dir.'/fig6.svg'
eval draw
set terminal pngcairo size 1600,550 font 'sans,10'
set output dir.'/fig6.png'
eval draw
set output
