#!/usr/bin/env bash
# Run 438 (session 60, one GPU): branch attn-review (.gpu): every ring-attention test, the new
# `many_units_per_cta` (5 and 3 CTAs: Q stages and turns across ~38 units a CTA) and
# `bad_arguments_are_named` (ctas 0) among them.
# carry [".gpu"], command "bash bench/results/logs/run438/run.sh".
set -u
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader
TEST_TIMEOUT=200 bash bench/device-run.sh tests gpu_ring_attention 2>&1 | grep -E "^ok |^FAIL|^test |panicked|passed|failed|rel_fro" | cut -c1-300 | tail -20
