//! Numerical checks used by the tests and by `mkernel bench --check`: fresh random
//! inputs, a NaN poison for outputs, and a comparison against a higher-precision
//! reference with a tolerance derived from bf16 rounding; and the host's model of an MoE
//! dispatch's routing ([`MoeRouting`]), which routing, indices and layouts must match exactly.
//!
//! Tolerance: a bf16 result is the exact value rounded once (relative error at most
//! 2^-8 of the value, half an ulp). A fused all-reduce also rounds every rank's partial
//! to bf16 before summing, so its error is bounded by 2^-8 * (sum_q |p_q| + |sum|). The
//! check allows twice that: |got - ref| <= 2^-7 * scale, with `scale` = |ref| for a
//! single GEMM or sum_q |p_q| + |ref| for the all-reduce, plus an absolute floor
//! ([`abs_floor`]) for elements near zero: the kernel and the fp32 reference accumulate
//! K products in different orders, which differ by about sqrt(K) * 2^-24 of the running
//! sums' magnitude (the probabilistic rounding-error bound, Higham, "Accuracy and
//! Stability of Numerical Algorithms", 2nd ed., 3.1; the worst case is K * 2^-24); the
//! floor allows 6x that, or K / 16 x 2^-24 where that is more (K > 9216), times rms(ref),
//! and at least 1e-6 * rms(ref) for exact cancellations. NaN (the poison) never passes.
//!
//! Why 6: the check compares two such accumulations (the kernel's and the reference's,
//! both on tensor cores), whose difference spreads sqrt(2) times as wide as one, and it
//! must hold for the largest of up to ~10^5 elements near zero (where the floor is all of
//! the tolerance), ~4.2 standard deviations out. Why K / 16: tensor cores do not round
//! their fp32 accumulation to nearest but truncate (Fasi, Higham, Mikaitis, Pranesh,
//! "Numerical behavior of NVIDIA tensor cores", PeerJ Comput. Sci. 7:e330, 2021, on
//! V100, T4 and A100), so the errors of a long accumulation do not cancel as a random
//! walk's: up to one unit of 2^-23 of the running sum per k16 step. On the H200 the
//! largest error of an unsplit GEMM against the reference grew linearly in K, ~0.03 K
//! 2^-24 rms on ~10^6 elements (2.9e-3 at 128 x 9216 x 28672, 8.2e-3 at 64 x 8192 x
//! 57344; runs 177 and 179), past the sqrt(K) floor; the K / 16 term is twice that, an
//! empirical bound from those two K (one 2^-23 unit of a typical running sum per k16 step
//! would be ~K / 12). A wrong k16 step or a lost K block is off by ~sqrt(16) x |a| |b| or
//! more, 60-1000x the floor at the tests' K (helper-46's review). `bench gemm --check` also
//! reports cuBLAS's bf16 output under this criterion: that shows the floor does not flag
//! cuBLAS's own output (against cuBLAS's fp32 reference), not that it is tight.

use half::bf16;
use rand::{Rng, SeedableRng};

/// Relative tolerance of every comparison against a reference: 2^-7 of the scale (see
/// the module documentation).
pub const REL_TOL: f64 = 1.0 / 128.0;

/// Absolute tolerance floor for a reference of root-mean-square `rms` whose elements are
/// dot products of length `k` (0: an exact reference): max(1e-6, 6 sqrt(k) 2^-24, k / 16
/// 2^-24) * rms (see the module documentation).
pub fn abs_floor(rms: f64, k: usize) -> f32 {
    let unit = f32::EPSILON as f64 / 2.0;
    let random_walk = 6.0 * (k as f64).sqrt() * unit;
    let truncation = k as f64 / 16.0 * unit;
    (random_walk.max(truncation).max(1e-6) * rms) as f32
}

/// bf16 quiet NaN written over outputs before a run, so unwritten elements fail.
pub const POISON: bf16 = bf16::from_bits(0x7FC1);

/// `len` bf16 values uniform in [-1, 1] from `seed` (drawn in fp32 from [-1, 1), then
/// rounded to bf16, which can round up to 1.0).
pub fn random_bf16(len: usize, seed: u64) -> Vec<bf16> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    (0..len).map(|_| bf16::from_f32(rng.random::<f32>() * 2.0 - 1.0)).collect()
}

/// A seed that differs between runs (printed by callers so a failure can be replayed).
pub fn fresh_seed() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    (t as u64) ^ ((std::process::id() as u64) << 32)
}

/// Outcome of [`compare`].
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// ||got - ref||_F / ||ref||_F.
    pub rel_fro_err: f64,
    /// Largest |got - ref|.
    pub max_abs_err: f64,
    /// Elements outside tolerance (NaN included).
    pub bad: usize,
    /// First element outside tolerance: (row, col, got, ref, tolerance).
    pub first_bad: Option<(usize, usize, f32, f32, f32)>,
}

impl Comparison {
    /// True when every element is within tolerance and the relative error is below 1e-2.
    pub fn passed(&self) -> bool {
        self.bad == 0 && self.rel_fro_err < 1e-2
    }
}

impl std::fmt::Display for Comparison {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rel_fro_err {:.2e}, max_abs_err {:.3e}, {} bad", self.rel_fro_err, self.max_abs_err, self.bad)?;
        if let Some((r, c, g, w, t)) = self.first_bad {
            write!(f, "; first bad at [{r}, {c}]: got {g}, reference {w}, tolerance {t:.3e}")?;
        }
        Ok(())
    }
}

