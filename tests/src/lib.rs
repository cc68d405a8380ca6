//! Helpers of the integration tests: the GPU skip/require rule.
//!
//! A GPU test calls [`gpu_or_skip`] first: without a usable GPU it prints why and
//! returns `None` (the test passes as skipped), unless `MKERNEL_REQUIRE_GPU=1`, in
//! which case it fails, so a device run cannot pass empty.

use std::io::Write;

/// Returns the number of GPUs, or `None` (after printing the reason) when the test
/// must be skipped. Panics instead of skipping when `MKERNEL_REQUIRE_GPU=1`, or when
/// fewer than `min_gpus` are present under that variable.
pub fn gpu_or_skip(test: &str, min_gpus: usize) -> Option<usize> {
    let required = std::env::var("MKERNEL_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let reason = match mkernel::device_count() {
        Ok(n) if n >= min_gpus => return Some(n),
        Ok(n) => format!("{n} GPU(s) present, {min_gpus} needed"),
        Err(e) => e.to_string(),
    };
    assert!(!required, "{test}: MKERNEL_REQUIRE_GPU=1 but {reason}");
    // Straight to the stderr handle: the test harness captures `eprintln!`, and a skip
    // must be visible without --nocapture.
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {reason}");
    None
}

/// `world` ranks driven by this process, rank r on GPU r % (GPUs present), each with a
/// stream of its own: the fused kernels' tests with several ranks sharing a GPU where there
/// are fewer GPUs than ranks.
pub struct Ranks {
    pub comms: Vec<mkernel::Communicator>,
    pub streams: Vec<std::sync::Arc<cudarc::driver::CudaStream>>,
}

/// [`Ranks`] with a workspace for `max_elems` elements and waits bounded by `timeout`;
/// `None` when `test` is skipped ([`gpu_or_skip`]).
pub fn ranks(test: &str, world: usize, max_elems: u64, timeout: std::time::Duration) -> Option<Ranks> {
    let gpus = gpu_or_skip(test, 1)?;
    let devices: Vec<usize> = (0..world).map(|r| r % gpus).collect();
    let config = mkernel::CommConfig { max_output_elems: max_elems, timeout, ..Default::default() };
    let comms = mkernel::Communicator::local_group(&devices, config).unwrap();
    let streams = comms.iter().map(|c| c.context().new_stream().unwrap()).collect();
    Some(Ranks { comms, streams })
}

impl Ranks {
    /// Waits for every rank's work; fails with every rank's error, naming `what`.
    pub fn sync_all(&self, what: &str) {
        let errors: Vec<String> = self
            .comms
            .iter()
            .enumerate()
            .filter_map(|(r, c)| c.synchronize(&self.streams[r]).err().map(|e| format!("rank {r}: {e}")))
            .collect();
        assert!(errors.is_empty(), "{what}:\n{}", errors.join("\n"));
    }
}

/// IEEE special values through a two-rank reduction: rows of A (and two columns of B)
/// set so that each rank's partial on those rows is exactly one product (no rounding in
/// the GEMM), and the sum of the two partials overflows to ±Inf, cancels to zero, is
/// NaN, or is subnormal. The reduction of the bf16 partials must give what IEEE bf16
/// addition gives (round to nearest even, no flush to zero): NaN stays NaN, an
/// overflow is Inf (not the largest finite), a subnormal is not flushed.
pub mod special {
    use half::bf16;

    /// 2^e as f32, exact also where it is subnormal (`f32::powi` of a negative power
    /// takes the reciprocal of 2^-e, which overflows from 2^-128 down, giving zero).
    fn pow2(e: i32) -> f32 {
        2f64.powi(e) as f32
    }

