# SPDX-License-Identifier: MIT
#
# bench/plot.gp: one PNG chart of grouped bars, a panel per run, drawn
# from tables bench/plot.sh makes out of a benchmark CSV (bench/csv.sh).
# Each panel's table, PREFIX.N.dat (N = 1, 2, ...), has a header row
# ("server" and one quoted name per bar of a group) and a row per server:
# its name, then the values (NaN: none).  Groups are servers, bars within a
# group the columns (rounds, or p50 and p99).
#
#   gnuplot -c bench/plot.gp PREFIX OUT.png TITLE CAPTION YLABEL NCOLS LABELS PANELS RANGES
#     NCOLS    values per row (bars per group)
#     LABELS   1: print each value above its bar
#     PANELS   the panels' titles, space-separated, in table order
#     RANGES   per panel, "MIN MAX": the y range its values need (MIN 0
#              unless a value is negative), space-separated

prefix = ARG1
out = ARG2
title = ARG3
caption = ARG4
ylabel = ARG5
ncols = int(ARG6)
labels = int(ARG7)
panels = ARG8
ranges = ARG9
npanels = words(panels)

# Two panels a row; 300 px of height per row of panels; wide enough for
# the caption.
across = npanels > 1 ? 2 : 1
down = int((npanels + across - 1) / across)
width = 480 * across + 60
set terminal pngcairo size (width < 760 ? 760 : width), 300 * down + 70 font "DejaVu Sans,9" noenhanced
set output out

# Okabe-Ito colours: told apart also with colour blindness.
array colour[8] = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
do for [i = 1:8] { set linetype i linecolor rgb colour[i] }

set datafile missing "NaN"
set datafile columnheaders  # the first row of a table names its columns
set style data histograms
set style histogram clustered gap 1  # the gap between groups, as bar_x below takes it
set style fill solid 0.9 border rgb "#404040"
set boxwidth 0.9
set grid ytics linecolor rgb "#d0d0d0"
set border 3
set xtics nomirror scale 0
set ytics nomirror
set key inside top right horizontal reverse Left samplen 1.5
set ylabel ylabel
set format y "%.10g"
# A bar's label: three digits, or the whole number from 100 on.
label(v) = abs(v) >= 100 ? sprintf("%.0f", v) : sprintf("%.3g", v)
# The x of bar c (1 ... ncols) of the group on row r: a group is ncols bars
# and a gap one bar wide, squeezed into one unit of x.
bar_x(r, c) = r + (c - 1 - (ncols - 1) / 2.0) / (ncols + 1)

set multiplot layout down, across title title . (caption eq "" ? "" : "\n" . caption) font ",10"
do for [p = 1:npanels] {
  file = sprintf("%s.%d.dat", prefix, p)
  set title word(panels, p) font ",10"
  # Groups sit at x = 0, 1, ...; autoscaling would leave a group's width
  # empty on either side.
  stats file using (1) nooutput
  set xrange [-0.6 : STATS_records - 0.4]
  # From 0 (or the lowest value, if negative), with room above the highest
  # value for the key and the labels.
  ymin = real(word(ranges, 2 * p - 1))
  ymax = real(word(ranges, 2 * p))
  set yrange [ymin * 1.1 : (ymax > 0 ? ymax * 1.2 : 1)]
  if (ncols == 1) { unset key } else { set key }
  if (labels) {
    plot for [c = 2:ncols + 1] file using c:xtic(1) title columnheader linetype c - 1, \
         for [c = 2:ncols + 1] file using (bar_x($0, c - 1)):c:(label(column(c))) \
           with labels offset 0, 0.7 notitle
  } else {
    plot for [c = 2:ncols + 1] file using c:xtic(1) title columnheader linetype c - 1
  }
}
unset multiplot