/// Compares `got` ([rows, cols] row-major bf16) against `reference` (fp32), whose
/// elements are dot products of length `k` (for [`abs_floor`]; 0 for an exact
/// reference). `scale` gives each element's error scale (see the module doc); `None`, or
/// an element past its end, uses |reference|. Lengths that differ fail: every element
/// one side lacks counts as bad (the first of them is `first_bad` when nothing earlier
/// was).
pub fn compare(got: &[bf16], reference: &[f32], scale: Option<&[f32]>, cols: usize, k: usize) -> Comparison {
    let n = got.len().min(reference.len());
    let missing = got.len().max(reference.len()) - n;
    let rms = (reference[..n].iter().map(|&x| (x as f64) * (x as f64)).sum::<f64>() / n.max(1) as f64).sqrt();
    let floor = abs_floor(rms, k);
    let threads = std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1).min(32);
    let chunk = n.div_ceil(threads).max(1);
    let parts: Vec<(f64, f64, f64, usize, Option<(usize, f32, f32, f32)>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|start| {
                let end = (start + chunk).min(n);
                s.spawn(move || {
                    let (mut err2, mut ref2, mut max_abs, mut bad, mut first) = (0f64, 0f64, 0f64, 0usize, None);
                    for i in start..end {
                        let g = got[i].to_f32();
                        let w = reference[i];
                        let sc = scale.and_then(|s| s.get(i).copied()).unwrap_or(w.abs());
                        let tol = sc * REL_TOL as f32 + floor;
                        let d = (g - w).abs();
                        err2 += (d as f64) * (d as f64);
                        ref2 += (w as f64) * (w as f64);
                        if d.is_nan() || d > tol {
                            bad += 1;
                            if first.is_none() {
                                first = Some((i, g, w, tol));
                            }
                        }
                        if d as f64 > max_abs {
                            max_abs = d as f64;
                        }
                    }
                    (err2, ref2, max_abs, bad, first)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or((f64::NAN, 0.0, f64::NAN, 1, None))).collect()
    });
    let (mut err2, mut ref2, mut max_abs, mut bad, mut first) = (0f64, 0f64, 0f64, 0usize, None);
    for (e, r, m, b, f) in parts {
        err2 += e;
        ref2 += r;
        max_abs = max_abs.max(m);
        bad += b;
        if first.is_none() {
            first = f;
        }
    }
    if missing > 0 {
        bad += missing;
        if first.is_none() {
            let g = got.get(n).map_or(f32::NAN, |x| x.to_f32());
            first = Some((n, g, reference.get(n).copied().unwrap_or(f32::NAN), 0.0));
        }
    }
    let rel = if ref2 > 0.0 { (err2 / ref2).sqrt() } else { err2.sqrt() };
    Comparison {
        rel_fro_err: if rel.is_nan() { f64::INFINITY } else { rel },
        max_abs_err: max_abs,
        bad,
        first_bad: first.map(|(i, g, w, t)| (i / cols.max(1), i % cols.max(1), g, w, t)),
    }
}

/// fp64 reference of C = A * B^T for the listed rows (all columns): a cheap check of
/// the GPU reference itself. A is [M, K], B is [N, K] (row-major). Returns [rows.len(),
/// n], or an error naming the argument when a row is outside A or B is shorter than
/// N x K.
pub fn reference_rows_f64(a: &[bf16], b: &[bf16], rows: &[usize], n: usize, k: usize) -> Result<Vec<f64>, String> {
    let m = if k == 0 { 0 } else { a.len() / k };
    if let Some(&r) = rows.iter().find(|&&r| r >= m) {
        return Err(format!("rows: row {r} is outside A ({m} rows of K={k})"));
    }
    if n.checked_mul(k).is_none_or(|nk| b.len() < nk) {
        return Err(format!("b: needs N x K = {n} x {k} elements, has {}", b.len()));
    }
    let mut out = vec![0f64; rows.len() * n];
    for (ri, &r) in rows.iter().enumerate() {
        let arow = &a[r * k..(r + 1) * k];
        for j in 0..n {
            let brow = &b[j * k..(j + 1) * k];
            out[ri * n + j] = arow.iter().zip(brow).map(|(x, y)| x.to_f64() * y.to_f64()).sum();
        }
    }
    Ok(out)
}

/// fp64 reference of one query row of attention (see [`attention_reference`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionRow {
    /// softmax(q K^T x scale) V, \[D\].
    pub out: Vec<f64>,
    /// The error scale of each element: |out| + sum_j |p_j v_j| / l (P enters P V rounded to
    /// bf16, relative error <= 2^-8 per element, and the output is rounded once more: the
    /// kernel is within 2^-8 of this; [`compare`] allows 2^-7), \[D\].
    pub scale: Vec<f64>,
    /// ln of the softmax sum of the scaled scores: max + ln(sum exp(s - max)).
    pub lse: f64,
}

/// fp64 reference of attention for the query rows `rows` ((sequence b, head h, position i
/// within rank `rank`'s shard)): `q` is rank `rank`'s queries \[B, S, H, D\], `k[src]` and
/// `v[src]` source src's keys and values \[B, S, Hkv, D\] (rank src's positions, `s.layout`:
/// [`AttentionShape::position`]), head h reading key/value head h / (H / Hkv); causal masks
/// keys after the query's position. The rows are computed on the machine's cores in parallel.
///
/// [`AttentionShape::position`]: mkernel_kernels::ring_attention::AttentionShape::position
///
/// Errors name the argument: a buffer shorter than its shape, a row outside the shape, no
/// source, a rank outside the sources, heads not a multiple of kv_heads.
pub fn attention_reference(
    q: &[bf16],
    k: &[&[bf16]],
    v: &[&[bf16]],
    s: mkernel_kernels::ring_attention::AttentionShape,
    rank: usize,
    scale: f32,
    rows: &[(usize, usize, usize)],
) -> Result<Vec<AttentionRow>, String> {
    let (b_n, seq, h_n, hkv, d) = (s.batch as usize, s.seq as usize, s.heads as usize, s.kv_heads as usize, s.head_dim as usize);
    let world = k.len();
    if world == 0 || v.len() != world || rank >= world {
        return Err(format!("k, v: need the same number (>= 1) of sources, above rank {rank}; got {} and {}", k.len(), v.len()));
    }
    if hkv == 0 || h_n % hkv != 0 {
        return Err(format!("shape: heads ({h_n}) must be a multiple of kv_heads ({hkv})"));
    }
    if q.len() < b_n * seq * h_n * d {
        return Err(format!("q: needs [B, S, H, D] = {} elements, has {}", b_n * seq * h_n * d, q.len()));
    }
    if let Some(src) = (0..world).find(|&i| k[i].len() < b_n * seq * hkv * d || v[i].len() < b_n * seq * hkv * d) {
        return Err(format!("k, v: source {src} needs [B, S, Hkv, D] = {} elements", b_n * seq * hkv * d));
    }
    if let Some(r) = rows.iter().find(|r| r.0 >= b_n || r.1 >= h_n || r.2 >= seq) {
        return Err(format!("rows: {r:?} is outside (B, H, S) = ({b_n}, {h_n}, {seq})"));
    }
    let one = |&(b, h, i): &(usize, usize, usize)| -> AttentionRow {
        let hk = h / (h_n / hkv);
        let qpos = s.position(world as u32, rank as u32, i as u32);
        let qrow: Vec<f64> = q[((b * seq + i) * h_n + h) * d..][..d].iter().map(|x| x.to_f64()).collect();
        let kv_at = |j: usize| ((b * seq + j) * hkv + hk) * d;
        let mut scores = Vec::with_capacity(world * seq);
        for (src, ks) in k.iter().enumerate() {
            for j in 0..seq {
                if s.causal && s.position(world as u32, src as u32, j as u32) > qpos {
                    scores.push(f64::NEG_INFINITY);
                } else {
                    let dot: f64 = qrow.iter().zip(&ks[kv_at(j)..][..d]).map(|(x, y)| x * y.to_f64()).sum();
                    scores.push(dot * scale as f64);
                }
            }
        }
        let mx = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (mut out, mut abs, mut l) = (vec![0f64; d], vec![0f64; d], 0f64);
        for (idx, &z) in scores.iter().enumerate() {
            let p = (z - mx).exp();
            if p == 0.0 {
                continue;
            }
            l += p;
            for (e, x) in v[idx / seq][kv_at(idx % seq)..][..d].iter().enumerate() {
                out[e] += p * x.to_f64();
                abs[e] += (p * x.to_f64()).abs();
            }
        }
        let scale: Vec<f64> = out.iter().zip(&abs).map(|(o, a)| (o / l).abs() + a / l).collect();
        AttentionRow { out: out.iter().map(|o| o / l).collect(), scale, lse: mx + l.ln() }
    };
    let threads = std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1).clamp(1, 64);
    let part = rows.len().div_ceil(threads).max(1);
    std::thread::scope(|sc| {
        let handles: Vec<_> = rows.chunks(part).map(|c| sc.spawn(move || c.iter().map(one).collect::<Vec<_>>())).collect();
        let mut all = Vec::with_capacity(rows.len());
        for h in handles {
            all.extend(h.join().map_err(|_| "attention_reference: a worker thread panicked".to_string())?);
        }
        Ok(all)
    })
}