    /// One special row: what its two partials are, and so what their sum is.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Kind {
        /// 2^127 + 2^127: +Inf.
        Overflow,
        /// -2^127 - 2^127: -Inf.
        NegativeOverflow,
        /// 2^127 - 2^127: zero.
        Cancel,
        /// 1 + NaN (rank 1's A holds a NaN): NaN.
        Nan,
        /// +Inf - Inf (an Inf in each rank's A): NaN.
        InfMinusInf,
        /// +Inf - 2^127: +Inf.
        InfPlusFinite,
        /// 1.5 * 2^126 + 2^126: 1.25 * 2^127, finite (below bf16's largest, ~1.33 * 2^127).
        LargeFinite,
        /// 2^-65 * 2^-65 on each rank (normal inputs, subnormal product): 2^-129.
        SubnormalProduct,
        /// 2^-130 + 2^-131 (subnormal inputs): 3 * 2^-131.
        SubnormalInput,
    }

    pub const KINDS: [Kind; 9] = [
        Kind::Overflow,
        Kind::NegativeOverflow,
        Kind::Cancel,
        Kind::Nan,
        Kind::InfMinusInf,
        Kind::InfPlusFinite,
        Kind::LargeFinite,
        Kind::SubnormalProduct,
        Kind::SubnormalInput,
    ];

    /// The special rows of an M-row output (M >= 16): the first and last rows, the rows
    /// on each side of M / 2 (where a reduce-scatter's two ranks' rows meet), and rows
    /// inside each half. Distinct, one per [`KINDS`] entry.
    pub fn rows(m: usize) -> Vec<(usize, Kind)> {
        let at = [0, m / 2 - 1, m / 2, m - 1, 1, m / 4, m / 2 + 1, 3 * m / 4, m - 2];
        at.into_iter().zip(KINDS).collect()
    }

    /// (A[row, col], rank 0's and rank 1's values) of a kind; B[:, 0] = 1, B[:, 1] = 2^-65.
    fn entries(kind: Kind) -> (usize, [f32; 2]) {
        let p127 = pow2(127);
        let p126 = pow2(126);
        match kind {
            Kind::Overflow => (0, [p127, p127]),
            Kind::NegativeOverflow => (0, [-p127, -p127]),
            Kind::Cancel => (0, [p127, -p127]),
            Kind::Nan => (0, [1.0, f32::NAN]),
            Kind::InfMinusInf => (0, [f32::INFINITY, f32::NEG_INFINITY]),
            Kind::InfPlusFinite => (0, [f32::INFINITY, -p127]),
            Kind::LargeFinite => (0, [1.5 * p126, p126]),
            Kind::SubnormalProduct => (1, [pow2(-65), pow2(-65)]),
            Kind::SubnormalInput => (0, [pow2(-130), pow2(-131)]),
        }
    }

    /// Writes rank `rank`'s (0 or 1) special rows into its A [M, K] and the two special
    /// columns into its B [N, K] (other rows of A keep their values; their products
    /// with the two columns stay ordinary numbers). M >= 16, K >= 2; a rank past 1
    /// writes zeros into the special rows (its partial there adds nothing).
    pub fn write(a: &mut [bf16], b: &mut [bf16], rank: usize, m: usize, n: usize, k: usize) -> Result<(), String> {
        if m < 16 || k < 2 || a.len() < m * k || b.len() < n * k {
            return Err(format!("special rows need M >= 16, K >= 2, A of M x K and B of N x K, got M={m} N={n} K={k}, A {} B {}", a.len(), b.len()));
        }
        for j in 0..n {
            b[j * k] = bf16::ONE;
            b[j * k + 1] = bf16::from_f32(pow2(-65));
        }
        for (row, kind) in rows(m) {
            let (col, values) = entries(kind);
            a[row * k..(row + 1) * k].fill(bf16::ZERO);
            if let Some(&v) = values.get(rank) {
                a[row * k + col] = bf16::from_f32(v);
            }
        }
        Ok(())
    }

    /// Fresh random inputs for rank `rank` of shape `s` (from `seed`), its special rows
    /// and columns written ([`write`]), copied into `a` [M, K] and `b` [N, K] on `stream`;
    /// returns the rank's partial A B^T by cuBLAS in fp32 ([M, N]), for [`check`].
    pub fn fill(
        stream: &std::sync::Arc<cudarc::driver::CudaStream>,
        blas: &mut mkernel::baseline::Cublas,
        rank: usize,
        s: mkernel::GemmShape,
        seed: u64,
        a: &mut cudarc::driver::CudaSlice<bf16>,
        b: &mut cudarc::driver::CudaSlice<bf16>,
    ) -> Result<Vec<f32>, String> {
        let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
        let mut ha = mkernel::check::random_bf16(m * k, seed.wrapping_add(2 * rank as u64));
        let mut hb = mkernel::check::random_bf16(n * k, seed.wrapping_add(2 * rank as u64 + 1));
        write(&mut ha, &mut hb, rank, m, n, k)?;
        stream.memcpy_htod(&ha, a).map_err(|e| format!("copy of A: {e}"))?;
        stream.memcpy_htod(&hb, b).map_err(|e| format!("copy of B: {e}"))?;
        let mut p = stream.alloc_zeros::<f32>(m * n).map_err(|e| format!("partial: {e}"))?;
        blas.gemm_f32_out(a, b, &mut p, s).map_err(|e| format!("cuBLAS partial: {e}"))?;
        stream.clone_dtoh(&p).map_err(|e| format!("partial to host: {e}"))
    }

    /// IEEE bf16 sum of two fp32 partials rounded to bf16 each: each partial's rounding to
    /// bf16 (RNE), their fp32 sum (exact unless it overflows: two bf16 values), rounded to
    /// bf16. What a two-rank reduction of bf16 partials must give.
    pub fn expected(p0: f32, p1: f32) -> bf16 {
        bf16::from_f32(bf16::from_f32(p0).to_f32() + bf16::from_f32(p1).to_f32())
    }

    /// Checks rows `first_row..` of a two-rank sum, `got` ([rows, N] bf16), against each
    /// rank's fp32 partial `partials[r]` ([M, N], e.g. cuBLAS's): special rows element by
    /// element against [`expected`] (a NaN for a NaN, and not the poison's bits; ±0 for a
    /// zero; else the same bits), every other row within `crate`'s all-reduce tolerance
    /// ([`mkernel::check::compare`] with scale sum |partial| + |sum|). Returns a line on
    /// what the partials were (whether the subnormal products reached them: a GEMM that
    /// flushes them makes those rows zero, which the sum must then be too).
    pub fn check(got: &[bf16], first_row: usize, n: usize, k: usize, partials: &[Vec<f32>; 2]) -> Result<String, String> {
        let m = partials[0].len() / n.max(1);
        let rows_got = got.len() / n.max(1);
        if partials[1].len() != m * n || first_row + rows_got > m || got.len() != rows_got * n {
            return Err(format!("check: rows {first_row}..+{rows_got} of N={n} do not fit partials of {} and {}", partials[0].len(), partials[1].len()));
        }
        let special = rows(m);
        let mut kept_subnormal = true;
        for &(row, kind) in &special {
            if !(first_row..first_row + rows_got).contains(&row) {
                continue;
            }
            for j in 0..n {
                let (p0, p1) = (partials[0][row * n + j], partials[1][row * n + j]);
                if matches!(kind, Kind::SubnormalProduct | Kind::SubnormalInput) && (p0 == 0.0 || p1 == 0.0) {
                    kept_subnormal = false;
                }
                let want = expected(p0, p1);
                let g = got[(row - first_row) * n + j];
                let ok = if want.is_nan() {
                    g.is_nan() && g.to_bits() != mkernel::check::POISON.to_bits()
                } else if want == bf16::ZERO {
                    g == bf16::ZERO // (either sign)
                } else {
                    g.to_bits() == want.to_bits()
                };
                if !ok {
                    return Err(format!(
                        "row {row} col {j} ({kind:?}: partials {p0:e} and {p1:e}): got {g:e} (bits {:#06x}), IEEE bf16 addition gives {want:e} (bits {:#06x})",
                        g.to_bits(),
                        want.to_bits()
                    ));
                }
            }
        }
        let plain: Vec<usize> = (first_row..first_row + rows_got).filter(|r| !special.iter().any(|&(s, _)| s == *r)).collect();
        let mut got_plain = Vec::with_capacity(plain.len() * n);
        let mut reference = Vec::with_capacity(plain.len() * n);
        let mut scale = Vec::with_capacity(plain.len() * n);
        for &r in &plain {
            got_plain.extend_from_slice(&got[(r - first_row) * n..(r - first_row + 1) * n]);
            for j in 0..n {
                let (p0, p1) = (partials[0][r * n + j], partials[1][r * n + j]);
                reference.push(p0 + p1);
                scale.push(p0.abs() + p1.abs() + (p0 + p1).abs());
            }
        }
        let cmp = mkernel::check::compare(&got_plain, &reference, Some(&scale), n, k);
        if !cmp.passed() {
            return Err(format!("the other rows (numbered among them): {cmp}"));
        }
        Ok(format!("subnormal partials {}", if kept_subnormal { "kept by the GEMM" } else { "flushed by the GEMM (zero sums checked)" }))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn sums_of_the_special_partials_are_ieee() {
            let sum = |kind| {
                let (_, [x, y]) = entries(kind);
                let (b0, b1) = if kind == Kind::SubnormalProduct { (x * x, y * y) } else { (x, y) };
                expected(b0, b1)
            };
            assert_eq!(sum(Kind::Overflow), bf16::INFINITY);
            assert_eq!(sum(Kind::NegativeOverflow), bf16::NEG_INFINITY);
            assert_eq!(sum(Kind::Cancel), bf16::ZERO);
            assert!(sum(Kind::Nan).is_nan() && sum(Kind::InfMinusInf).is_nan());
            assert_eq!(sum(Kind::InfPlusFinite), bf16::INFINITY);
            assert_eq!(sum(Kind::LargeFinite).to_f32(), 1.25 * pow2(127));
            assert_eq!(sum(Kind::SubnormalProduct).to_f32(), pow2(-129));
            assert_eq!(sum(Kind::SubnormalInput).to_f32(), 3.0 * pow2(-131));
            // every value an input takes is exact in bf16
            for kind in KINDS {
                for v in entries(kind).1 {
                    assert!(v.is_nan() || bf16::from_f32(v).to_f32() == v, "{kind:?}: {v:e}");
                }
            }
        }

        #[test]
        fn special_rows_are_distinct_and_each_side_of_the_middle() {
            for m in [16, 17, 130, 1040, 2049] {
                let r = rows(m);
                let mut at: Vec<usize> = r.iter().map(|x| x.0).collect();
                at.sort_unstable();
                at.dedup();
                assert_eq!(at.len(), KINDS.len(), "M={m}: {r:?}");
                assert!(at.contains(&(m / 2 - 1)) && at.contains(&(m / 2)) && *at.last().unwrap() < m, "M={m}");
            }
        }

        #[test]
        fn check_flags_a_masked_nan_a_saturated_overflow_and_a_flushed_subnormal() {
            let (m, n, k) = (16, 4, 2);
            let mut a = [vec![bf16::from_f32(0.5); m * k], vec![bf16::from_f32(0.25); m * k]];
            let mut b = [vec![bf16::ZERO; n * k], vec![bf16::ZERO; n * k]];
            for r in 0..2 {
                write(&mut a[r], &mut b[r], r, m, n, k).unwrap();
            }
            // exact partials (one product per special row), host-side
            let partial = |r: usize| -> Vec<f32> {
                (0..m * n).map(|i| (0..k).map(|c| a[r][(i / n) * k + c].to_f32() * b[r][(i % n) * k + c].to_f32()).sum()).collect()
            };
            let p = [partial(0), partial(1)];
            let good: Vec<bf16> = (0..m * n).map(|i| expected(p[0][i], p[1][i])).collect();
            assert!(check(&good, 0, n, k, &p).unwrap().contains("kept"));
            // rank 1's rows alone (a reduce-scatter's)
            assert!(check(&good[m / 2 * n..], m / 2, n, k, &p).is_ok());
            let row_of = |kind| rows(m).into_iter().find(|x| x.1 == kind).unwrap().0;
            for (kind, bad) in [
                (Kind::Nan, bf16::ZERO),
                (Kind::Nan, mkernel::check::POISON),
                (Kind::Overflow, bf16::MAX),
                (Kind::SubnormalProduct, bf16::ZERO),
                (Kind::Cancel, bf16::MIN_POSITIVE_SUBNORMAL),
            ] {
                let mut g = good.clone();
                g[row_of(kind) * n + 3] = bad;
                let e = check(&g, 0, n, k, &p).unwrap_err();
                assert!(e.contains(&format!("{kind:?}")) && e.contains("col 3"), "{e}");
            }
            // an ordinary row off by more than the tolerance
            let mut g = good.clone();
            g[2 * n] = bf16::from_f32(g[2 * n].to_f32() + 0.5);
            assert!(check(&g, 0, n, k, &p).unwrap_err().contains("other rows"));
        }
    }
}

