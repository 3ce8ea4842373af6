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
//! Blocks of 2 MiB and more ([`SYSTEM_FROM`]) are left to the system allocator: advising
//! those nearly doubled the set-up of the largest fabrics (the kernel clears and compacts a
//! huge page at each fault) for a smaller gain in the run. Measured in docs/benchmarks.md
//! ("stop 62"). `_RJEM_MALLOC_CONF` overrides jemalloc's options at run time
//! (`_RJEM_MALLOC_CONF=thp:default` keeps jemalloc but drops the advice).

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks from this size up come from the system allocator, in pages of 4 KiB: the engine's
/// arenas (ports, NICs, QP slots, the event queue's rings), which set-up writes through once.
/// Advised for huge pages, they made the kernel clear and compact 2 MiB pages at every fault:
/// the k = 160 fabric's set-up took 27.0 s instead of 14.7 s (docs/benchmarks.md, stop 62).
/// Below it, jemalloc packs the many small objects a packet touches into huge pages.
pub const SYSTEM_FROM: usize = 2 << 20;

/// The program's allocator: jemalloc on huge pages for blocks under [`SYSTEM_FROM`], the
/// system's for larger ones. A block is freed and resized by whichever its size says; a
/// resize across the line moves it.
pub struct Allocator;

// SAFETY: each block is served and freed by one allocator, chosen by the size its layout
// carries (the same at `dealloc` as at the last `alloc` or `realloc`, as `GlobalAlloc`
// requires); a resize across the line copies into a block of the other and frees the old one.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= SYSTEM_FROM {
            System.alloc(layout)
        } else {
            JEMALLOC.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= SYSTEM_FROM {
            System.alloc_zeroed(layout)
        } else {
            JEMALLOC.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() >= SYSTEM_FROM {
            System.dealloc(ptr, layout)
        } else {
            JEMALLOC.dealloc(ptr, layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match (layout.size() >= SYSTEM_FROM, new_size >= SYSTEM_FROM) {
            (false, false) => JEMALLOC.realloc(ptr, layout, new_size),
            (true, true) => System.realloc(ptr, layout, new_size),
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

    use super::{Allocator, SYSTEM_FROM};

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
        let small = Layout::from_size_align(SYSTEM_FROM - 64, 64).unwrap();
        // SAFETY: layouts of non-zero size; each block freed with the layout it has.
        unsafe {
            let p = a.alloc(small);
            for i in 0..small.size() {
                *p.add(i) = (i % 251) as u8;
            }
            let big = a.realloc(p, small, 2 * SYSTEM_FROM); // jemalloc -> system
            assert_eq!(big as usize % 64, 0);
            assert!((0..small.size()).all(|i| *big.add(i) == (i % 251) as u8));
            let grown = Layout::from_size_align(2 * SYSTEM_FROM, 64).unwrap();
            let back = a.realloc(big, grown, 1000); // system -> jemalloc
            assert!((0..1000).all(|i| *back.add(i) == (i % 251) as u8));
            a.dealloc(back, Layout::from_size_align(1000, 64).unwrap());
        }
    }
}