/// The host's model of an MoE dispatch's routing ([`crate::Communicator::moe_dispatch_gemm`]),
/// computed from every rank's expert ids alone, independently of the kernel: what the tests,
/// `bench moe-dispatch-gemm --check` and `bench moe-gemm-combine --check` compare the call's
/// `layout` and `dest_rows` with, and where the benches' unfused baselines move each row.
///
/// With `world` ranks and El = experts / world local experts a rank, expert g lives on rank
/// q = g / El as its local expert e = g % El. Rank q's rows:
///
/// ```text
/// rank q:  | segment e=0                        | segment e=1               | ...
///          | src 0's | src 1's | ... | padding  | src 0's | ... | padding |
///          ^ seg_start[q][0] = 0                ^ seg_start[q][1]           rows_used[q] ^
/// ```
///
/// Segment e holds every entry routed to expert g, source 0's first, then source 1's, ...,
/// each source's in entry order (entry i = token i / topk's k-th choice, i % topk); each
/// segment starts at a multiple of [`SEGMENT_ALIGN`] rows (padded; an empty one takes no
/// rows), and `rows_used[q]` is where the last one ends. `dest[src][i]` is entry i's row on
/// its expert's rank, u32::MAX for a -1 entry (no expert).
///
/// [`SEGMENT_ALIGN`]: mkernel_kernels::moe_dispatch_gemm::SEGMENT_ALIGN
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoeRouting {
    /// Local experts a rank (El = experts / world, >= 1).
    local_experts: usize,
    /// `entries[src][g]`: source rank src's entries (token x topk + k) routed to expert g, in
    /// entry order.
    entries: Vec<Vec<Vec<usize>>>,
    /// `seg_start[q][e]`: the first row of rank q's segment of local expert e.
    seg_start: Vec<Vec<u32>>,
    /// `rows_used[q]`: rank q's rows in use, its last segment's padding included.
    rows_used: Vec<u32>,
    /// `dest[src][i]`: the row entry i of source src lands in on its expert's rank (the
    /// dispatch's `dest_rows`); u32::MAX for -1.
    pub dest: Vec<Vec<u32>>,
}

impl MoeRouting {
    /// The routing of `ids` (`ids[r]`: rank r's expert ids, \[tokens x topk\], -1 for none)
    /// over `experts` experts on `ids.len()` ranks.
    ///
    /// Errors name the argument: no rank (`ids`); experts not a positive multiple of the
    /// ranks or above the kernel's `MAX_EXPERTS` (`experts`); an id other than -1 or an
    /// expert in 0..experts (`ids`, naming the rank and entry: the kernel refuses it too); a
    /// rank's rows past u32 (`ids`).
    pub fn new(ids: &[Vec<i32>], experts: u32) -> Result<Self, String> {
        let world = ids.len();
        if world == 0 {
            return Err("ids: need the expert ids of one rank or more, got none".to_string());
        }
        let e = experts as usize;
        if e == 0 || !e.is_multiple_of(world) || experts > mkernel_kernels::moe_dispatch_gemm::MAX_EXPERTS {
            return Err(format!(
                "experts: must be a positive multiple of the ranks ({world}) and at most {}, got {experts}",
                mkernel_kernels::moe_dispatch_gemm::MAX_EXPERTS
            ));
        }
        let el = e / world;
        let mut entries = vec![vec![Vec::new(); e]; world];
        for (src, rank_ids) in ids.iter().enumerate() {
            for (i, &g) in rank_ids.iter().enumerate() {
                match usize::try_from(g) {
                    Ok(g) if g < e => entries[src][g].push(i),
                    _ if g == -1 => {}
                    _ => return Err(format!("ids: rank {src} entry {i} holds {g}, neither -1 nor an expert in 0..{experts}")),
                }
            }
        }
        let align = mkernel_kernels::moe_dispatch_gemm::SEGMENT_ALIGN as usize;
        let too_many = |q: usize| format!("ids: rank {q}'s segments need more than u32::MAX rows");
        let (mut seg_start, mut rows_used) = (vec![vec![0u32; el]; world], vec![0u32; world]);
        for q in 0..world {
            let mut row = 0usize;
            for l in 0..el {
                seg_start[q][l] = u32::try_from(row).map_err(|_| too_many(q))?;
                let total: usize = entries.iter().map(|per| per[q * el + l].len()).sum();
                row += total.div_ceil(align) * align;
            }
            rows_used[q] = u32::try_from(row).map_err(|_| too_many(q))?;
        }
        let mut m = Self { local_experts: el, entries, seg_start, rows_used, dest: Vec::with_capacity(world) };
        for (src, rank_ids) in ids.iter().enumerate() {
            let mut d = vec![u32::MAX; rank_ids.len()];
            for g in 0..e {
                let first = m.block_start(src, g).ok_or_else(|| format!("ids: expert {g} outside the model"))?;
                for (j, &i) in m.entries[src][g].iter().enumerate() {
                    d[i] = first + j as u32;
                }
            }
            m.dest.push(d);
        }
        Ok(m)
    }

