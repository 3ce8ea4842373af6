//! NCCL's double binary tree (Sanders, Speck and Träff's two-tree scheme as NCCL 2.4 builds
//! it): two binary trees over the ranks, each carrying half of the bytes, such that a rank
//! that is a leaf of one is an inner node of the other. Allreduce reduces each chunk up a
//! tree (a rank sends a chunk to its parent once it has it from each child) and
//! broadcasts it down (the root once it has every child's chunk, any other rank once it
//! has the chunk from its parent).
//!
//! The first tree is the in-order binary tree over positions 0..n: position p > 0 with
//! lowest set bit b has its parent at p with bit b cleared and bit 2b set (or only
//! cleared, when that is past the end), and position 0 is the root. The second tree is the
//! first one mirrored (p → n−1−p) for an even n and shifted by one for an odd n.

use super::{share, Steps};

/// Parent of position `p` in the first tree (`None`: the root).
fn parent(n: usize, p: usize) -> Option<usize> {
    if p == 0 {
        return None;
    }
    let b = p & p.wrapping_neg();
    let up = (p ^ b) | (b << 1);
    Some(if up >= n { p ^ b } else { up })
}

/// The role (position in the first tree) that position `p` plays in tree `t`, and back.
fn role(n: usize, t: usize, p: usize, back: bool) -> usize {
    match (t, n % 2, back) {
        (0, _, _) => p,
        (_, 0, _) => n - 1 - p,           // mirrored
        (_, _, false) => (p + n - 1) % n, // shifted by one
        (_, _, true) => (p + 1) % n,
    }
}

/// Parent of every position in tree `t` (0 or 1).
pub(super) fn parents(n: usize, t: usize) -> Vec<Option<usize>> {
    (0..n).map(|p| parent(n, role(n, t, p, false)).map(|r| role(n, t, r, true))).collect()
}

/// Allreduce of `bytes` bytes over both trees, on lanes 2·`channel` and 2·`channel`+1.
pub(super) fn double_tree(s: &mut Steps, bytes: u64, chunk: u64, channel: u16) {
    let n = s.ranks.len();
    for t in 0..2 {
        let up_of = parents(n, t);
        let mut children = vec![Vec::new(); n];
        for (p, &u) in up_of.iter().enumerate() {
            if let Some(u) = u {
                children[u].push(p);
            }
        }
        let depth = |mut p: usize| {
            let mut d = 0;
            while let Some(u) = up_of[p] {
                p = u;
                d += 1;
            }
            d
        };
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&p| (std::cmp::Reverse(depth(p)), p)); // leaves first
        let root = (0..n).find(|&p| up_of[p].is_none()).expect("a tree has a root");
        let lane = 2 * channel + t as u16;
        let half = share(bytes, 2, t as u64);
        let chunks = half.div_ceil(chunk);
        let (mut up, mut down) = (vec![u32::MAX; n], vec![u32::MAX; n]);
        for j in 0..chunks {
            let b = share(half, chunks, j);
            for &p in &order {
                if let Some(u) = up_of[p] {
                    let deps: Vec<u32> = children[p].iter().map(|&c| up[c]).collect();
                    up[p] = s.push(p, u, b, lane, &deps);
                }
            }
            let at_root: Vec<u32> = children[root].iter().map(|&c| up[c]).collect();
            for &p in order.iter().rev() {
                let deps: Vec<u32> = if p == root { at_root.clone() } else { vec![down[p]] };
                for &c in &children[p] {
                    down[c] = s.push(p, c, b, lane, &deps);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parents;

    #[test]
    fn both_trees_span_every_rank_and_leaves_swap() {
        for n in 2..40 {
            let mut inner = [vec![false; n], vec![false; n]];
            for (t, inner_of_t) in inner.iter_mut().enumerate() {
                let up = parents(n, t);
                assert_eq!(up.iter().filter(|u| u.is_none()).count(), 1, "n={n} t={t}: one root");
                for p in 0..n {
                    // Every position reaches the root within log2(n)+1 hops.
                    let (mut q, mut hops) = (p, 0);
                    while let Some(u) = up[q] {
                        q = u;
                        hops += 1;
                        assert!(hops <= usize::BITS as usize, "n={n}: a cycle");
                    }
                    assert!(hops <= (n as f64).log2().ceil() as usize + 1, "n={n} t={t} p={p}: depth {hops}");
                    if let Some(u) = up[p] {
                        inner_of_t[u] = true;
                    }
                }
                let children = |u: usize| up.iter().filter(|&&x| x == Some(u)).count();
                assert!((0..n).all(|u| children(u) <= 2), "n={n} t={t}: a binary tree");
            }
            if n % 2 == 0 {
                // Mirrored: no rank is an inner node of both trees.
                assert!((0..n).all(|p| !(inner[0][p] && inner[1][p])), "n={n}");
            }
        }
    }
}
