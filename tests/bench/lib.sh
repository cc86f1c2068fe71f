# lib.sh - helpers shared by the bench scripts (sourced, not run).
#
# median_pair "D R"...: of rounds measured back to back (D = DePFS, R = its
# reference, same load), the pair whose ratio D/R is the median (the lower
# middle for an even count), printed as "D R". On this shared machine a
# side's best of N rounds follows the luckiest moment of that side alone, so
# the side whose numbers swing more wins the comparison; a back-to-back pair
# sees one load and its ratio swings much less.
median_pair() {
    printf '%s\n' "$@" | awk '{ printf "%.6f %s %s\n", ($2 > 0 ? $1 / $2 : 0), $1, $2 }' |
        sort -n | awk '{ v[NR] = $2 " " $3 } END { print v[int((NR + 1) / 2)] }'
}