    /// Ranks.
    pub fn world(&self) -> usize {
        self.seg_start.len()
    }

    /// Local experts a rank (experts / world).
    pub fn local_experts(&self) -> usize {
        self.local_experts
    }

    /// `entries()[src][g]`: source rank src's entries (token x topk + k) routed to expert g,
    /// in entry order.
    pub fn entries(&self) -> &[Vec<Vec<usize>>] {
        &self.entries
    }

    /// Rank q's rows in use (its last segment's padding included), for every q.
    pub fn rows_used(&self) -> &[u32] {
        &self.rows_used
    }

    /// The first row of each of rank q's segments (local experts in order), for every q.
    pub fn seg_start(&self) -> &[Vec<u32>] {
        &self.seg_start
    }

    /// Entries of source `src` routed to expert `g` (0 for a source or expert the model does
    /// not have: none are routed there).
    pub fn count(&self, src: usize, g: usize) -> u32 {
        self.entries.get(src).and_then(|per| per.get(g)).map_or(0, |e| e.len() as u32)
    }

    /// The row of expert `g`'s rank where source `src`'s entries for it begin: g's segment
    /// start plus the entries of the sources before `src` (src = world: the segment's
    /// entries' end). None for an expert or source the model does not have.
    pub fn block_start(&self, src: usize, g: usize) -> Option<u32> {
        let el = self.local_experts;
        let start = *self.seg_start.get(g / el)?.get(g % el)?;
        (src <= self.world()).then(|| start + (0..src).map(|s| self.count(s, g)).sum::<u32>())
    }

    /// Rank q's `layout` words as the dispatch writes them ([`crate::moe_layout_words`]): the
    /// segments' first rows \[El\], the rows in use, then the entries received per (local
    /// expert, source rank) \[El\]\[world\]. None for a rank the model does not have.
    pub fn layout(&self, q: usize) -> Option<Vec<u32>> {
        let (el, world) = (self.local_experts, self.world());
        let mut v = self.seg_start.get(q)?.clone();
        v.push(*self.rows_used.get(q)?);
        for l in 0..el {
            for src in 0..world {
                v.push(self.count(src, q * el + l));
            }
        }
        Some(v)
    }

    /// Whether `got` is rank q's layout exactly; the error names how many words differ and
    /// the first of them (a segment start, the rows used, or a (local expert, source) count),
    /// or a rank the model does not have.
    pub fn check_layout(&self, q: usize, got: &[u32]) -> Result<(), String> {
        let want = self.layout(q).ok_or_else(|| format!("rank {q}'s layout: the model has {} ranks", self.world()))?;
        if got.len() != want.len() {
            return Err(format!("rank {q}'s layout: {} words, model {}", got.len(), want.len()));
        }
        let bad: Vec<usize> = (0..want.len()).filter(|&w| got[w] != want[w]).collect();
        let Some(&w) = bad.first() else { return Ok(()) };
        let (el, world) = (self.local_experts, self.world());
        let what = match w {
            w if w < el => format!("local expert {w}'s first row"),
            w if w == el => "rows used".to_string(),
            w => format!("local expert {}'s tokens from rank {}", (w - el - 1) / world, (w - el - 1) % world),
        };
        Err(format!("rank {q}'s layout: {} of {} words differ, first {what}: {}, model {}", bad.len(), want.len(), got[w], want[w]))
    }

