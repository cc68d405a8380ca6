# Emulates one warp of ops/ring_attention.cuh's attend_unit on the CPU (numpy): the swizzled
# shared-memory tiles, ldmatrix(.trans) x4 and mma.m16n8k16 by the PTX ISA's fragment layouts,
# the online softmax with quad shuffles, the staged epilogue; compares with numpy attention.
# The index expressions are copied from the kernel: keep them in step when it changes.
# Run: python3 emulate_attention_warp.py [seed]   (session 57: a check without a GPU; bench/NOTES.md 60)
import numpy as np
import sys

rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
BM, BN = 128, 64

def bf16(x):
    x = np.asarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return b

def f32(h):
    return (np.asarray(h, dtype=np.uint32) << 16).view(np.float32)

def pack(lo, hi):
    return int(bf16(lo)) | (int(bf16(hi)) << 16)

class Smem:
    def __init__(self, D, rows):
        self.D = D
        self.b = np.zeros(rows * 2 * D, dtype=np.uint8)
    def at(self, r, c):  # AttnSmem<D>::at
        return r * 2 * self.D + ((c ^ (r & 7)) << 4)
    def store_tile(self, vals_bf16, valid):  # load_tile: rows r < valid from vals, else 0
        rows = len(self.b) // (2 * self.D)
        for r in range(rows):
            for c in range(self.D // 8):
                off = self.at(r, c)
                chunk = vals_bf16[r, c * 8:(c + 1) * 8] if r < valid else np.zeros(8, np.uint16)
                self.b[off:off + 16] = np.asarray(chunk, dtype=np.uint16).view(np.uint8)
    def row8(self, addr):  # 8 bf16 at byte addr
        return self.b[addr:addr + 16].view(np.uint16)

def ldmatrix_x4(sm, addrs, trans=False):
    # addrs[lane]: byte address of the row this lane supplies
    regs = np.zeros((32, 4), dtype=np.uint64)
    for i in range(4):
        M = np.stack([sm.row8(addrs[8 * i + r]) for r in range(8)])  # 8x8 u16
        if trans:
            M = M.T
        for l in range(32):
            g, t = l // 4, l % 4
            regs[l, i] = int(M[g, 2 * t]) | (int(M[g, 2 * t + 1]) << 16)
    return regs

def unpack(u):
    return f32(int(u) & 0xFFFF), f32(int(u) >> 16)

def mma(d, a, b0, b1):
    # d[l][4] f32, a[l][4] u32, b0[l], b1[l] u32
    A = np.zeros((16, 16), np.float32); B = np.zeros((16, 8), np.float32)
    for l in range(32):
        g, t = l // 4, l % 4
        for (reg, row, col) in [(0, g, 2 * t), (1, g + 8, 2 * t), (2, g, 2 * t + 8), (3, g + 8, 2 * t + 8)]:
            A[row, col], A[row, col + 1] = unpack(a[l][reg])
        B[2 * t, g], B[2 * t + 1, g] = unpack(b0[l])
        B[2 * t + 8, g], B[2 * t + 9, g] = unpack(b1[l])
    C = np.zeros((16, 8), np.float32)
    for l in range(32):
        g, t = l // 4, l % 4
        C[g, 2 * t], C[g, 2 * t + 1], C[g + 8, 2 * t], C[g + 8, 2 * t + 1] = d[l]
    C = C + A.astype(np.float64) @ B.astype(np.float64)
    for l in range(32):
        g, t = l // 4, l % 4
        d[l] = [C[g, 2 * t], C[g, 2 * t + 1], C[g + 8, 2 * t], C[g + 8, 2 * t + 1]]

def shfl_xor(vals, m):
    return [vals[l ^ m] for l in range(32)]

def run(D, warp, q, kblocks, vblocks, kv_valids, scale, causal, q0, n0s, diag):
    """q: [BM, D] f32 (bf16-representable); kblocks/vblocks: list of [BN, D]; returns O rows of this warp [16, D]."""
    sQ = Smem(D, BM); sQ.store_tile(bf16(q), BM)
    qf = []
    for kk in range(D // 16):
        addrs = [sQ.at(warp * 16 + (l & 15), kk * 2 + (l >> 4)) for l in range(32)]
        qf.append(ldmatrix_x4(sQ, addrs))
    o = [[np.zeros(4, np.float64) for _ in range(D // 8)] for _ in range(32)]
    m = [[-np.inf, -np.inf] for _ in range(32)]
    lsum = [[0.0, 0.0] for _ in range(32)]
    scale_log2 = np.float32(scale * np.log2(np.e))
    for blk, (kb, vb, kv_valid, n0, dg) in enumerate(zip(kblocks, vblocks, kv_valids, n0s, diag)):
        sK = Smem(D, BN); sK.store_tile(bf16(kb), kv_valid)
        sV = Smem(D, BN); sV.store_tile(bf16(vb), kv_valid)
        s = [[np.zeros(4, np.float64) for _ in range(BN // 8)] for _ in range(32)]
        for kk in range(D // 16):
            for n16 in range(BN // 16):
                addrs = [sK.at(n16 * 16 + (l & 7) + ((l >> 4) << 3), kk * 2 + ((l >> 3) & 1)) for l in range(32)]
                bf = ldmatrix_x4(sK, addrs)
                a = [qf[kk][l] for l in range(32)]
                d0 = [s[l][2 * n16] for l in range(32)]; mma(d0, a, bf[:, 0], bf[:, 1])
                d1 = [s[l][2 * n16 + 1] for l in range(32)]; mma(d1, a, bf[:, 2], bf[:, 3])
                for l in range(32):
                    s[l][2 * n16] = np.array(d0[l]); s[l][2 * n16 + 1] = np.array(d1[l])
        masked = kv_valid < BN or (causal and dg)
        q_row0 = q0 + warp * 16
        for h in range(2):
            mx = [m[l][h] for l in range(32)]
            for l in range(32):
                g, t = l // 4, l % 4
                qi = q_row0 + g + 8 * h
                for j in range(BN // 8):
                    for e in range(2):
                        col = j * 8 + 2 * t + e
                        x = np.float32(s[l][j][2 * h + e]) * scale_log2
                        if masked and (col >= kv_valid or (causal and dg and n0 + col > qi)):
                            x = -np.inf
                        s[l][j][2 * h + e] = x
                        mx[l] = max(mx[l], x)
            mx = [max(a, b) for a, b in zip(mx, shfl_xor(mx, 1))]
            mx = [max(a, b) for a, b in zip(mx, shfl_xor(mx, 2))]
            for l in range(32):
                base = 0.0 if mx[l] == -np.inf else mx[l]
                corr = 2.0 ** (m[l][h] - base)
                m[l][h] = mx[l]
                sm_ = 0.0
                for j in range(BN // 8):
                    for e in range(2):
                        pv = 2.0 ** (s[l][j][2 * h + e] - base)
                        s[l][j][2 * h + e] = pv
                        sm_ += pv
                lsum[l][h] = lsum[l][h] * corr + sm_
                for d in range(D // 8):
                    o[l][d][2 * h] *= corr; o[l][d][2 * h + 1] *= corr
        for kk in range(BN // 16):
            pa = [[pack(s[l][2 * kk][0], s[l][2 * kk][1]), pack(s[l][2 * kk][2], s[l][2 * kk][3]),
                   pack(s[l][2 * kk + 1][0], s[l][2 * kk + 1][1]), pack(s[l][2 * kk + 1][2], s[l][2 * kk + 1][3])] for l in range(32)]
            for d16 in range(D // 16):
                addrs = [sV.at(kk * 16 + (l & 7) + (((l >> 3) & 1) << 3), d16 * 2 + (l >> 4)) for l in range(32)]
                vf = ldmatrix_x4(sV, addrs, trans=True)
                d0 = [o[l][2 * d16] for l in range(32)]; mma(d0, pa, vf[:, 0], vf[:, 1])
                d1 = [o[l][2 * d16 + 1] for l in range(32)]; mma(d1, pa, vf[:, 2], vf[:, 3])
                for l in range(32):
                    o[l][2 * d16] = np.array(d0[l]); o[l][2 * d16 + 1] = np.array(d1[l])
    # epilogue: quad sum of l, normalise, stage through sQ with the kernel's offsets, read rows back
    out = np.zeros((16, D))
    lse = np.zeros(16)
    sO = Smem(D, BM)
    for h in range(2):
        sums = [lsum[l][h] for l in range(32)]
        sums = [a + b for a, b in zip(sums, shfl_xor(sums, 1))]
        sums = [a + b for a, b in zip(sums, shfl_xor(sums, 2))]
        for l in range(32):
            g, t = l // 4, l % 4
            inv = 1.0 / sums[l] if sums[l] > 0 else 0.0
            row = warp * 16 + g + 8 * h
            for d in range(D // 8):
                w = pack(o[l][d][2 * h] * inv, o[l][d][2 * h + 1] * inv)
                off = sO.at(row, d) + 4 * t
                sO.b[off:off + 4] = np.array([w], dtype=np.uint32).view(np.uint8)
            if t == 0:
                lse[g + 8 * h] = (m[l][h] + np.log2(sums[l])) * np.log(2) if sums[l] > 0 else -np.inf
    for r in range(16):
        for c in range(D // 8):
            out[r, c * 8:(c + 1) * 8] = f32(sO.row8(sO.at(warp * 16 + r, c)))
    return out, lse

def check(D, causal, warp, nblocks, last_valid, scale, q0=0):
    q = f32(bf16(rng.uniform(-1, 1, (BM, D)).astype(np.float32)))
    ks = [f32(bf16(rng.uniform(-1, 1, (BN, D)).astype(np.float32))) for _ in range(nblocks)]
    vs = [f32(bf16(rng.uniform(-1, 1, (BN, D)).astype(np.float32))) for _ in range(nblocks)]
    valids = [BN] * (nblocks - 1) + [last_valid]
    n0s = [i * BN for i in range(nblocks)]
    diag = [causal and n0 + BN > q0 for n0 in n0s]
    out, lse = run(D, warp, q, ks, vs, valids, scale, causal, q0, n0s, diag)
    K = np.concatenate([k[:v] for k, v in zip(ks, valids)]).astype(np.float64)
    V = np.concatenate([x[:v] for x, v in zip(vs, valids)]).astype(np.float64)
    Q = q[warp * 16:warp * 16 + 16].astype(np.float64)
    S = Q @ K.T * scale
    if causal:
        qi = q0 + warp * 16 + np.arange(16)[:, None]
        kj = np.arange(K.shape[0])[None, :]
        S = np.where(kj > qi, -np.inf, S)
    mx = S.max(axis=1, keepdims=True)
    P = np.exp(S - mx)
    L = P.sum(axis=1, keepdims=True)
    O = P @ V / L
    ref_lse = (mx + np.log(L))[:, 0]
    err = np.abs(out - O).max() / np.abs(O).max()
    lerr = np.abs(lse - ref_lse).max()
    print(f"D={D} causal={causal} warp={warp} blocks={nblocks} last_valid={last_valid} scale={scale:.3f} q0={q0}: max rel err {err:.2e}, lse err {lerr:.2e}")
    assert err < 2e-2 and lerr < 1e-4, "MISMATCH"

check(64, False, 0, 1, 64, 0.125)
check(128, False, 3, 2, 37, 0.0884)
check(64, True, 1, 2, 64, 0.5)     # rows 16..31 against keys 0..127, diagonal masks
check(64, True, 7, 2, 64, 2.0)     # rows 112..127: keys 0..127 all visible below, 112.. masked partly
check(128, True, 5, 2, 50, 0.3, q0=0)
print("all ok")
