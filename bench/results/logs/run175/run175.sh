#!/usr/bin/env bash
# run175: Nsight Compute on 128 x 9216 x 14336 (ours 0.79 of cuBLAS): the default (cols-128x72-tma-store)
# against cuBLAS, and the 4-CTA clustered 80-column tile (A multicast), with DRAM bytes and L2 traffic.
# One H200.
set -u
export NCU_METRICS="dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum"
OUT=$OUT bash bench/probes/ncu_probe.sh 128x9216x14336
mv $OUT/ncu-128x9216x14336.txt $OUT/ncu-default.txt
OUT=$OUT bash bench/probes/ncu_probe.sh 128x9216x14336 cols-128x80-tma-store-n4
mv $OUT/ncu-128x9216x14336.txt $OUT/ncu-n4.txt
grep -E "^  [a-zA-Z_].*\(|Duration|dram__bytes_read.sum |lts__t_bytes.sum |lts__t_sector_hit_rate|dram__throughput|srcunit_tex_op_read|DRAM Throughput|L2 Hit" $OUT/ncu-default.txt $OUT/ncu-n4.txt | head -80