    /// Whether `got` is source rank `src`'s `dest_rows` exactly (\[tokens x topk\], as the
    /// dispatch writes them: entry i's row on its expert's rank, u32::MAX for a -1 entry);
    /// the error names how many entries differ and the first of them: its token and choice
    /// (`topk` entries a token), the expert and rank it routes to, the row read and the
    /// model's.
    pub fn check_dest(&self, src: usize, got: &[u32], topk: usize) -> Result<(), String> {
        let Some(want) = self.dest.get(src) else {
            return Err(format!("rank {src}'s dest_rows: the model has {} ranks", self.world()));
        };
        if got.len() != want.len() {
            return Err(format!("rank {src}'s dest_rows: {} entries, model {}", got.len(), want.len()));
        }
        let bad: Vec<usize> = (0..want.len()).filter(|&i| got[i] != want[i]).collect();
        let Some(&i) = bad.first() else { return Ok(()) };
        let topk = topk.max(1);
        let routed = match self.entries.get(src).and_then(|per| per.iter().position(|e| e.contains(&i))) {
            Some(g) => format!("expert {g} on rank {}", g / self.local_experts),
            None => "no expert: id -1".to_string(),
        };
        let row = |r: u32| if r == u32::MAX { "u32::MAX (none)".to_string() } else { format!("row {r}") };
        Err(format!(
            "rank {src}'s dest_rows: {} of {} entries differ, first entry {i} (token {}, choice {}, {routed}): {}, model {}",
            bad.len(),
            want.len(),
            i / topk,
            i % topk,
            row(got[i]),
            row(want[i])
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abs_floor_grows_with_the_square_root_of_k_then_with_k() {
        assert_eq!(abs_floor(30.0, 0), 30.0 * 1e-6);
        assert_eq!(abs_floor(30.0, 1), 30.0 * 1e-6); // 6 * 2^-24 < 1e-6
        let f = abs_floor(30.0, 8192) as f64;
        assert!((f - 6.0 * 8192f64.sqrt() * 2f64.powi(-24) * 30.0).abs() < 1e-9, "{f}");
        // Above K = 9216 the truncation term (K / 16 units) takes over.
        assert_eq!(abs_floor(30.0, 9216), (6.0 * 96.0 * 2f64.powi(-24) * 30.0) as f32);
        let f = abs_floor(30.0, 57344) as f64;
        assert!((f - 57344.0 / 16.0 * 2f64.powi(-24) * 30.0).abs() < 1e-9, "{f}");
        // A near-zero element of a K=8192 product off by fp32 accumulation noise passes,
        // one off by a visible amount does not.
        let reference = [-0.0012455f32, 30.0, -30.0];
        let got = [bf16::from_f32(-0.0013885), bf16::from_f32(30.0), bf16::from_f32(-30.0)];
        assert!(compare(&got, &reference, None, 3, 8192).passed());
        assert!(!compare(&got, &reference, None, 3, 0).passed());
        let off = [bf16::from_f32(0.02), bf16::from_f32(30.0), bf16::from_f32(-30.0)];
        assert!(!compare(&off, &reference, None, 3, 8192).passed());
    }

    #[test]
    fn poison_and_wrong_values_fail_with_coordinates() {
        let reference = vec![1.0f32, -2.0, 3.0, 4.0];
        let mut got: Vec<bf16> = reference.iter().map(|&x| bf16::from_f32(x)).collect();
        assert!(compare(&got, &reference, None, 2, 0).passed());
        got[3] = POISON;
        let c = compare(&got, &reference, None, 2, 0);
        assert!(!c.passed());
        assert_eq!(c.first_bad.map(|f| (f.0, f.1)), Some((1, 1)));
        got[3] = bf16::from_f32(4.1);
        let c = compare(&got, &reference, None, 2, 0);
        assert!(!c.passed(), "2.5% off must fail: {c}");
    }

    #[test]
    fn length_mismatch_fails_instead_of_truncating() {
        let reference = vec![1.0f32, -2.0, 3.0, 4.0];
        let got: Vec<bf16> = reference.iter().map(|&x| bf16::from_f32(x)).collect();
        let c = compare(&got[..2], &reference, None, 2, 0);
        assert!(!c.passed() && c.bad == 2, "{c}");
        assert_eq!(c.first_bad.map(|f| (f.0, f.1)), Some((1, 0)));
        assert!(!compare(&[], &reference, None, 2, 0).passed());
        assert!(!compare(&got, &reference[..3], None, 2, 0).passed());
        // A short scale falls back to |reference| instead of panicking.
        assert!(compare(&got, &reference, Some(&[1.0]), 2, 0).passed());
    }

    #[test]
    fn bf16_rounding_passes() {
        let reference: Vec<f32> = random_bf16(10_000, 7).iter().map(|x| x.to_f32() * 3.7 + 0.001).collect();
        let got: Vec<bf16> = reference.iter().map(|&x| bf16::from_f32(x)).collect();
        let c = compare(&got, &reference, None, 100, 0);
        assert!(c.passed(), "{c}");
        assert!(c.rel_fro_err < 4e-3);
    }

    #[test]
    fn random_data_is_fresh_and_in_range() {
        let a = random_bf16(1000, 1);
        assert!(a.iter().all(|x| (-1.0..=1.0).contains(&x.to_f32())));
        assert_ne!(a, random_bf16(1000, 2));
        assert!(a.iter().filter(|x| x.to_f32() == 0.0).count() < 10);
    }

    /// Two keys of one source: softmax of two scores by hand; causal hides the later key;
    /// bad arguments are named.
    #[test]
    fn attention_reference_by_hand() {
        use mkernel_kernels::ring_attention::{AttentionShape, SeqLayout};
        let s = AttentionShape { batch: 1, seq: 2, heads: 1, kv_heads: 1, head_dim: 64, causal: false, layout: SeqLayout::Contiguous };
        let h = |x: f32| bf16::from_f32(x);
        let mut q = vec![h(0.0); 128];
        q[64] = h(1.0); // query 1: e_0
        let mut k = vec![h(0.0); 128];
        k[0] = h(1.0); // key 0: e_0 (score 1), key 1: 0 (score 0)
        let v: Vec<bf16> = (0..128).map(|i| h(if i < 64 { 1.0 } else { -1.0 })).collect();
        let r = attention_reference(&q, &[&k], &[&v], s, 0, 1.0, &[(0, 0, 1)]).unwrap();
        let (p0, p1) = (1f64.exp() / (1f64.exp() + 1.0), 1.0 / (1f64.exp() + 1.0));
        assert!((r[0].out[5] - (p0 - p1)).abs() < 1e-12 && (r[0].scale[5] - ((p0 - p1) + 1.0)).abs() < 1e-12, "{:?}", r[0].out[5]);
        assert!((r[0].lse - (1f64.exp() + 1.0).ln()).abs() < 1e-12);
        // Query 0 under a causal mask sees key 0 only: out = v_0.
        let c = attention_reference(&q, &[&k], &[&v], AttentionShape { causal: true, ..s }, 0, 1.0, &[(0, 0, 0)]).unwrap();
        assert_eq!(c[0].out[0], 1.0);
        // As rank 1 of two sources, query 0 (position 2, a zero row: every score 0) sees keys 0-2.
        let two = attention_reference(&q, &[&k, &k], &[&v, &v], AttentionShape { causal: true, ..s }, 1, 1.0, &[(0, 0, 0)]).unwrap();
        assert!((two[0].lse - 3f64.ln()).abs() < 1e-12, "{}", two[0].lse);
        assert!(attention_reference(&q, &[&k], &[&v], s, 0, 1.0, &[(0, 0, 2)]).unwrap_err().starts_with("rows"));
        assert!(attention_reference(&q, &[&k], &[&v], s, 1, 1.0, &[(0, 0, 0)]).unwrap_err().starts_with("k, v"));
        assert!(attention_reference(&q[..10], &[&k], &[&v], s, 0, 1.0, &[]).unwrap_err().starts_with("q"));
    }

    /// Zigzag shards, world 2, S = 2: rank 0 holds positions 0 and 3, rank 1 positions 1 and
    /// 2. With equal scores a causal query averages the values of the positions it sees.
    #[test]
    fn attention_reference_follows_the_zigzag_layout() {
        use mkernel_kernels::ring_attention::{AttentionShape, SeqLayout};
        let s = AttentionShape { batch: 1, seq: 2, heads: 1, kv_heads: 1, head_dim: 64, causal: true, layout: SeqLayout::Zigzag };
        let q = vec![bf16::ZERO; 128];
        let k = vec![bf16::ZERO; 128];
        // v of (rank, i): its position in the whole sequence, in every column
        let v = |r: u32| -> Vec<bf16> { (0..128u32).map(|e| bf16::from_f32(s.position(2, r, e / 64) as f32)).collect() };
        let (v0, v1) = (v(0), v(1));
        let mean = |rank, i| attention_reference(&q, &[&k, &k], &[&v0, &v1], s, rank, 1.0, &[(0, 0, i)]).unwrap()[0].out[0];
        assert_eq!(mean(0, 0), 0.0, "position 0 sees itself");
        assert!((mean(1, 0) - 0.5).abs() < 1e-12, "position 1: 0 and 1");
        assert!((mean(1, 1) - 1.0).abs() < 1e-12, "position 2: 0, 1 and 2");
        assert!((mean(0, 1) - 1.5).abs() < 1e-12, "position 3: all four");
        let c = AttentionShape { layout: SeqLayout::Contiguous, ..s };
        let r = attention_reference(&q, &[&k, &k], &[&v0, &v1], c, 1, 1.0, &[(0, 0, 1)]).unwrap();
        assert!((r[0].out[0] - 1.5).abs() < 1e-12, "contiguous: rank 1's last position sees all four");
    }

    #[test]
    fn f64_reference_rows() {
        let a: Vec<bf16> = [1.0, 2.0, 3.0, 4.0].iter().map(|&x| bf16::from_f32(x)).collect(); // 2x2
        let b: Vec<bf16> = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0].iter().map(|&x| bf16::from_f32(x)).collect(); // 3x2
        assert_eq!(reference_rows_f64(&a, &b, &[1], 3, 2).unwrap(), vec![3.0, 4.0, 7.0]);
        assert!(reference_rows_f64(&a, &b, &[2], 3, 2).unwrap_err().contains("row 2"));
        assert!(reference_rows_f64(&a, &b, &[0], 4, 2).unwrap_err().starts_with("b:"));
    }

    /// A routing worked by hand: 2 ranks, 4 experts (2 a rank), top-2, two tokens a rank;
    /// expert 1 gets no entry (an empty segment takes no rows).
    #[test]
    fn moe_routing_by_hand() {
        let ids = vec![vec![0, 3, 2, -1], vec![3, 0, 3, -1]];
        let m = MoeRouting::new(&ids, 4).unwrap();
        assert_eq!((m.world(), m.local_experts()), (2, 2));
        assert_eq!(m.seg_start(), vec![vec![0, 128], vec![0, 128]]);
        assert_eq!(m.rows_used(), vec![128, 256]);
        // (expert 0: rank 0's entry 0, then rank 1's entry 1; expert 3: rank 0's entry 1, then
        // rank 1's entries 0 and 2)
        assert_eq!(m.dest, vec![vec![0, 128, 0, u32::MAX], vec![129, 1, 130, u32::MAX]]);
        assert_eq!(m.entries[1][3], vec![0, 2]);
        assert_eq!((m.block_start(0, 3), m.block_start(1, 3), m.block_start(1, 0)), (Some(128), Some(129), Some(1)));
        assert_eq!((m.block_start(2, 3), m.block_start(3, 3), m.block_start(0, 4)), (Some(131), None, None));
        assert_eq!((m.count(2, 0), m.count(0, 9), m.layout(2)), (0, 0, None));
        assert!(m.check_layout(2, &[]).unwrap_err().contains("the model has 2 ranks"));
        assert_eq!(m.layout(0).unwrap(), vec![0, 128, 128, 1, 1, 0, 0]);
        assert_eq!(m.layout(1).unwrap(), vec![0, 128, 256, 1, 0, 1, 2]);
        assert_eq!(m.layout(1).unwrap().len(), crate::moe_layout_words(2, 2));
    }

    /// Random routings (uneven tokens, 0 included, ~1 in 6 entries -1): every segment starts
    /// at a multiple of 128 after the previous one's padded rows and is filled from its start,
    /// sources in rank order and each source's entries in order, one row per entry; the
    /// layout's counts are the entries'.
    #[test]
    fn moe_routing_fills_each_segment_in_source_and_entry_order() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
        for (world, experts, topk, tokens) in [(2usize, 8u32, 2usize, [37usize, 50, 0, 0]), (3, 6, 3, [20, 0, 33, 0]), (4, 16, 4, [9, 170, 25, 3])] {
            let el = experts as usize / world;
            let ids: Vec<Vec<i32>> = (0..world)
                .map(|r| (0..tokens[r] * topk).map(|_| if rng.random_ratio(1, 6) { -1 } else { rng.random_range(0..experts as i32) }).collect())
                .collect();
            let m = MoeRouting::new(&ids, experts).unwrap();
            for q in 0..world {
                let mut row = 0u32;
                for e in 0..el {
                    let g = (q * el + e) as i32;
                    assert_eq!(m.seg_start[q][e], row, "world {world} rank {q} expert {e}");
                    let got: Vec<u32> = (0..world).flat_map(|src| ids[src].iter().zip(&m.dest[src]).filter(|(&id, _)| id == g).map(|(_, &r)| r)).collect();
                    let want: Vec<u32> = (row..row + got.len() as u32).collect();
                    assert_eq!(got, want, "world {world} rank {q} expert {e}");
                    row += (got.len() as u32).div_ceil(128) * 128;
                    let l = m.layout(q).unwrap();
                    let counts: Vec<u32> = (0..world).map(|src| ids[src].iter().filter(|&&id| id == g).count() as u32).collect();
                    assert_eq!(&l[el + 1 + e * world..el + 1 + (e + 1) * world], &counts[..]);
                }
                assert_eq!(m.rows_used[q], row);
                assert!(m.check_layout(q, &m.layout(q).unwrap()).is_ok());
            }
            for (src, (rank_ids, dest)) in ids.iter().zip(&m.dest).enumerate() {
                assert_eq!(rank_ids.len(), dest.len());
                for (i, (&g, &row)) in rank_ids.iter().zip(dest).enumerate() {
                    assert_eq!(row == u32::MAX, g == -1, "rank {src} entry {i}");
                }
            }
        }
    }

    /// Bad routings and bad layouts are named.
    #[test]
    fn moe_routing_names_bad_ids_and_layouts() {
        assert!(MoeRouting::new(&[], 4).unwrap_err().starts_with("ids:"));
        assert!(MoeRouting::new(&[vec![0], vec![1]], 5).unwrap_err().starts_with("experts:"));
        assert!(MoeRouting::new(&[vec![0], vec![1]], 0).unwrap_err().starts_with("experts:"));
        assert!(MoeRouting::new(&[vec![0], vec![1]], 2048).unwrap_err().contains("at most 1024"));
        for bad in [4, -2] {
            let e = MoeRouting::new(&[vec![0, 1], vec![-1, bad]], 4).unwrap_err();
            assert!(e.contains("rank 1 entry 1 holds") && e.contains(&bad.to_string()), "{e}");
        }
        let m = MoeRouting::new(&[vec![0, 3, 2, -1], vec![3, 0, 3, -1]], 4).unwrap();
        let mut l = m.layout(1).unwrap();
        l[1] += 1;
        l[6] = 9;
        let e = m.check_layout(1, &l).unwrap_err();
        assert_eq!(e, "rank 1's layout: 2 of 7 words differ, first local expert 1's first row: 129, model 128");
        let e = m.check_layout(0, &m.layout(1).unwrap()).unwrap_err();
        assert!(e.contains("first rows used: 256, model 128"), "{e}");
        let mut l = m.layout(1).unwrap();
        l[5] = 0;
        assert!(m.check_layout(1, &l).unwrap_err().contains("first local expert 1's tokens from rank 0: 0, model 1"));
        assert!(m.check_layout(1, &l[..6]).unwrap_err().contains("6 words, model 7"));
    }

    /// Bad dest_rows are named: the first differing entry's token, choice, expert and rank,
    /// the row read and the model's.
    #[test]
    fn moe_routing_names_bad_dest_rows() {
        // (dest: [0, 128, 0, MAX] and [129, 1, 130, MAX]; top-2)
        let m = MoeRouting::new(&[vec![0, 3, 2, -1], vec![3, 0, 3, -1]], 4).unwrap();
        for src in 0..2 {
            assert!(m.check_dest(src, &m.dest[src], 2).is_ok());
        }
        let mut d = m.dest[1].clone();
        d[2] = 131;
        d[0] = 7;
        let e = m.check_dest(1, &d, 2).unwrap_err();
        assert_eq!(e, "rank 1's dest_rows: 2 of 4 entries differ, first entry 0 (token 0, choice 0, expert 3 on rank 1): row 7, model row 129");
        // A -1 entry written, and an entry left unwritten.
        let mut d = m.dest[0].clone();
        d[3] = 5;
        let e = m.check_dest(0, &d, 2).unwrap_err();
        assert!(e.ends_with("first entry 3 (token 1, choice 1, no expert: id -1): row 5, model u32::MAX (none)"), "{e}");
        let mut d = m.dest[0].clone();
        d[1] = u32::MAX;
        assert!(m.check_dest(0, &d, 2).unwrap_err().ends_with("(token 0, choice 1, expert 3 on rank 1): u32::MAX (none), model row 128"));
        assert!(m.check_dest(0, &m.dest[0][..3], 2).unwrap_err().contains("3 entries, model 4"));
        assert!(m.check_dest(2, &m.dest[0], 2).unwrap_err().contains("the model has 2 ranks"));
    }
}

/// Fills `buf` on the GPU with bf16 values uniform in [-1, 1] drawn from `seed`.
pub fn fill_uniform(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    buf: &mut cudarc::driver::CudaSlice<bf16>,
    seed: u64,
) -> crate::Result<()> {
    use cudarc::driver::DevicePtrMut;
    let len = buf.len() as u64;
    let (ptr, _guard) = buf.device_ptr_mut(stream);
    // SAFETY: `ptr` holds `len` bf16 on `stream`'s GPU (cudarc slices are per-context).
    unsafe { mkernel_kernels::fill::launch(mkernel_kernels::driver::Runtime::global(), stream, ptr, len, seed, -1.0, 1.0)? };
    Ok(())
}

/// Fills `buf` with [`POISON`] (NaN) so elements a kernel fails to write are caught.
pub fn poison(stream: &std::sync::Arc<cudarc::driver::CudaStream>, buf: &mut cudarc::driver::CudaSlice<bf16>) -> crate::Result<()> {
    use cudarc::driver::DevicePtrMut;
    let len = buf.len();
    let (ptr, _guard) = buf.device_ptr_mut(stream);
    // SAFETY: `len` 16-bit words at `ptr` on the stream's GPU.
    unsafe { cudarc::driver::sys::cuMemsetD16Async(ptr, POISON.to_bits(), len, stream.cu_stream()) }
        .result()
        .map_err(|source| crate::Error::Driver { call: "cuMemsetD16Async", source })
}

/// One verification case of the fused GEMM + all-reduce: every rank's inputs are
/// drawn on the GPU from seeds derived from `seed` and the rank, so any rank can
/// regenerate all ranks' inputs and compute the reference on its own (one process per
/// GPU needs no exchange of matrices).
#[derive(Debug, Clone, Copy)]
pub struct AllReduceCase {
    /// The call's shape (K is each rank's shard).
    pub shape: crate::GemmShape,
    /// Ranks whose partials are summed.
    pub world: u32,
    /// Seed of every rank's inputs.
    pub seed: u64,
}

impl AllReduceCase {
    fn seeds(&self, rank: u32) -> (u64, u64) {
        let base = self.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(2 * rank as u64);
        (base, base.wrapping_add(1))
    }