/// The MoE kernels' routings, drawn on the host (the dispatch's and the combine's tests);
/// their model is `mkernel::check::MoeRouting`, which the benches' `--check` shares.
pub mod moe {
    use mkernel::MoeShape;
    use rand::seq::IndexedRandom;
    use rand::{Rng, SeedableRng};

    /// How a case routes its tokens.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Routing {
        /// Each token's top-k: distinct experts drawn uniformly, ~1 in 8 entries -1.
        Uniform,
        /// Every token to rank 0's experts only (rank 0 receives everything, the others nothing).
        AllToRankZero,
    }

    /// Every rank's expert ids [tokens, topk] for `tokens[r]` tokens on rank r.
    pub fn expert_ids(world: usize, s: MoeShape, tokens: &[u32], routing: Routing, seed: u64) -> Vec<Vec<i32>> {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let (topk, e) = (s.topk as usize, s.experts as usize);
        let el = e / world;
        let mut ids = Vec::new();
        for &t in tokens {
            let mut v = Vec::with_capacity(t as usize * topk);
            for _ in 0..t {
                let pool: Vec<i32> = match routing {
                    Routing::Uniform => (0..e as i32).collect(),
                    Routing::AllToRankZero => (0..el as i32).collect(),
                };
                let mut pick: Vec<i32> = pool.choose_multiple(&mut rng, topk.min(pool.len())).copied().collect();
                pick.resize(topk, -1);
                for p in pick.iter_mut() {
                    if routing == Routing::Uniform && rng.random_ratio(1, 8) {
                        *p = -1;
                    }
                }
                v.extend(pick);
            }
            ids.push(v);
        }
        ids
    }
}
