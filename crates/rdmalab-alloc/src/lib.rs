//! The allocator of the programs that run simulations: the Python extension (`rdmalab run`,
//! `rdmalab.run`) and the engine's examples (`scenario_run`, `hpcc_run`, ...). A program
//! takes it by naming this crate (`use rdmalab_alloc as _;`); the engine library itself
//! leaves the choice to its user, and its tests keep the system allocator.
//!
//! Why: a large run touches a few lines of many small objects per packet (a QP, its
//! congestion-control group, the group's member list, the QP's posted messages), spread over
//! hundreds of megabytes. With 4 KiB pages nearly every such touch also misses the TLB. The
//! allocator is jemalloc (`tikv-jemallocator`) with `thp:always`: every extent it maps is
//! advised for transparent huge pages (`MADV_HUGEPAGE`), so that small objects share 2 MiB
//! pages. Where the kernel's THP mode is `never`, the advice does nothing.
//!
//! Blocks of 2 MiB and more ([`LARGE_FROM`]) are, on Linux, mappings of their own (`large`),
//! so that a growing arena is remapped, not copied, whatever its alignment; elsewhere they
//! come from the system allocator. Those under [`ADVISE_BELOW`] are advised for huge pages
//! too, and mapped on a huge-page boundary in whole huge pages (the kernel backs a huge page
//! only where 2 MiB fit aligned inside a mapping): the arenas of a fabric of a few thousand
//! ports (its ports, its event queue's rings) are read at random on every hop, and with
//! 4 KiB pages each such read also walks the page tables. Larger blocks are left on 4 KiB
//! pages: they are the arenas of the largest fabrics, written through once at set-up, where
//! advising them made the kernel clear and compact a huge page at every fault (the k = 160
//! fabric's set-up: twice the system time). The engine
//! advises its packet pool itself, whatever its size (`fabric::pool`): the one arena that
//! grows while the run goes and whose slots every hop reads at random. `_RJEM_MALLOC_CONF`
//! overrides jemalloc's options at run time (`_RJEM_MALLOC_CONF=thp:default` keeps jemalloc
//! but drops the advice).

use std::alloc::{GlobalAlloc, Layout};

/// Blocks from this size up are mappings of their own: the engine's arenas (ports, NICs, QP
/// slots, the event queue's rings, the packet pool). Below it, jemalloc packs the many small
/// objects a packet touches into huge pages.
pub const LARGE_FROM: usize = 2 << 20;

/// Mapped blocks under this size are advised for huge pages (`MADV_HUGEPAGE`); larger ones
/// are not (why: the crate's notes).
pub const ADVISE_BELOW: usize = 64 << 20;

/// The program's allocator: jemalloc on huge pages for blocks under [`LARGE_FROM`], mappings
/// of their own for larger ones. A block is freed and resized by whichever its size says; a
/// resize across the line moves it.
pub struct Allocator;