    /// Fills rank `rank`'s `a` [M, K] and `b` [N, K].
    pub fn fill_inputs(
        &self,
        stream: &std::sync::Arc<cudarc::driver::CudaStream>,
        rank: u32,
        a: &mut cudarc::driver::CudaSlice<bf16>,
        b: &mut cudarc::driver::CudaSlice<bf16>,
    ) -> crate::Result<()> {
        let (sa, sb) = self.seeds(rank);
        fill_uniform(stream, a, sa)?;
        fill_uniform(stream, b, sb)
    }

    /// Compares `out` (this rank's fused result, already complete on `stream`) with
    /// the fp32 sum of every rank's cuBLAS fp32 product, with the all-reduce
    /// tolerance of the module doc. Every element is checked.
    pub fn verify(
        &self,
        stream: &std::sync::Arc<cudarc::driver::CudaStream>,
        blas: &mut crate::baseline::Cublas,
        out: &cudarc::driver::CudaSlice<bf16>,
    ) -> crate::Result<Comparison> {
        self.verify_rows(stream, blas, out, 0..self.shape.m)
    }

    /// As [`AllReduceCase::verify`] for an `out` that holds rows `rows` of the sum alone,
    /// \[rows.len(), N\] (a reduce-scatter's rank). Rows past M are refused (`rows`).
    pub fn verify_rows(
        &self,
        stream: &std::sync::Arc<cudarc::driver::CudaStream>,
        blas: &mut crate::baseline::Cublas,
        out: &cudarc::driver::CudaSlice<bf16>,
        rows: std::ops::Range<u32>,
    ) -> crate::Result<Comparison> {
        let s = self.shape;
        let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
        let (r0, r1) = self.check_rows(&rows, out.len())?;
        let dev = |e| crate::Error::Driver { call: "cuMemAlloc/cuMemcpy", source: e };
        let mut a = stream.alloc_zeros::<bf16>(m * k).map_err(dev)?;
        let mut b = stream.alloc_zeros::<bf16>(n * k).map_err(dev)?;
        let mut p = stream.alloc_zeros::<f32>(m * n).map_err(dev)?;
        let mut sum = vec![0f32; m * n];
        let mut scale = vec![0f32; m * n];
        for q in 0..self.world {
            self.fill_inputs(stream, q, &mut a, &mut b)?;
            blas.gemm_f32_out(&a, &b, &mut p, s)?;
            let host = stream.clone_dtoh(&p).map_err(dev)?;
            for ((acc, sc), x) in sum.iter_mut().zip(scale.iter_mut()).zip(&host) {
                *acc += x;
                *sc += x.abs();
            }
        }
        for (sc, x) in scale.iter_mut().zip(&sum) {
            *sc += x.abs();
        }
        let got = stream.clone_dtoh(&out.slice(0..(r1 - r0) * n)).map_err(dev)?;
        let mut cmp = compare(&got, &sum[r0 * n..r1 * n], Some(&scale[r0 * n..r1 * n]), n, k);
        // (rows of the whole sum, not of `out`)
        if let Some(f) = cmp.first_bad.as_mut() {
            f.0 += r0;
        }
        Ok(cmp)
    }