// SAFETY: each block is served and freed by one allocator, chosen by the size its layout
// carries (the same at `dealloc` as at the last `alloc` or `realloc`, as `GlobalAlloc`
// requires); a resize across the line copies into a block of the other and frees the old one.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= LARGE_FROM {
            large::alloc(layout)
        } else {
            JEMALLOC.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= LARGE_FROM {
            large::alloc_zeroed(layout)
        } else {
            JEMALLOC.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() >= LARGE_FROM {
            large::dealloc(ptr, layout)
        } else {
            JEMALLOC.dealloc(ptr, layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match (layout.size() >= LARGE_FROM, new_size >= LARGE_FROM) {
            (false, false) => JEMALLOC.realloc(ptr, layout, new_size),
            (true, true) => large::realloc(ptr, layout, new_size),
            _ => {
                let new = Layout::from_size_align_unchecked(new_size, layout.align());
                let moved = self.alloc(new);
                if !moved.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                moved
            }
        }
    }
}

static JEMALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Blocks of [`LARGE_FROM`] and more. On Linux each is an anonymous mapping, aligned to a
/// page (so to any alignment up to one), and a resize is `mremap`: the kernel moves the
/// pages, not their bytes. The system allocator remaps only blocks of its own 16-byte
/// alignment; an arena of cache-line-aligned records (`rnic::Qp`) it grows by copying, which
/// at a million QPs also faults every page in again. A block aligned to more than a page, and
/// every block off Linux, goes to the system allocator.
mod large {
    use std::alloc::{GlobalAlloc, Layout, System};

    const PAGE: usize = 4096;

    /// A huge page on x86-64 and arm64 with 4 KiB pages.
    #[cfg(target_os = "linux")]
    const HUGE: usize = 2 << 20;

    /// Bytes mapped for a block of `size`: whole huge pages for an advised one, so that its
    /// last part is a huge page too (a 2.25 MiB arena of ports on a span of 2.25 MiB got
    /// none at all: no aligned 2 MiB fitted inside it), whole pages otherwise.
    #[cfg(target_os = "linux")]
    fn span(size: usize) -> usize {
        let unit = if advised(size) { HUGE } else { PAGE };
        size.div_ceil(unit) * unit
    }

    #[cfg(target_os = "linux")]
    fn advised(size: usize) -> bool {
        size < super::ADVISE_BELOW
    }

    /// Maps `len` bytes (a multiple of [`HUGE`]) at an address aligned to a huge page: the
    /// kernel backs a huge page only where one fits whole and aligned in the mapping.
    /// Over-maps by one huge page and unmaps the ends.
    #[cfg(target_os = "linux")]
    unsafe fn map_aligned(len: usize) -> *mut libc::c_void {
        let (prot, flags) = (libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS);
        let p = libc::mmap(std::ptr::null_mut(), len + HUGE, prot, flags, -1, 0);
        if p == libc::MAP_FAILED {
            return p;
        }
        let start = p as usize;
        let head = start.next_multiple_of(HUGE) - start;
        if head > 0 {
            libc::munmap(p, head);
        }
        let tail = HUGE - head;
        if tail > 0 {
            libc::munmap((start + head + len) as *mut libc::c_void, tail);
        }
        (start + head) as *mut libc::c_void
    }

    fn mapped(layout: Layout) -> bool {
        cfg!(target_os = "linux") && layout.align() <= PAGE
    }

    /// Advises a mapping of `size` bytes at `p` for huge pages if it is under
    /// [`super::ADVISE_BELOW`]. A hint: where the kernel's THP mode is `never`, or the call
    /// fails, the pages stay 4 KiB.
    #[cfg(target_os = "linux")]
    unsafe fn advise(p: *mut libc::c_void, size: usize) {
        if advised(size) {
            libc::madvise(p, span(size), libc::MADV_HUGEPAGE);
        }
    }

    pub unsafe fn alloc(layout: Layout) -> *mut u8 {
        if !mapped(layout) {
            return System.alloc(layout);
        }
        #[cfg(target_os = "linux")]
        {
            let size = layout.size();
            let p = if advised(size) {
                map_aligned(span(size))
            } else {
                let (prot, flags) = (libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS);
                libc::mmap(std::ptr::null_mut(), span(size), prot, flags, -1, 0)
            };
            if p == libc::MAP_FAILED {
                return std::ptr::null_mut();
            }
            advise(p, size);
            p.cast()
        }
        #[cfg(not(target_os = "linux"))]
        unreachable!("blocks are mapped only on Linux")
    }

    /// Fresh anonymous pages read as zero.
    pub unsafe fn alloc_zeroed(layout: Layout) -> *mut u8 {
        if !mapped(layout) {
            return System.alloc_zeroed(layout);
        }
        alloc(layout)
    }

    pub unsafe fn dealloc(ptr: *mut u8, layout: Layout) {
        if !mapped(layout) {
            return System.dealloc(ptr, layout);
        }
        #[cfg(target_os = "linux")]
        libc::munmap(ptr.cast(), span(layout.size()));
    }

    pub unsafe fn realloc(ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !mapped(layout) {
            return System.realloc(ptr, layout, new_size);
        }
        #[cfg(target_os = "linux")]
        {
            let (old, new) = (span(layout.size()), span(new_size));
            if old == new {
                return ptr;
            }
            let mut p = libc::mremap(ptr.cast(), old, new, libc::MREMAP_MAYMOVE);
            if p == libc::MAP_FAILED {
                return std::ptr::null_mut();
            }
            if advised(new_size) && !(p as usize).is_multiple_of(HUGE) {
                // Moved to a misaligned address: move it once more, onto an aligned range
                // reserved for it (the move replaces the reservation's pages).
                let to = map_aligned(new);
                if to != libc::MAP_FAILED {
                    let fixed = libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED;
                    p = libc::mremap(p, new, new, fixed, to);
                }
            }
            if p == libc::MAP_FAILED {
                return std::ptr::null_mut();
            }
            advise(p, new_size);
            p.cast()
        }
        #[cfg(not(target_os = "linux"))]
        unreachable!("blocks are mapped only on Linux")
    }
}

/// The allocator of every program that links this crate.
#[global_allocator]
static ALLOCATOR: Allocator = Allocator;

/// jemalloc's options, read once when it starts (the C string `malloc_conf` of its manual,
/// under the prefix `tikv-jemalloc-sys` gives its symbols). `thp:always` advises huge pages
/// on every extent; `metadata_thp:auto` lets jemalloc's own tables use them once they grow.
#[used]
#[export_name = "_rjem_malloc_conf"]
static MALLOC_CONF: Conf = Conf(c"thp:always,metadata_thp:auto".as_ptr());

/// A C string pointer that may sit in a static (it points at a constant).
#[repr(transparent)]
struct Conf(*const std::ffi::c_char);

// SAFETY: the pointer is to a `'static` C string literal, never written.
unsafe impl Sync for Conf {}

#[cfg(test)]
mod tests {
    use std::alloc::{GlobalAlloc, Layout};
    use std::ffi::{c_char, c_void, CStr};

    use super::{Allocator, LARGE_FROM};

    /// A string option of the running jemalloc (this test binary's allocator is the crate's).
    fn option(name: &CStr) -> String {
        let mut value: *const c_char = std::ptr::null();
        let mut len = std::mem::size_of::<*const c_char>();
        let out = (&mut value as *mut *const c_char).cast::<c_void>();
        // SAFETY: `opt.*` string options are read as a `const char *` of that size.
        let rc = unsafe { tikv_jemalloc_sys::mallctl(name.as_ptr(), out, &mut len, std::ptr::null_mut(), 0) };
        assert_eq!(rc, 0, "mallctl {name:?}");
        // SAFETY: jemalloc returns a static nul-terminated string.
        unsafe { CStr::from_ptr(value) }.to_str().unwrap().to_owned()
    }

    #[test]
    fn jemalloc_took_the_options_and_advises_huge_pages() {
        let _ = vec![0u8; 1 << 20]; // jemalloc is running
        assert_eq!(option(c"opt.thp"), "always");
        assert_eq!(option(c"opt.metadata_thp"), "auto");
    }

    #[test]
    fn a_block_keeps_its_bytes_across_the_line_both_ways() {
        let a = Allocator;
        let small = Layout::from_size_align(LARGE_FROM - 64, 64).unwrap();
        // SAFETY: layouts of non-zero size; each block freed with the layout it has.
        unsafe {
            let p = a.alloc(small);
            for i in 0..small.size() {
                *p.add(i) = (i % 251) as u8;
            }
            let big = a.realloc(p, small, 2 * LARGE_FROM); // jemalloc -> a mapping
            assert_eq!(big as usize % 64, 0);
            assert!((0..small.size()).all(|i| *big.add(i) == (i % 251) as u8));
            let grown = Layout::from_size_align(2 * LARGE_FROM, 64).unwrap();
            let back = a.realloc(big, grown, 1000); // a mapping -> jemalloc
            assert!((0..1000).all(|i| *back.add(i) == (i % 251) as u8));
            a.dealloc(back, Layout::from_size_align(1000, 64).unwrap());
        }
    }

    /// The kernel's record of the mapping holding `p` (`/proc/self/smaps`): its address
    /// range and its flags (`VmFlags`), where `hg` marks one advised for huge pages
    /// (`MADV_HUGEPAGE`).
    #[cfg(target_os = "linux")]
    fn mapping(p: *const u8) -> (std::ops::Range<usize>, String) {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let at = p as usize;
        let mut inside = None;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ').filter(|(r, _)| r.contains('-')) {
                let (lo, hi) = range.split_once('-').unwrap();
                if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) {
                    inside = (lo..hi).contains(&at).then_some(lo..hi);
                    continue;
                }
            }
            if let (Some(flags), Some(range)) = (line.strip_prefix("VmFlags:"), inside.clone()) {
                return (range, flags.trim().to_owned());
            }
        }
        panic!("no mapping holds {at:#x}");
    }

    #[cfg(target_os = "linux")]
    fn vm_flags(p: *const u8) -> String {
        mapping(p).1
    }

    /// The kernel backs a huge page only where 2 MiB fit whole and aligned in a mapping: an
    /// advised block starts on a huge page and spans whole ones, as made and after each
    /// resize (one that `mremap` moved to a misaligned address is moved again).
    #[cfg(target_os = "linux")]
    #[test]
    fn advised_blocks_start_and_end_on_huge_page_boundaries() {
        const HUGE: usize = 2 << 20;
        let a = Allocator;
        let aligned = |p: *const u8, size: usize| {
            let (range, _) = mapping(p);
            assert_eq!(p as usize % HUGE, 0, "a block of {size} bytes at {p:?}");
            assert_eq!(range.start, p as usize, "a block of {size} bytes: its mapping {range:x?}");
            assert!(range.end >= p as usize + size.next_multiple_of(HUGE), "{size} bytes: {range:x?}");
        };
        // The arena of 6,144 ports of 384 bytes: 2.25 MiB, where no aligned 2 MiB fitted.
        let ports = Layout::from_size_align(6144 * 384, 64).unwrap();
        // SAFETY: layouts of non-zero size; each block freed with the layout it has.
        unsafe {
            // Many in a row, so that some would land off a huge-page boundary by chance.
            let blocks: Vec<_> = (0..8).map(|_| a.alloc(ports)).collect();
            for &p in &blocks {
                aligned(p, ports.size());
                *p.add(ports.size() - 1) = 1;
            }
            let mut size = ports.size();
            let mut p = blocks[0];
            for grown in [3 * HUGE + 4096, 9 * HUGE, 33 * HUGE, 5 * HUGE] {
                let old = Layout::from_size_align(size, 64).unwrap();
                p = a.realloc(p, old, grown);
                assert_eq!(*p.add(ports.size() - 1), 1, "the bytes moved with the block");
                size = grown;
                if size < super::ADVISE_BELOW {
                    aligned(p, size);
                }
            }
            a.dealloc(p, Layout::from_size_align(size, 64).unwrap());
            for &q in &blocks[1..] {
                a.dealloc(q, ports);
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn mapped_blocks_under_the_line_are_advised_for_huge_pages_and_larger_ones_are_not() {
        use super::ADVISE_BELOW;
        let a = Allocator;
        let advised = |p: *const u8| vm_flags(p).split(' ').any(|f| f == "hg");
        let small = Layout::from_size_align(LARGE_FROM + 4096, 64).unwrap();
        let large = Layout::from_size_align(ADVISE_BELOW, 64).unwrap();
        // SAFETY: layouts of non-zero size; each block freed with the layout it has.
        unsafe {
            let p = a.alloc(small);
            assert!(advised(p), "a block of {} bytes: {}", small.size(), vm_flags(p));
            let q = a.alloc(large);
            assert!(!advised(q), "a block of {} bytes: {}", large.size(), vm_flags(q));
            a.dealloc(q, large);
            // Grown past the line, it keeps the advice it had (the kernel's flags move with it).
            let grown = a.realloc(p, small, 2 * LARGE_FROM);
            assert!(advised(grown), "{}", vm_flags(grown));
            a.dealloc(grown, Layout::from_size_align(2 * LARGE_FROM, 64).unwrap());
        }
    }

    #[test]
    fn a_large_aligned_block_grows_and_shrinks_with_its_bytes() {
        let a = Allocator;
        let first = Layout::from_size_align(LARGE_FROM + 100, 64).unwrap();
        // SAFETY: layouts of non-zero size; each block freed with the layout it has.
        unsafe {
            let p = a.alloc_zeroed(first);
            assert_eq!(p as usize % 64, 0);
            assert!((0..first.size()).all(|i| *p.add(i) == 0));
            for i in 0..first.size() {
                *p.add(i) = (i % 253) as u8;
            }
            // Far past the first mapping, then back down among the large blocks.
            let grown = a.realloc(p, first, 64 * LARGE_FROM);
            assert_eq!(grown as usize % 64, 0);
            assert!((0..first.size()).all(|i| *grown.add(i) == (i % 253) as u8));
            *grown.add(64 * LARGE_FROM - 1) = 7; // the new end is writable
            let big = Layout::from_size_align(64 * LARGE_FROM, 64).unwrap();
            let shrunk = a.realloc(grown, big, LARGE_FROM + 1);
            assert!((0..LARGE_FROM + 1).all(|i| *shrunk.add(i) == (i % 253) as u8));
            a.dealloc(shrunk, Layout::from_size_align(LARGE_FROM + 1, 64).unwrap());
            // Aligned to a page: a mapping's own alignment.
            let paged = Layout::from_size_align(3 * LARGE_FROM, 4096).unwrap();
            let q = a.alloc(paged);
            assert_eq!(q as usize % 4096, 0);
            a.dealloc(q, paged);
        }
    }
}