    /// `rows` within M, and `out` long enough for them: (first row, end row).
    fn check_rows(&self, rows: &std::ops::Range<u32>, out_len: usize) -> crate::Result<(usize, usize)> {
        let (m, n) = (self.shape.m as usize, self.shape.n as usize);
        let (r0, r1) = (rows.start as usize, rows.end as usize);
        if r0 > r1 || r1 > m {
            return Err(crate::error::invalid("rows", format!("must be a range within [0, M={m}), got {r0}..{r1}")));
        }
        if out_len < (r1 - r0) * n {
            return Err(crate::error::invalid(
                "out",
                format!("expected [{} rows, N={n}] = {} elements, got {out_len}", r1 - r0, (r1 - r0) * n),
            ));
        }
        Ok((r0, r1))
    }
}

impl AllReduceCase {
    /// As [`AllReduceCase::verify`], with the reference accumulated and the comparison
    /// made on the device (a few bytes reach the host), so that many repetitions per
    /// shape are affordable. Same tolerance; `gpu_gemm_allreduce` checks that both agree.
    pub fn verify_on_device(
        &self,
        stream: &std::sync::Arc<cudarc::driver::CudaStream>,
        blas: &mut crate::baseline::Cublas,
        out: &cudarc::driver::CudaSlice<bf16>,
    ) -> crate::Result<Comparison> {
        self.verify_rows_on_device(stream, blas, out, 0..self.shape.m)
    }

    /// As [`AllReduceCase::verify_on_device`] for an `out` that holds rows `rows` of the
    /// sum alone ([`AllReduceCase::verify_rows`]).
    pub fn verify_rows_on_device(
        &self,
        stream: &std::sync::Arc<cudarc::driver::CudaStream>,
        blas: &mut crate::baseline::Cublas,
        out: &cudarc::driver::CudaSlice<bf16>,
        rows: std::ops::Range<u32>,
    ) -> crate::Result<Comparison> {
        use cudarc::driver::{DevicePtr, DevicePtrMut};
        use mkernel_kernels::driver::Runtime;
        let s = self.shape;
        let (m, n, k) = (s.m as usize, s.n as usize, s.k as usize);
        let (r0, r1) = self.check_rows(&rows, out.len())?;
        // (the reference is all M rows; `len` elements of it, from row r0, are compared)
        let (full, off, len) = (m * n, r0 * n, (r1 - r0) * n);
        let dev = |e| crate::Error::Driver { call: "cuMemAlloc/cuMemcpy", source: e };
        let mut a = stream.alloc_zeros::<bf16>(m * k).map_err(dev)?;
        let mut b = stream.alloc_zeros::<bf16>(n * k).map_err(dev)?;
        let mut p = stream.alloc_zeros::<f32>(full).map_err(dev)?;
        let mut sum = stream.alloc_zeros::<f32>(full).map_err(dev)?;
        let mut abs_sum = stream.alloc_zeros::<f32>(full).map_err(dev)?;
        let rt = Runtime::global();
        for q in 0..self.world {
            self.fill_inputs(stream, q, &mut a, &mut b)?;
            blas.gemm_f32_out(&a, &b, &mut p, s)?;
            let (pp, _g1) = p.device_ptr(stream);
            let (ps, _g2) = sum.device_ptr_mut(stream);
            let (pa, _g3) = abs_sum.device_ptr_mut(stream);
            // SAFETY: the three buffers hold `full` f32 on this stream's GPU.
            unsafe { mkernel_kernels::check::accumulate(rt, stream, ps, pa, pp, full as u64, q == 0)? };
        }
        // CompareStats as 5 words: err2, ref2 (f64 bits), bad, first_bad, max |err| bits.
        let run = |floor: f32| -> crate::Result<[u64; 5]> {
            let mut stats = stream.clone_htod(&[0u64, 0, 0, u64::MAX, 0]).map_err(dev)?;
            {
                let (pg, _g1) = out.device_ptr(stream);
                let ref_rows = sum.slice(off..off + len);
                let scale_rows = abs_sum.slice(off..off + len);
                let (pr, _g2) = ref_rows.device_ptr(stream);
                let (psc, _g3) = scale_rows.device_ptr(stream);
                let (pst, _g4) = stats.device_ptr_mut(stream);
                // SAFETY: sizes checked above; `stats` holds one CompareStats.
                unsafe { mkernel_kernels::check::compare(rt, stream, pg, pr, psc, pst, len as u64, REL_TOL as f32, floor)? };
            }
            let v = stream.clone_dtoh(&stats).map_err(dev)?;
            let mut w = [0u64; 5];
            w.copy_from_slice(&v[..5]);
            Ok(w)
        };
        let mut w = run(0.0)?;
        if w[2] != 0 {
            // Retry with the absolute floor of the host check (abs_floor of the reference's rms).
            let rms = (f64::from_bits(w[1]) / len.max(1) as f64).sqrt();
            w = run(abs_floor(rms, k))?;
        }
        let (err2, ref2) = (f64::from_bits(w[0]), f64::from_bits(w[1]));
        let rel = if ref2 > 0.0 { (err2 / ref2).sqrt() } else { err2.sqrt() };
        let first_bad = if w[2] == 0 || w[3] as usize >= len {
            None
        } else {
            let i = w[3] as usize;
            let g = stream.clone_dtoh(&out.slice(i..i + 1)).map_err(dev)?[0].to_f32();
            let r = stream.clone_dtoh(&sum.slice(off + i..off + i + 1)).map_err(dev)?[0];
            let sc = stream.clone_dtoh(&abs_sum.slice(off + i..off + i + 1)).map_err(dev)?[0];
            // (rows of the whole sum, not of `out`)
            Some((r0 + i / n, i % n, g, r, (r.abs() + sc) / 128.0))
        };
        Ok(Comparison {
            rel_fro_err: if rel.is_nan() { f64::INFINITY } else { rel },
            max_abs_err: f32::from_bits(w[4] as u32) as f64,
            bad: w[2] as usize,
            first_bad,
        })
    }
}
